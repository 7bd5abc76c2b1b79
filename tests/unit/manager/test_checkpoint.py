"""The job manager's checkpoint read back: the queues' state and the largest job id,
from this version's shape and from the one before named queues."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import orjson
import pytest

from pflux.broker.router import Broker
from pflux.manager import checkpoint
from pflux.protocol.kvs import GetReply
from support.wire import as_sent


class StoredValue:
    """Answers ``kvs.get`` with one stored value, as the KVS would."""

    def __init__(self, value: Any) -> None:
        self.value = value if isinstance(value, str) else orjson.dumps(value).decode()

    async def call(self, topic: str, payload: Any) -> GetReply:
        assert (topic, as_sent(payload)) == ("kvs.get", {"key": checkpoint.KEY})
        return GetReply(self.value)


def load(value: Any) -> tuple[list[Any], int]:
    return asyncio.run(checkpoint.load(cast(Broker, StoredValue(value))))


def test_what_is_stored_is_read_back() -> None:
    queues = [{"name": "debug", "enable": False, "start": True, "disable_reason": "x"}]
    ((_, key, value),) = checkpoint.ops(queues, 42)
    assert key == checkpoint.KEY
    assert load(value) == (queues, 42)


def test_the_one_queue_stored_before_named_queues_is_the_anonymous_queue() -> None:
    old = {"version": 1, "queue": {"enable": False, "start": True, "disable_reason": "x"}}
    assert load({**old, "max_jobid": 7}) == ([old["queue"]], 7)


@pytest.mark.parametrize(
    "value",
    ["{", [], {"version": 2, "queues": []}, {"version": 1}, {"version": 1, "queues": 3}],
)
def test_a_damaged_checkpoint_starts_the_queues_afresh(value: Any) -> None:
    queues, _ = load(value)
    assert queues == []


def test_the_largest_job_id_survives_a_queue_entry_it_cannot_read() -> None:
    assert load({"version": 1, "queues": "?", "max_jobid": 9}) == ([], 9)
