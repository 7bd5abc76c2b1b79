"""The inactive jobs' snapshot: what is encoded is decoded to the same jobs, in the same
order, and a damaged one is refused with the reason (the restart then reads the
records)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
from typing import Any, cast

import msgspec
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.support.ended import ended_jobs

from pflux.manager import snapshot
from pflux.manager.job import Ended

FIELDS = Ended.__struct_fields__


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[Ended], set[int]]:
    ids = draw(st.lists(st.integers(min_value=1, max_value=(1 << 64) - 1), unique=True))
    jobs = [draw(ended_jobs(jobid)) for jobid in ids]
    waitable = draw(st.sets(st.sampled_from(ids))) if ids else set()
    return jobs, waitable


@given(tables(), st.integers(min_value=0, max_value=(1 << 63) - 1))
def test_a_snapshot_reads_back_as_the_jobs_it_was_made_of(
    table: tuple[list[Ended], set[int]], rootseq: int
) -> None:
    jobs, waitable = table
    back = snapshot.decode(snapshot.encode(rootseq, jobs, waitable))
    assert back.rootseq == rootseq
    assert back.waitable == waitable
    assert list(back.ended) == [job.id for job in jobs]  # the order the jobs were held in
    for job, read in zip(jobs, back.ended.values(), strict=True):
        assert type(read) is Ended
        for name in FIELDS:
            assert getattr(read, name) == getattr(job, name), name
        assert (read.result, read.error_text()) == (job.result, job.error_text())


def test_the_fields_stored_are_those_of_this_version() -> None:
    """A snapshot holds each job as the array of ``Ended``'s fields: another order, or
    other fields, is another ``VERSION``, or an older snapshot would be misread."""
    assert snapshot.VERSION == 1
    assert FIELDS == (
        "id",
        "userid",
        "t_inactive",
        "nevents",
        "allocated",
        "started",
        "finish_status",
        "exception",
        "ended_by_exception",
    )


def stored(**changes: object) -> str:
    job = Ended(7, 5, 1.5, 9, True, True, 0, None, False)
    value = orjson.loads(snapshot.encode(3, [job], {7}))
    value.update(changes)
    return orjson.dumps(value).decode()


def data(value: object) -> str:
    return base64.b64encode(msgspec.msgpack.encode(value)).decode()


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "not JSON"),
        ("[1]", "not a version 1 snapshot"),
        (stored(version=2), "not a version 1 snapshot"),
        (stored(rootseq="3"), "rootseq and count must be integers"),
        (stored(rootseq=-1), "rootseq and count must be integers"),
        (stored(count=None), "rootseq and count must be integers"),
        (stored(data=5), "data must be a string"),
        (stored(data="not base64!"), "data: "),
        (stored(data=data([[[7, 5, 1.5, 9, True, True, 0, None]], []])), "data: "),
        (stored(data=data([[[7, "5", 1.5, 9, True, True, 0, None, False]], []])), "data: "),
        (stored(data=data([[[7, 5, 1.5, 9, True, True, 0, ["x"], False]], []])), "data: "),
        (stored(count=2), "data: 1 distinct jobs, not the 2 counted"),
        (
            stored(count=2, data=data([[[7, 5, 1.5, 9, True, True, 0, None, False]] * 2, []])),
            "data: 1 distinct jobs, not the 2 counted",
        ),
        (
            stored(data=data([[[7, 5, 1.5, 9, True, True, 0, None, False]], [8]])),
            "data: a waitable job that is not among the jobs",
        ),
    ],
)
def test_a_damaged_snapshot_is_refused_with_the_reason(text: str, why: str) -> None:
    with pytest.raises(snapshot.SnapshotError, match=why):
        snapshot.decode(text)


@given(st.binary(max_size=200))
def test_any_data_decodes_or_is_refused(raw: bytes) -> None:
    text = stored(data=base64.b64encode(raw).decode())
    with contextlib.suppress(snapshot.SnapshotError):
        snapshot.decode(text)


class Events:
    """An EventPoster's state, as ``save`` reads it."""

    def __init__(self, pending: int, *, blocked: bool = False, failed: bool = False) -> None:
        self.left = pending  # looks until the batches in flight are durable
        self.blocked = blocked
        self.failed = failed

    @property
    def pending(self) -> bool:
        self.left -= 1
        return self.left >= 0


class Broker:
    """The KVS's answers to ``save``: its root's version, and the commits it is sent."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.commits: list[list[list[object]]] = []

    async def call(self, topic: str, payload: Any) -> Any:
        if topic == "kvs.getroot":
            return {"rootseq": 41}
        assert topic == "kvs.commit"
        self.commits.append(payload.ops)
        return {}


def saved(events: Events) -> list[list[list[object]]]:
    """The commits ``save`` sends with ``events`` (one job, waitable)."""

    async def run() -> list[list[list[object]]]:
        broker = Broker(asyncio.get_running_loop())
        job = Ended(7, 5, 1.5, 9, True, True, 0, None, False)
        await snapshot.save(cast("Any", broker), cast("Any", events), {7: job}, {7})
        return broker.commits

    return asyncio.run(run())


def test_a_stop_stores_the_snapshot_once_its_events_are_durable() -> None:
    [ops] = saved(Events(pending=3))
    [[op, key, value]] = ops
    assert (op, key) == ("put", snapshot.KEY)
    back = snapshot.decode(str(value))
    assert (back.rootseq, list(back.ended), back.waitable) == (41, [7], {7})


@pytest.mark.parametrize("state", [{"blocked": True}, {"failed": True}])
def test_a_stop_whose_events_are_not_stored_stores_no_snapshot(state: dict[str, bool]) -> None:
    events = Events(pending=1_000_000, **state)
    assert saved(events) == []
    assert events.left == 1_000_000 - 1  # at once, not after waiting for them in vain
