"""The inactive jobs' snapshot: what is encoded is decoded to the same jobs, in the same
order, and a damaged one is refused with the reason (the restart then reads the
records)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import errno
import os
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, cast

import msgspec
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.support.ended import ended_jobs

from pflux.manager import snapshot
from pflux.manager.events import EventPoster
from pflux.manager.job import Ended, Job
from pflux.spec.eventlog import Event

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


class Broker:
    """What ``save`` and the event poster use of the broker: the end of a turn, the KVS's
    root version, and commits, the poster's answered by the test (``answer``)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.commits: list[list[list[object]]] = []  # save's
        self.in_flight: list[Callable[[Any], None]] = []  # the poster's, unanswered
        self.sent = asyncio.Event()

    def at_turn_end(self, fn: Callable[[], None]) -> None:
        self.loop.call_soon(fn)

    def send(self, topic: str, payload: Any, callback: Callable[[Any], None]) -> None:
        assert topic == "kvs.commit"
        self.in_flight.append(callback)
        self.sent.set()

    def answer(self, errnum: int = 0) -> None:
        self.in_flight.pop(0)(SimpleNamespace(errnum=errnum, errstr=os.strerror(errnum)))

    def fatal(self, reason: str) -> None:
        pass

    async def call(self, topic: str, payload: Any) -> Any:
        if topic == "kvs.getroot":
            return {"rootseq": 41}
        assert topic == "kvs.commit"
        self.commits.append(payload.ops)
        return {}


async def stopping(errnum: int | None) -> list[list[list[object]]]:
    """The commits ``save`` sends at a stop while an event is in flight, its commit then
    answered with ``errnum`` (None: never answered)."""
    broker = Broker(asyncio.get_running_loop())

    def acted_on(batch: Any) -> None:  # as the job manager's progress does
        for callback in batch.callbacks:
            callback()

    events = EventPoster(cast("Any", broker), lambda job, old: None, acted_on)
    events.record(Job(7), Event(1.0, "memo", {"n": 1}), 1)
    await broker.sent.wait()
    job = Ended(7, 5, 1.5, 9, True, True, 0, None, False)
    saving = asyncio.ensure_future(snapshot.save(cast("Any", broker), events, {7: job}, {7}))
    await asyncio.sleep(0)  # save runs up to its wait
    assert not saving.done()
    assert broker.commits == []  # nothing stored before the events are
    if errnum is not None:
        broker.answer(errnum)
    await asyncio.wait_for(saving, 5.0)  # at once, not at the settle timeout
    return broker.commits


def test_a_stop_stores_the_snapshot_once_its_events_are_durable() -> None:
    [ops] = asyncio.run(stopping(0))
    [[op, key, value]] = ops
    assert (op, key) == ("put", snapshot.KEY)
    back = snapshot.decode(str(value))
    assert (back.rootseq, list(back.ended), back.waitable) == (41, [7], {7})


@pytest.mark.parametrize("errnum", [errno.ENOSPC, errno.EIO])
def test_a_stop_whose_events_are_not_stored_stores_no_snapshot(errnum: int) -> None:
    assert asyncio.run(stopping(errnum)) == []  # a full disk (sent again later), a failure


def test_a_stop_waits_no_longer_than_the_settle_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshot, "SETTLE_TIMEOUT", 0.01)
    assert asyncio.run(stopping(None)) == []
