"""The job manager's side of RFC 27, driven by a scheduler double through the broker."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from pflux.errors import RPCError
from support.manager_live import live, run
from support.sched_double import r_json


def test_ready_counts_the_pending_jobs_and_alloc_carries_rfc27s_fields(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path, ready=False) as t:
            first = await t.submit(urgency=20)
            second = await t.submit()
            assert await t.sched.hello() == []
            assert await t.sched.ready() == 2
            allocs = {}
            for _ in range(2):
                alloc = await t.sched.next_alloc()
                allocs[alloc["id"]] = alloc
            assert allocs.keys() == {first, second}
            assert allocs[first]["priority"] == 20
            assert allocs[second]["priority"] == 16
            assert allocs[first]["userid"] == t.broker.owner
            assert allocs[first]["jobspec"]["tasks"][0]["command"] == ["true"]
            assert isinstance(allocs[first]["t_submit"], float)

    run(body)


def test_hello_names_the_jobs_holding_resources(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path) as t:
            held = await t.submit()
            await t.submit()  # pending: holds nothing
            await t.sched.next_alloc()
            await t.sched.next_alloc()
            R = r_json({0: "0-1"})  # noqa: N806
            t.sched.grant(held, R)
            await t.event(held, "alloc")
            [entry] = await t.sched.hello()  # a new scheduler
            assert entry["id"] == held
            assert entry["R"] == R
            assert entry["priority"] == 16
            assert entry["userid"] == t.broker.owner

    run(body)


@pytest.mark.parametrize(
    ("payload", "text"),
    [
        ({"mode": "limited", "limit": 0}, "job-manager.sched-ready: limit: expected int >= 1"),
        ({"mode": "limited"}, "job-manager.sched-ready: limit: required in limited mode"),
        ({"mode": "some"}, "job-manager.sched-ready: mode: invalid enum value 'some'"),
    ],
)
def test_a_bad_ready_is_refused(tmp_path: Path, payload: dict[str, object], text: str) -> None:
    """Values the type rules out: EINVAL (a wrong shape is EPROTO, test_sched_manager_end)."""

    async def body() -> None:
        async with live(tmp_path, ready=False) as t:
            with pytest.raises(RPCError) as caught:
                await t.call("job-manager.sched-ready", payload)
            assert (caught.value.errnum, caught.value.errstr) == (errno.EINVAL, text)

    run(body)


def test_limited_mode_keeps_at_most_limit_allocs_in_flight_best_first(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path, limit=1) as t:
            first = await t.submit()
            low = await t.submit(urgency=10)
            high = await t.submit(urgency=20)
            assert (await t.sched.next_alloc())["id"] == first
            query = await t.call("job-manager.alloc-query")
            assert query == {"queue_length": 2, "alloc_pending": 1, "running": 0}
            assert t.sched.alloc_order.empty()
            t.sched.deny(first, "no")  # an answer frees a place: the best waiting job has it
            assert (await t.sched.next_alloc())["id"] == high
            t.sched.grant(high, r_json({0: "0"}))
            assert (await t.sched.next_alloc())["id"] == low
            assert await t.call("job-manager.alloc-query") == {
                "queue_length": 0,
                "alloc_pending": 1,
                "running": 1,  # in RUN, waiting for an execution service
            }

    run(body)


def test_unlimited_mode_sends_every_alloc_at_once(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path) as t:
            jobs = {await t.submit() for _ in range(3)}
            assert {(await t.sched.next_alloc())["id"] for _ in range(3)} == jobs
            query = await t.call("job-manager.alloc-query")
            assert query == {"queue_length": 0, "alloc_pending": 3, "running": 0}

    run(body)


def test_annotations_are_journalled_and_ride_on_alloc(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path) as t:
            jobid = await t.submit()
            await t.sched.next_alloc()
            t.sched.annotate(jobid, {"sched": {"t_estimate": 100.0}})
            assert await t.annotated(jobid) == [{"sched": {"t_estimate": 100.0}}]
            assert "alloc" not in t.names(jobid)
            granted = {"sched": {"resource_summary": "rank0/core0"}}
            t.sched.grant(jobid, r_json({0: "0"}), annotations=granted)
            assert await t.event(jobid, "alloc") == {"annotations": granted}
            assert (await t.annotated(jobid, 2))[1] == granted

    run(body)


def test_deny_raises_an_alloc_exception_with_the_note(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path) as t:
            jobid = await t.submit()
            await t.sched.next_alloc()
            t.sched.deny(jobid, "unsatisfiable request")
            exception = await t.event(jobid, "exception")
            assert exception == {"type": "alloc", "severity": 0, "note": "unsatisfiable request"}
            await t.event(jobid, "clean")
            assert "alloc" not in t.names(jobid)

    run(body)


def test_a_canceled_job_gets_sched_cancel_and_a_late_grant_is_ignored(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path) as t:
            jobid = await t.submit()
            await t.sched.next_alloc()
            await t.call(
                "job-manager.raise", {"id": jobid, "type": "cancel", "severity": 0, "note": ""}
            )
            assert await t.sched.next_cancel() == jobid
            request = t.sched.allocs[jobid]
            t.sched.cancel_alloc(jobid)
            await t.event(jobid, "clean")
            # a stale success on the answered request: no alloc, nothing to free
            request.respond({"id": jobid, "type": 0, "R": r_json({0: "0"})})
            other = await t.submit()
            assert (await t.sched.next_alloc())["id"] == other
            await t.call("job-manager.journal-sync")
            assert "alloc" not in t.names(jobid)
            assert t.sched.frees.empty()
            query = await t.call("job-manager.alloc-query")
            assert query["alloc_pending"] == 1  # other's: the stale answer ended nothing

    run(body)


def test_an_alloc_error_waits_for_a_new_ready(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path) as t:
            failed = await t.submit()
            await t.sched.next_alloc()
            t.sched.allocs.pop(failed).error(errno.ENOSYS, "scheduler unloaded")
            later = await t.submit()
            await t.event(later, "priority")
            await t.call("job-manager.journal-sync")
            assert t.sched.alloc_order.empty()  # not ready: nothing is sent
            assert await t.sched.ready() == 2
            assert {(await t.sched.next_alloc())["id"] for _ in range(2)} == {failed, later}
            assert "exception" not in t.names(failed)

    run(body)


def test_an_alloc_refused_for_a_full_disk_is_asked_again(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path) as t:
            jobid = await t.submit()
            await t.sched.next_alloc()
            t.sched.allocs.pop(jobid).error(errno.ENOSPC, "not stored")
            assert (await t.sched.next_alloc())["id"] == jobid  # the scheduler is still ready
            t.sched.grant(jobid, r_json({0: "0"}))
            await t.event(jobid, "alloc")
            assert "exception" not in t.names(jobid)

    run(body)
