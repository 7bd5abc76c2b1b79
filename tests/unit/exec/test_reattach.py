"""Taking jobs over after job-exec's broker died: live shells, spools, deaths, and nothing left.

Each test runs a broker (``Live``) on a state directory of its own, lets its
job-exec go as a dying broker would (the launcher is told nothing: no QUIT),
and starts another on the same directory, which must take the jobs over. The
job eventlogs the job-manager would have written are put in the KVS by hand
(the stand-in job-manager's ``running`` replays them): a job-exec lets go of
what is left of a job that is not in RUN.
"""

from __future__ import annotations

import os
import select
import signal
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from pflux.exec.takeover import RESUME_KEY
from pflux.protocol.kvs import value_of
from pflux.spec.eventlog import parse
from pflux.spec.fluid import JobID
from pflux.spec.idset import IdSet
from pflux.spec.kvs_keys import job_key
from pflux.spec.resource import ResourceSet

STARTED = ("submit", "validate", "depend", "priority", "alloc", "start")


def put_eventlog(live: Any, jobid: int, names: tuple[str, ...] = STARTED, **extra: Any) -> None:
    """The job's eventlog, as the job-manager would have written it."""
    contexts = {
        "submit": {"urgency": 16, "userid": os.getuid(), "flags": 0},
        "priority": {"priority": 16},
        **extra,
    }
    lines = []
    for name in names:
        event: dict[str, Any] = {"timestamp": time.time(), "name": name}
        if name in contexts:
            event["context"] = contexts[name]
        lines.append(orjson.dumps(event).decode() + "\n")
    ops = [["put", job_key(jobid, "eventlog"), "".join(lines)]]
    live.call("kvs.commit", {"ops": ops})


def crash(live: Any) -> None:
    """Let job-exec go as a broker that dies would: its launcher is not told to quit."""
    assert live.exec.launcher is not None
    launcher = live.exec.launcher.detach()
    if launcher is not None:  # our child, as the broker's: reap it when it ends
        threading.Thread(target=launcher.wait, daemon=True).start()
    live.close()


def first_line(live: Any, jobid: int) -> str:
    """The first line the job's task wrote, once it is in the KVS."""
    live.wait_output(jobid, '"name":"data"')
    return stdout_of(live, jobid).splitlines()[0]


def gate(tmp: Path, name: str) -> Path:
    path = tmp / name
    os.mkfifo(path)
    return path


def release(path: Path) -> None:
    """Let a task past ``read x < path``."""
    with open(path, "w") as f:
        f.write("go\n")


def wait_gone(pid: int, timeout: float = 20.0) -> None:
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        assert select.select([fd], [], [], timeout)[0], f"{pid} lives on"
    finally:
        os.close(fd)


def stdout_of(live: Any, jobid: int) -> str:
    return "".join(
        e.context.get("data", "")
        for e in parse(live.guest(jobid, "output"))
        if e.name == "data" and e.context and e.context.get("stream") == "stdout"
    )


def exec_names(live: Any, jobid: int) -> list[str]:
    return [e.name for e in parse(live.guest(jobid, "exec.eventlog"))]


@pytest.fixture
def first(tmp_path: Path, live: Any) -> Any:
    (tmp_path / "state").mkdir()
    broker = type(live)(tmp_path / "state")
    yield broker
    if broker.exec.launcher is not None and broker.exec.launcher.running:
        broker.close()


def again(tmp_path: Path, live: Any) -> Any:
    return type(live)(tmp_path / "state")


def started_then_crashed(first: Any, script: str) -> tuple[Any, int]:
    """A job running ``script``, which has printed ``before``, when the broker dies;
    its stream and the launcher's pid."""
    stream = first.start(first.job(["sh", "-c", script]))
    assert stream.next() == ("start", {})
    first.wait_output(stream.id, "before")
    put_eventlog(first, stream.id)
    launcher = first.exec.launcher.pid
    crash(first)
    return stream, launcher


