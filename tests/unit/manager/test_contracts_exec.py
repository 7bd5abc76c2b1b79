"""The job manager's side of RFC 32, driven by an execution service double through the broker."""

from __future__ import annotations

import errno
import time
from pathlib import Path

import pytest

from pflux.errors import RPCError
from pflux.protocol.manager import IngestedJob, SubmitBatch
from pflux.spec.eventlog import Event
from support.exec_double import ConnectedHello, ExecDouble
from support.manager_live import DEBUG, JOBSPEC, live, run
from support.sched_double import r_json

R = r_json({0: "0"})
TWO_NODES = r_json({0: "0-1", 1: "0-1"})


def test_start_request_and_a_job_run_through(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path) as t:
            await t.exec.hello()
            jobid, start = await t.running(R)
            assert start == {
                "id": jobid,
                "userid": t.broker.owner,
                "jobspec": start["jobspec"],
                "reattach": False,
                "R": R,
            }
            assert start["jobspec"]["tasks"][0]["command"] == ["true"]
            t.exec.started(jobid)
            await t.event(jobid, "start")
            t.exec.finished(jobid, 256)
            assert await t.event(jobid, "finish") == {"status": 256}
            t.exec.released(jobid)
            assert await t.event(jobid, "release") == {"ranks": "all", "final": True}
            assert await t.sched.next_free() == {"id": jobid, "R": R, "final": True}
            await t.event(jobid, "clean")
            result = await t.call("job-manager.result", {"id": jobid})
            assert result["success"] is False

    run(body)


def test_a_guests_j_from_job_ingest_goes_with_its_start_request(tmp_path: Path) -> None:
    """The J job-ingest hands the job manager with a guest's job reaches the execution
    service in the start request, which then need not read it from the KVS."""

    async def body() -> None:
        async with live(tmp_path) as t:
            await t.exec.hello()
            jobid = 1 << 24
            userid = t.broker.owner + 1
            attrs = {"urgency": 16, "userid": userid, "flags": 0, "version": 1}
            job = IngestedJob(jobid, JOBSPEC, Event(time.time(), "submit", attrs), "SIGNED")
            await t.broker.call("job-manager.submit", SubmitBatch([job]))
            assert (await t.sched.next_alloc())["id"] == jobid
            t.sched.grant(jobid, R)
            start = await t.exec.next_start()
            assert (start["id"], start["userid"], start["J"]) == (jobid, userid, "SIGNED")

    run(body)


def test_a_job_waits_in_run_for_an_execution_service(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path) as t:
            jobid = await t.submit()
            await t.sched.next_alloc()
            t.sched.grant(jobid, R)
            await t.event(jobid, "alloc")
            assert t.exec.start_order.empty()
            await t.exec.hello()
            assert (await t.exec.next_start())["id"] == jobid

    run(body)


def test_partial_release_frees_ranks_as_they_go(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path) as t:
            await t.exec.hello()
            jobid, _ = await t.running(TWO_NODES)
            t.exec.started(jobid)
            t.exec.released(jobid, "1", final=False)
            assert await t.event(jobid, "release") == {"ranks": "1", "final": False}
            part = await t.sched.next_free()
            assert part == {"id": jobid, "R": _only(part["R"], {1: "0-1"}), "final": False}
            assert "free" not in t.names(jobid)
            t.exec.finished(jobid)
            t.exec.released(jobid, "0", final=True)
            assert await t.event(jobid, "release", 2) == {"ranks": "0", "final": True}
            rest = await t.sched.next_free()
            assert rest == {"id": jobid, "R": _only(rest["R"], {0: "0-1"}), "final": True}
            await t.event(jobid, "clean")

    run(body)


def _only(R: dict[str, object], ranks: dict[int, str]) -> dict[str, object]:  # noqa: N803
    """``R`` after checking that it holds ``ranks`` (rank -> cores) and nothing else."""
    execution = R["execution"]
    assert isinstance(execution, dict)
    held = {int(e["rank"]): e["children"]["core"] for e in execution["R_lite"]}
    assert held == ranks
    return R


def test_exceptions_from_exec_become_events_and_are_not_sent_back(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path) as t:
            await t.exec.hello()
            jobid, _ = await t.running(R)
            t.exec.started(jobid)
            t.exec.raised(jobid, "exec", "rank 0 is slow", severity=1)
            assert await t.event(jobid, "exception") == {
                "type": "exec",
                "severity": 1,
                "note": "rank 0 is slow",
            }
            t.exec.raised(jobid, "timeout", "out of time")
            fatal = await t.event(jobid, "exception", 2)
            assert fatal == {"type": "timeout", "severity": 0, "note": "out of time"}
            t.exec.finished(jobid, 9)
            t.exec.released(jobid)
            await t.event(jobid, "clean")
            assert t.exec.exceptions.empty()  # the service raised it: it knows

    run(body)


def test_a_fatal_exception_raised_elsewhere_is_sent_to_exec(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path) as t:
            await t.exec.hello()
            jobid, _ = await t.running(R)
            t.exec.started(jobid)
            await t.event(jobid, "start")
            raised = {"id": jobid, "type": "cancel", "severity": 0, "note": "enough"}
            await t.call("job-manager.raise", raised)
            assert await t.exec.next_exception() == raised
            t.exec.finished(jobid, 15)
            t.exec.released(jobid)
            await t.event(jobid, "clean")

    run(body)


