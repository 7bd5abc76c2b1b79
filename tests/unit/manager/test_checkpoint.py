"""The job manager's checkpoint read back: the queues' state, the largest job id and the
smallest job id a restart replays, from this version's shape and from older ones."""

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


def load(value: Any) -> tuple[list[Any], int, int]:
    return asyncio.run(checkpoint.load(cast(Broker, StoredValue(value))))


def test_what_is_stored_is_read_back() -> None:
    queues = [{"name": "debug", "enable": False, "start": True, "disable_reason": "x"}]
    ((_, key, value),) = checkpoint.ops(queues, 42, 40)
    assert key == checkpoint.KEY
    assert load(value) == (queues, 42, 40)


def test_without_a_mark_every_eventlog_is_replayed() -> None:
    ((_, _, value),) = checkpoint.ops([], 42, 0)
    assert "replay_from" not in orjson.loads(value)
    assert load(value) == ([], 42, 0)
    for bad in (-1, "3", 2.5, True):
        assert load({"version": 1, "queues": [], "max_jobid": 9, "replay_from": bad})[2] == 0


def test_the_mark_is_the_smallest_active_job_or_past_the_largest_issued() -> None:
    assert checkpoint.ReplayMark.of({9: None, 4: None, 7: None}, 12) == 4
    assert checkpoint.ReplayMark.of({}, 12) == 13


def test_the_mark_is_computed_once_for_many_jobs_ended() -> None:
    mark = checkpoint.ReplayMark()
    step = checkpoint.ReplayMark.STEP
    assert [mark.due(10) for _ in range(step)].count(True) == 1
    assert [mark.due(5 * step) for _ in range(5 * step)].count(True) == 1


def test_the_one_queue_stored_before_named_queues_is_the_anonymous_queue() -> None:
    old = {"version": 1, "queue": {"enable": False, "start": True, "disable_reason": "x"}}
    assert load({**old, "max_jobid": 7}) == ([old["queue"]], 7, 0)


@pytest.mark.parametrize(
    "value",
    ["{", [], {"version": 2, "queues": []}, {"version": 1}, {"version": 1, "queues": 3}],
)
def test_a_damaged_checkpoint_starts_the_queues_afresh(value: Any) -> None:
    queues, _, _ = load(value)
    assert queues == []


def test_the_largest_job_id_survives_a_queue_entry_it_cannot_read() -> None:
    assert load({"version": 1, "queues": "?", "max_jobid": 9}) == ([], 9, 0)