def test_a_running_job_is_taken_over_and_keeps_what_it_wrote_meanwhile(
    tmp_path: Path, live: Any, first: Any
) -> None:
    go, more = gate(tmp_path, "go"), gate(tmp_path, "more")  # one FIFO per read
    script = f"echo before; read x < {go}; echo while-down; read x < {more}; echo after; exit 3"
    stream, launcher = started_then_crashed(first, script)
    release(go)  # the task writes while no job-exec is there
    second = again(tmp_path, live)
    try:
        assert second.exec.launcher.pid == launcher  # taken over, not started anew
        taken = second.start(second.job(["sh", "-c", script]), jobid=stream.id, reattach=True)
        second.wait_output(stream.id, "while-down")
        release(more)
        assert taken.all() == [  # no second start: the job-manager had it
            ("finish", {"status": 3 << 8}),
            ("release", {"ranks": "all", "final": True}),
        ]
        assert stdout_of(second, stream.id) == "before\nwhile-down\nafter\n"
        assert exec_names(second, stream.id)[-3:] == ["reattach", "complete", "done"]
        assert not (tmp_path / "state" / "exec" / "spool" / str(stream.id)).exists()
    finally:
        second.close()


def test_a_job_that_ended_meanwhile_finishes_from_its_spool(
    tmp_path: Path, live: Any, first: Any
) -> None:
    go = gate(tmp_path, "go")
    script = f"echo $$; read x < {go}; seq 1 30000; exit 5"
    stream = first.start(first.job(["sh", "-c", script]))
    stream.next()
    task = int(first_line(first, stream.id))
    put_eventlog(first, stream.id)
    launcher = first.exec.launcher.pid
    crash(first)
    release(go)
    wait_gone(task)
    wait_gone(launcher)  # nothing left to run, nobody to take it over: it ends
    spool = tmp_path / "state" / "exec" / "spool" / str(stream.id)
    assert spool.exists()
    second = again(tmp_path, live)
    try:
        taken = second.start(second.job(["sh", "-c", script]), jobid=stream.id, reattach=True)
        assert [kind for kind, _ in taken.all()] == ["finish", "release"]
        assert taken.status() == 5 << 8
        lines = stdout_of(second, stream.id).splitlines()
        assert lines == [str(task), *map(str, range(1, 30001))]
        assert not spool.exists()
    finally:
        second.close()


def test_a_job_taken_over_outlives_the_launcher_it_was_taken_over_with(
    tmp_path: Path, live: Any, first: Any
) -> None:
    go = gate(tmp_path, "go")
    script = f"echo before; read x < {go}; echo after; exit 3"
    stream, launcher = started_then_crashed(first, script)
    rendezvous = tmp_path / "state" / "exec" / "sock"
    listening = rendezvous.stat().st_ctime_ns
    second = again(tmp_path, live)
    try:
        taken = second.start(second.job(["sh", "-c", script]), jobid=stream.id, reattach=True)
        os.kill(launcher, signal.SIGKILL)  # the shell rejoins the launcher second starts
        release(go)
        assert taken.all() == [
            ("finish", {"status": 3 << 8}),
            ("release", {"ranks": "all", "final": True}),
        ]
        assert stdout_of(second, stream.id) == "before\nafter\n"
        assert second.exec.launcher.pid != launcher
        # the listening socket the shell waited on, kept: not one bound anew meanwhile
        assert rendezvous.stat().st_ctime_ns == listening
    finally:
        second.close()


def test_a_shell_killed_meanwhile_fails_its_job_saying_so(
    tmp_path: Path, live: Any, first: Any
) -> None:
    stream = first.start(first.job(["sh", "-c", "echo $$ $PPID; exec sleep 100"]))
    stream.next()
    task, shell = map(int, first_line(first, stream.id).split())
    put_eventlog(first, stream.id)
    crash(first)
    os.kill(shell, signal.SIGKILL)
    wait_gone(task)  # the launcher kills what a dead shell leaves
    second = again(tmp_path, live)
    try:
        taken = second.start(second.job(["true"]), jobid=stream.id, reattach=True)
        got = taken.all()
        assert got[0] == (
            "exception",
            {
                "severity": 0,
                "type": "exec",
                "note": "job shell died while the instance was down (killed by signal 9)",
            },
        )
        assert got[1:] == [("finish", {"status": signal.SIGKILL}), got[-1]]
    finally:
        second.close()


