"""An inactive job's record: what is encoded is decoded to the same job, and a damaged
record is refused with the reason (the restart then replays the job's eventlog)."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, cast

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.support.ended import ended_jobs, jobids

from pflux.manager import inactive, restart
from pflux.manager.job import Ended
from pflux.protocol.kvs import WalkRequest
from pflux.spec.states import FLAG_DEBUG, FLAG_WAITABLE

if TYPE_CHECKING:
    from pflux.broker.router import Broker

FIELDS = ("id", "userid", "t_inactive", "nevents", "allocated", "started", "finish_status")
MORE = ("exception", "ended_by_exception")


@given(ended_jobs(), st.sampled_from([0, FLAG_WAITABLE, FLAG_DEBUG, FLAG_WAITABLE | FLAG_DEBUG]))
def test_a_record_reads_back_as_the_job_it_was_made_of(job: Ended, flags: int) -> None:
    op, key, value = inactive.put(job, flags)
    assert op == "put"
    assert inactive.jobid_of(key) == job.id
    back, waitable = inactive.decode(job.id, value)
    assert waitable == bool(flags & FLAG_WAITABLE)
    for name in FIELDS + MORE:
        assert getattr(back, name) == getattr(job, name), name
    assert (back.result, back.error_text()) == (job.result, job.error_text())


def test_the_record_lives_in_the_job_managers_data_directory() -> None:
    assert inactive.key(0x10000) == "job.0000.0000.0001.0000.data.job-manager.inactive"


GOOD = [1, 1000, 5.5, 0, 10, True, True, 0, None, None, False]


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({0: 2}, "not a version 1 record"),
        ({1: "1000"}, "userid, flags and nevents must be integers"),
        ({3: None}, "userid, flags and nevents must be integers"),
        ({2: "now"}, "t_inactive must be a number"),
        ({5: 1}, "allocated, started and ended_by_exception must be booleans"),
        ({7: 1.5}, "finish_status must be an integer or null"),
        ({8: "cancel"}, "the exception's type and note must both be strings, or null"),
    ],
)
def test_a_damaged_record_is_refused(change: dict[int, object], reason: str) -> None:
    value = list(GOOD)
    for i, v in change.items():
        value[i] = v
    with pytest.raises(inactive.RecordError, match=reason):
        inactive.decode(5, orjson.dumps(value).decode())


@pytest.mark.parametrize("text", ["", "[", "{}", "[1]", orjson.dumps([*GOOD, 1]).decode()])
def test_a_record_of_another_shape_is_refused(text: str) -> None:
    with pytest.raises(inactive.RecordError):
        inactive.decode(5, text)


@pytest.mark.parametrize(
    "key",
    [
        "job.0000.0000.0001.0000.data.job-manager.inactive.x",
        "job.0000.0000.0001.0000.guest.data.job-manager.inactive",
        "job.0000.0000.0001.000G.data.job-manager.inactive",
        "job.0000.0000.0001.00_0.data.job-manager.inactive",
        "job.0000.0000.0001.data.job-manager.inactive",
    ],
)
def test_only_a_record_key_is_taken_for_one(key: str) -> None:
    assert inactive.jobid_of(key) is None


@given(jobids)
def test_a_record_key_names_its_job(jobid: int) -> None:
    assert inactive.jobid_of(inactive.key(jobid)) == jobid


@given(
    st.lists(
        st.tuples(ended_jobs(), st.sampled_from([0, FLAG_WAITABLE])),
        max_size=8,
        unique_by=lambda pair: pair[0].id,
    )
)
def test_a_page_of_records_reads_as_each_record_does(jobs: list[tuple[Ended, int]]) -> None:
    entries = [[key, value] for _, key, value in (inactive.put(job, f) for job, f in jobs)]
    damaged = inactive.key(0)  # no job drawn has id 0
    entries += [[damaged, "[1, 2]"], ["job.0000.0000.0000.0008.eventlog", "x"]]
    ended: dict[int, Ended] = {}
    waitable: set[int] = set()
    bad: list[int] = []
    errors: list[str] = []
    inactive.read_page(entries, ended, waitable, bad, errors.append)
    expected = {job.id: inactive.decode(job.id, inactive.encode(job, f)) for job, f in jobs}
    assert ended.keys() == expected.keys()
    for jobid, job in ended.items():
        assert inactive.encode(job, 0) == inactive.encode(expected[jobid][0], 0)
    assert waitable == {jobid for jobid, (_, w) in expected.items() if w}
    assert bad == [0]
    (error,) = errors
    assert error.startswith(f"restart: {damaged}: not a version 1 record of 11 fields; replaying")


class Walks:
    """A broker whose KVS holds ``entries`` as records and no eventlog, noting whether the
    garbage collector was on as each walk was read."""

    def __init__(self, entries: list[list[str]]) -> None:
        self.entries = entries
        self.collecting: list[bool] = []

    async def stream(self, topic: str, request: WalkRequest) -> AsyncIterator[dict[str, Any]]:
        assert topic == "kvs.walk"
        self.collecting.append(gc.isenabled())
        if request.suffix == inactive.LEAF:
            yield {"entries": self.entries}


def test_a_restart_reads_the_records_with_no_collection() -> None:
    """A collection in the middle of a million records would look at every one read."""
    jobs = [Ended(i, userid=5, t_inactive=1.0, nevents=9, allocated=True, started=True,
                     finish_status=0, exception=None, ended_by_exception=False)
            for i in range(1, 4)]  # fmt: skip
    broker = Walks([inactive.put(job, 0)[1:] for job in jobs])
    found = asyncio.run(restart.load(cast("Broker", broker)))
    assert sorted(found.ended) == [1, 2, 3]
    assert broker.collecting == [False, False]
    assert gc.isenabled()