def test_override_is_refused_while_a_start_is_outstanding(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path) as t:
            other = ExecDouble(t.broker, "other-exec")
            t.broker.register(other)
            await t.exec.hello()
            jobid, _ = await t.running(R)
            refused = await other.say_hello()
            assert (refused.errnum, refused.errstr) == (
                errno.EINVAL,
                "exec-hello: 1 job(s) have a start request outstanding to exec-double",
            )
            t.exec.started(jobid)
            t.exec.finished(jobid)
            t.exec.released(jobid)
            await t.event(jobid, "clean")
            await other.hello()  # idle: the override is taken
            replaced, t.exec = t.exec, other
            _, start = await t.running(R)  # sent to the new service
            assert start["reattach"] is False
            assert replaced.start_order.empty()

    run(body)


def test_an_error_response_tears_the_service_down_until_a_new_hello(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path) as t:
            await t.exec.hello()
            jobid, _ = await t.running(R, flags=DEBUG)
            t.exec.started(jobid)
            await t.event(jobid, "start")
            t.exec.fail(jobid, errno.EPROTO, "broken")
            lost = await t.event(jobid, "debug.start-lost")
            assert lost == {"note": "start response error: broken"}
            with_none = await t.submit()
            await t.sched.next_alloc()
            t.sched.grant(with_none, R)
            await t.event(with_none, "alloc")
            assert t.exec.start_order.empty()  # no service: nothing is started
            await t.exec.hello()
            starts = {}
            for _ in range(2):
                start = await t.exec.next_start()
                starts[start["id"]] = start["reattach"]
            assert starts == {jobid: True, with_none: False}  # started before: reattach

    run(body)


def test_a_service_going_away_is_replaced_and_its_old_responses_are_stale(
    tmp_path: Path,
) -> None:
    async def body() -> None:
        async with live(tmp_path) as t:
            await t.exec.hello()
            jobid, _ = await t.running(R, flags=DEBUG)
            t.exec.started(jobid)
            await t.event(jobid, "start")
            old = t.exec.starts[jobid]
            t.exec.go_away()  # the service inside the broker says hello again, in effect
            assert await t.event(jobid, "debug.start-lost") == {"note": "disconnect"}
            again = await t.exec.next_start()
            assert again["id"] == jobid
            assert again["reattach"] is True
            t.exec.respond(jobid, "finish", {"status": 99}, req=old)  # stale: ignored
            t.exec.started(jobid)  # as a service that took the job over may say
            t.exec.finished(jobid, 0)
            assert await t.event(jobid, "finish") == {"status": 0}
            t.exec.released(jobid)
            await t.event(jobid, "clean")
            assert t.names(jobid).count("finish") == 1
            assert t.names(jobid).count("start") == 1  # a reattached job is not started twice

    run(body)


def test_a_connected_service_hanging_up_hands_its_jobs_to_the_one_inside(
    tmp_path: Path,
) -> None:
    async def body() -> None:
        async with live(tmp_path) as t:
            await t.exec.hello()  # the service inside the broker
            outside = ExecDouble(t.broker, "outside-exec")  # its methods, served here
            t.broker.register(outside)
            hello = await ConnectedHello.say(await t.listen(), "outside-exec")
            inside, t.exec = t.exec, outside
            jobid, _ = await t.running(R, flags=DEBUG)
            outside.started(jobid)
            await t.event(jobid, "start")
            old = outside.starts[jobid]
            await hello.hang_up()
            assert await t.event(jobid, "debug.start-lost") == {"note": "disconnect"}
            again = await inside.next_start()
            assert (again["id"], again["reattach"]) == (jobid, True)
            outside.respond(jobid, "finish", {"status": 99}, req=old)  # stale: ignored
            inside.finished(jobid, 0)
            assert await t.event(jobid, "finish") == {"status": 0}
            inside.released(jobid)
            await t.event(jobid, "clean")
            assert t.names(jobid).count("finish") == 1
            assert outside.start_order.empty()

    run(body)


def test_kill_goes_to_exec_for_a_running_job_only(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path) as t:
            pending = await t.submit()
            await t.sched.next_alloc()
            with pytest.raises(RPCError) as caught:
                await t.call("job-manager.kill", {"id": pending, "signum": 15})
            assert caught.value.errnum == errno.EINVAL
            assert caught.value.errstr.endswith(" is not running")
            await t.exec.hello()
            jobid, _ = await t.running(R)
            t.exec.started(jobid)
            assert await t.call("job-manager.kill", {"id": jobid, "signum": 10}) == {}
            assert t.exec.kills == [{"id": jobid, "signum": 10}]

    run(body)


NAME_RULE = "expected a service name (non-empty, no '.')"


@pytest.mark.parametrize(
    ("service", "errnum", "rule"),
    [
        ("", errno.EINVAL, NAME_RULE),
        ("a.b", errno.EINVAL, NAME_RULE),
        (7, errno.EPROTO, "expected str, got int"),
    ],
)
def test_a_hello_without_a_service_name_is_refused(
    tmp_path: Path, service: object, errnum: int, rule: str
) -> None:
    async def body() -> None:
        async with live(tmp_path) as t:
            with pytest.raises(RPCError) as caught:
                await t.call("job-manager.exec-hello", {"service": service})
            assert (caught.value.errnum, caught.value.errstr) == (
                errnum,
                f"job-manager.exec-hello: service: {rule}",
            )

    run(body)