def test_what_is_left_of_a_job_no_longer_running_is_let_go(
    tmp_path: Path, live: Any, first: Any
) -> None:
    stream = first.start(first.job(["sh", "-c", "echo $$ $PPID; exec sleep 100"]))
    stream.next()
    task, shell = map(int, first_line(first, stream.id).split())
    exception = {"type": "cancel", "severity": 0, "note": ""}
    put_eventlog(first, stream.id, (*STARTED, "exception"), exception=exception)
    crash(first)
    second = again(tmp_path, live)
    try:
        wait_gone(shell)
        wait_gone(task)
        assert stream.id not in second.exec.leftovers
        assert f"job-{stream.id}" not in second.namespaces()
    finally:
        second.close()


def test_a_job_in_run_but_not_started_is_taken_over_rather_than_started(
    tmp_path: Path, live: Any, first: Any
) -> None:
    go = gate(tmp_path, "go")
    stream = first.start(first.job(["sh", "-c", f"echo $$; read x < {go}"]))
    stream.next()
    task = int(first_line(first, stream.id))
    put_eventlog(first, stream.id, STARTED[:-1])  # the start event was lost with the broker
    crash(first)
    second = again(tmp_path, live)
    try:
        taken = second.start(second.job(["sh", "-c", "exit 9"]), jobid=stream.id)
        assert taken.next() == ("start", {})  # for the job-manager, which lacks it
        release(go)
        assert [kind for kind, _ in taken.all()] == ["finish", "release"]
        assert taken.status() == 0  # its own run, not a new one of "exit 9"
        assert stdout_of(second, stream.id) == f"{task}\n"
    finally:
        second.close()


def test_a_job_that_ran_to_its_end_unheard_is_not_started_again(
    tmp_path: Path, live: Any, first: Any
) -> None:
    """An earlier job-exec ran the job to its end and wrote its guest keys, and the
    job-manager's events of it were lost (a crash between the two commits): a start
    request without reattach, with nothing left of the shell, must not run it twice."""
    marker = tmp_path / "runs"
    script = f"echo ran >> {marker}; exit 3"
    stream = first.start(first.job(["sh", "-c", script]))
    assert [kind for kind, _ in stream.all()] == ["start", "finish", "release"]
    put_eventlog(first, stream.id, STARTED[:-1])  # none of the job-manager's events after alloc
    crash(first)
    second = again(tmp_path, live)
    try:
        again_stream = second.start(second.job(["sh", "-c", script]), jobid=stream.id)
        kinds = [kind for kind, _ in again_stream.all()]
        assert kinds[-2:] == ["finish", "release"]
        assert again_stream.status() == 3 << 8
        assert marker.read_text() == "ran\n"  # one run
    finally:
        second.close()


def test_with_nothing_left_a_reattach_ends_as_the_exec_eventlog_says(live: Any) -> None:
    jobid = 7777 << 24
    guest = f"{JobID(jobid).kvs}.guest"
    done = [
        {"timestamp": 1.0, "name": "init"},
        {"timestamp": 2.0, "name": "complete", "context": {"status": 512}},
        {"timestamp": 3.0, "name": "done"},
    ]
    text = "".join(orjson.dumps(e).decode() + "\n" for e in done)
    live.call("kvs.commit", {"ops": [["put", f"{guest}.exec.eventlog", text]]})
    stream = live.start(live.job(["true"]), jobid=jobid, reattach=True)
    assert stream.all() == [
        ("finish", {"status": 512}),
        ("release", {"ranks": "all", "final": True}),
    ]
    assert [e.name for e in parse(live.guest(jobid, "exec.eventlog"))] == [
        "init",
        "complete",
        "done",
    ]


def test_with_nothing_left_a_running_job_fails_never_starting_again(live: Any) -> None:
    stream = live.start(live.job(["true"]), reattach=True)
    assert stream.all() == [
        (
            "exception",
            {
                "severity": 0,
                "type": "exec",
                "note": "job shell and tasks not found when the instance restarted",
            },
        ),
        ("release", {"ranks": "all", "final": True}),
    ]


def test_a_test_mode_job_runs_out_its_time(live: Any) -> None:
    jobid = 7778 << 24
    put_eventlog(live, jobid)  # started just now
    stream = live.start(live.mock_job(run_duration="0.3s"), jobid=jobid, reattach=True)
    t0 = time.monotonic()
    assert stream.all() == [("finish", {"status": 0}), ("release", {"ranks": "all", "final": True})]
    assert time.monotonic() - t0 > 0.2
    finished = live.start(live.mock_job(run_duration="1h", reattach_finish=1), reattach=True)
    assert finished.kinds() == ["finish", "release"]


def test_the_resume_state_follows_a_running_jobs_output(live: Any) -> None:
    stream = live.start(live.job(["sh", "-c", "echo one; echo two >&2; exec sleep 100"]))
    stream.next()
    live.wait_output(stream.id, "two")
    state = orjson.loads(value_of(live.call("kvs.get", {"key": job_key(stream.id, RESUME_KEY)})))
    assert state["written"] == [4, 4]
    assert state["kept"] == [4, 4]
    assert state["eof"] == []
    assert state["offset"] > 0
    live.call("job-exec.kill", {"id": stream.id, "signum": 9})
    stream.all()


def test_a_job_taken_over_keeps_its_time_limit(live: Any) -> None:
    now = time.time()
    jobid = 7779 << 24
    put_eventlog(live, jobid)
    R = live.make_R(starttime=now - 100, expiration=now + 0.3)  # noqa: N806
    stream = live.start(live.mock_job(run_duration="1h"), R, jobid=jobid, reattach=True)
    assert stream.all() == [
        ("exception", {"severity": 0, "type": "timelimit", "note": "resource allocation expired"}),
        ("finish", {"status": 14}),  # SIGALRM ends a test-mode job at once
        ("release", {"ranks": "all", "final": True}),
    ]


def test_a_job_of_two_shells_is_taken_over_shell_by_shell(
    tmp_path: Path, live: Any, first: Any
) -> None:
    """Rank 0's shell still runs when the new job-exec comes, rank 1's ended into its spool:
    one is resumed, the other replayed (and its rank released), each from its own offset."""
    for rank in (0, 1):
        gate(tmp_path, f"go{rank}")
    script = f"echo before-$FLUX_TASK_RANK; read x < {tmp_path}/go$FLUX_TASK_RANK; echo after"
    jobspec = first.job(["sh", "-c", script], num_tasks=2, num_nodes=2)
    one = IdSet.decode("0")
    R = ResourceSet.build({0: (one, IdSet()), 1: (one, IdSet())}, ["n0", "n1"]).to_json()  # noqa: N806
    stream = first.start(jobspec, R)
    assert stream.next() == ("start", {})
    first.wait_output(stream.id, "before-0")
    first.wait_output(stream.id, "before-1")
    put_eventlog(first, stream.id)
    crash(first)
    spool = tmp_path / "state" / "exec" / "spool"
    release(tmp_path / "go1")  # rank 1's task ends, and its shell, into its spool
    second = again(tmp_path, live)
    try:
        taken = second.start(jobspec, R, jobid=stream.id, reattach=True)
        assert taken.next() == ("release", {"ranks": "1", "final": False})
        release(tmp_path / "go0")
        assert taken.all() == [
            ("finish", {"status": 0}),
            ("release", {"ranks": "all", "final": True}),
        ]
        text = stdout_of(second, stream.id)
        assert sorted(text.splitlines()) == ["after", "after", "before-0", "before-1"]
        assert exec_names(second, stream.id)[-3:] == ["reattach", "complete", "done"]
        assert list(spool.iterdir()) == []
    finally:
        second.close()
