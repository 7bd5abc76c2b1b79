"""Durability: kill -9 the instance with jobs pending and running, restart it, lose nothing.

Every id a submit acknowledged must come back, reach INACTIVE exactly once,
and never run twice; pending jobs run after the restart, and the jobs that
were running go on: their shells outlive the broker, and the restarted
instance takes them over, so they finish with their real exit status and all
their output, what the tasks wrote while the instance was down included. A
job whose shell died while the instance was down ends with an exception that
says so. The tests sequence themselves with FIFOs, never with sleeps: a task
blocks reading its FIFO until the test writes to it.
"""

from __future__ import annotations

import errno
import os
import select
import signal
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pflux.api import Client, jobspec_of
from pflux.spec.eventlog import parse
from pflux.spec.fluid import JobID
from support.instance import LiveInstance, console, jobspec, wait_exit

PENDING = 500
REATTACHED = 20


def gated(tmp: Path, body: str) -> dict[str, object]:
    """A real job running the shell script ``body``; ``$GATE`` names its FIFOs in ``tmp``."""
    script = f"GATE={tmp}/gate-$FLUX_JOB_ID; echo $$ $PPID >> {tmp}/pid-$FLUX_JOB_ID\n{body}"
    return jobspec_of(["sh", "-c", script], environment={"PATH": os.environ["PATH"]})


def submit_gated(
    client: Client, tmp: Path, specs: list[dict[str, object]], *names: str
) -> list[JobID]:
    """Submit ``specs`` held, make each job's gates (FIFOs named after its id), then let
    them run: a job that started first would find no gate and run past it."""
    jobids = client.submit_many(specs, urgency="hold")
    for jobid in jobids:
        for name in names:
            os.mkfifo(tmp / f"gate-{jobid}{name}")
    for jobid in jobids:
        client.urgency(jobid, "default")
    return jobids


def open_gate(tmp: Path, jobid: int, name: str = "") -> None:
    """Let the job's task past ``read < $GATE{name}`` (the open waits for the reader)."""
    with open(tmp / f"gate-{jobid}{name}", "w") as gate:
        gate.write("go\n")


def open_gate_of(tmp: Path, jobid: int, task: int) -> None:
    """``open_gate`` for a task that may have been killed: fails rather than wait for it."""
    while True:
        try:
            fd = os.open(tmp / f"gate-{jobid}", os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:  # ENXIO: the task has not opened it (yet, or ever)
            if exc.errno != errno.ENXIO:
                raise
            assert alive(task), f"job {jobid}'s task {task} was killed"
            time.sleep(0.01)  # a FIFO's reader arriving gives no event to wait on
            continue
        with open(fd, "w") as gate:
            gate.write("go\n")
        return


def wait_line(path: Path, count: int, timeout: float = 60.0) -> list[str]:
    """The first ``count`` lines written to the FIFO ``path`` (select, not polling)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    keep = os.open(path, os.O_WRONLY)  # so the end of one writer is not the end of the file
    try:
        data = b""
        while data.count(b"\n") < count:
            ready, _, _ = select.select([fd], [], [], timeout)
            assert ready, f"{path}: {data!r} after {timeout} s, wanted {count} lines"
            data += os.read(fd, 65536)
        return data.decode().splitlines()[:count]
    finally:
        os.close(keep)
        os.close(fd)


def pids(tmp: Path, jobid: int) -> list[tuple[int, int]]:
    """(task, its shell) each time the job's task started: once, if it never ran twice."""
    lines = (tmp / f"pid-{jobid}").read_text().splitlines()
    return [(int(a), int(b)) for a, b in (line.split() for line in lines)]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def output_of(client: Client, jobid: int) -> str:
    """The job's stdout as the output eventlog holds it."""
    return "".join(
        (event.context or {}).get("data", "")
        for event in client.events(jobid, path="guest.output")
        if event.name == "data" and (event.context or {}).get("stream") == "stdout"
    )


def test_kill_9_loses_no_job(tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = LiveInstance(state, cores=2)
    with Client(first.uri) as client:
        specs = [gated(tmp_path, "read x < $GATE; echo done")] * 2
        running = submit_gated(client, tmp_path, specs, "")
        for jobid in running:
            client.wait_event(jobid, "start")
        pending = client.submit_many([jobspec("0.001s")] * PENDING)
    first.kill()

    second = LiveInstance(state, cores=2)
    try:
        with Client(second.uri) as client:
            for jobid in running:
                open_gate(tmp_path, jobid)
            client.drain()
            for jobid in [*running, *pending]:
                log = client.handle.call(
                    "job-info.lookup", {"id": int(jobid), "keys": ["eventlog"]}
                )
                names = [e.name for e in parse(log["eventlog"])]
                assert names.count("clean") == 1, (jobid, names)
                assert names.count("flux-restart") <= 1, (jobid, names)
                assert names.count("start") <= 1, (jobid, names)
            for jobid in [*pending, *running]:
                result = client.wait(jobid)
                assert result.success, (jobid, result.errstr)
            for jobid in running:  # taken over, not run again
                assert len(pids(tmp_path, jobid)) == 1
                assert output_of(client, jobid) == "done\n"
            listed = {job.id for job in client.list_jobs(attrs=["state"])}
            assert {int(j) for j in [*running, *pending]} <= listed
    finally:
        second.stop()


# Each job writes a line before the crash, some while the instance is down, the rest after
# the restart, and exits with its own status. Jobs 0-9 end while the instance is down;
# 10-19 after the restart. Each says on the FIFO "phase" when it is past its second gate.
REATTACH_BODY = textwrap.dedent(
    """\
    n=$1
    seq -f "$n before %g" 1 200
    echo $n > {tmp}/ready
    read x < $GATE.1
    seq -f "$n down %g" 1 5000
    echo $n > {tmp}/phase
    [ $n -lt 10 ] || {{ read x < $GATE.2; seq -f "$n after %g" 1 200; }}
    exit $(( n % 4 ))
    """
)


def expected_output(n: int) -> str:
    lines = [f"{n} before {i}" for i in range(1, 201)]
    lines += [f"{n} down {i}" for i in range(1, 5001)]
    if n >= 10:
        lines += [f"{n} after {i}" for i in range(1, 201)]
    return "".join(f"{line}\n" for line in lines)


def test_jobs_running_when_the_broker_dies_finish_with_all_their_output(tmp_path: Path) -> None:
    state = tmp_path / "state"
    os.mkfifo(tmp_path / "ready")
    os.mkfifo(tmp_path / "phase")
    first = LiveInstance(state, cores=REATTACHED)
    with Client(first.uri) as client:
        body = REATTACH_BODY.format(tmp=tmp_path)
        specs = []
        for n in range(REATTACHED):
            spec = gated(tmp_path, body)
            spec["tasks"][0]["command"] += ["job", str(n)]  # sh -c SCRIPT job N: $1 is N
            specs.append(spec)
        jobs = submit_gated(client, tmp_path, specs, ".1", ".2")
        assert sorted(wait_line(tmp_path / "ready", REATTACHED), key=int) == [
            str(n) for n in range(REATTACHED)
        ]
    first.kill()
    # the instance is down: every job writes on; the first ten end
    for jobid in jobs:
        open_gate(tmp_path, jobid, ".1")
    assert len(wait_line(tmp_path / "phase", REATTACHED)) == REATTACHED
    wait_exit([pids(tmp_path, jobid)[0][0] for jobid in jobs[:10]])
    second = LiveInstance(state, cores=REATTACHED)
    try:
        with Client(second.uri) as client:
            for jobid in jobs[10:]:
                open_gate(tmp_path, jobid, ".2")
            results = client.wait_all(jobs)
            for n, jobid in enumerate(jobs):
                log = [e.name for e in client.events(jobid, follow=False)]
                assert log.count("start") == 1, log
                finish = next(e for e in client.events(jobid) if e.name == "finish")
                assert (finish.context or {})["status"] == (n % 4) << 8, n
                assert results[jobid].success == (n % 4 == 0), (n, results[jobid].errstr)
                assert "exception" not in log, (n, log)
                assert output_of(client, jobid) == expected_output(n), n
                assert len(pids(tmp_path, jobid)) == 1  # never ran twice
                execlog = [e.name for e in client.events(jobid, path="guest.exec.eventlog")]
                assert "reattach" in execlog
    finally:
        second.stop()


def test_a_shell_that_dies_while_the_instance_is_down_fails_its_job(tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = LiveInstance(state, cores=2)
    with Client(first.uri) as client:
        specs = [gated(tmp_path, "echo up; read x < $GATE")] * 2
        doomed, spared = submit_gated(client, tmp_path, specs, "")
        for jobid in (doomed, spared):
            client.wait_event(jobid, "start")
        [(task, shell)] = pids(tmp_path, doomed)
    first.kill()
    os.kill(shell, signal.SIGKILL)  # its launcher kills the task it leaves
    wait_exit([task])
    second = LiveInstance(state, cores=2)
    try:
        with Client(second.uri) as client:
            open_gate(tmp_path, spared)
            result = client.wait(doomed)
            assert not result.success
            assert "died while the instance was down" in result.errstr, result.errstr
            assert "killed by signal 9" in result.errstr
            assert client.wait(spared).success
            assert not alive(task)
    finally:
        second.stop()


def launcher_of(instance: LiveInstance, other_than: int | None = None) -> int:
    """The pid of the instance's job shell launcher (not ``other_than``): the broker's child
    running ``pflux.shell.launcher``. After a launcher dies, no event says when the next
    has started: this looks until it has."""
    deadline = time.monotonic() + 30
    while True:
        children = Path(f"/proc/{instance.proc.pid}/task/{instance.proc.pid}/children")
        for pid in map(int, children.read_text().split()):
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except FileNotFoundError:
                continue
            if b"pflux.shell.launcher" in cmdline and pid != other_than:
                return pid
        assert time.monotonic() < deadline, "no job shell launcher"
        time.sleep(0.01)


def two_running(client: Client, tmp_path: Path, then: str) -> tuple[JobID, JobID]:
    """Two gated jobs that print ``before``, wait at their gate, run ``then`` and exit 3
    and 5: their ids, once each has printed ``before``."""
    body = f'echo before; read x < $GATE; {then}; exit "$1"'
    specs = [gated(tmp_path, body) for _ in range(2)]
    for spec, code in zip(specs, ("3", "5"), strict=True):
        spec["tasks"][0]["command"] += ["job", code]  # sh -c SCRIPT job N: $1 is N
    on, ended = submit_gated(client, tmp_path, specs, "")
    for jobid in (on, ended):
        client.wait_event(jobid, "data", match={"data": "before\n"}, path="guest.output")
    return on, ended


def test_jobs_outlive_their_launcher_with_all_their_output(tmp_path: Path) -> None:
    state = tmp_path / "state"
    instance = LiveInstance(state, cores=3)
    try:
        with Client(instance.uri) as client:
            on, ended = two_running(client, tmp_path, "echo after")
            [(_, shell)] = pids(tmp_path, ended)
            first = launcher_of(instance)
            # the job ends while no launcher serves it: its shell rejoins the next only once
            # that is stopped, and leaves its end in its spool
            os.kill(shell, signal.SIGSTOP)
            os.kill(first, signal.SIGKILL)
            second = launcher_of(instance, other_than=first)
            os.kill(second, signal.SIGSTOP)
            try:
                os.kill(shell, signal.SIGCONT)
                open_gate(tmp_path, ended)
                wait_exit([shell])
            finally:
                os.kill(second, signal.SIGCONT)
            open_gate(tmp_path, on)
            results = client.wait_all([on, ended])
            for jobid, code in ((on, 3), (ended, 5)):
                finish = next(e for e in client.events(jobid) if e.name == "finish")
                assert (finish.context or {})["status"] == code << 8
                assert "exception" not in [e.name for e in client.events(jobid, follow=False)]
                assert output_of(client, jobid) == "before\nafter\n"
                assert len(pids(tmp_path, jobid)) == 1  # never ran twice
                assert not results[jobid].success
            [after] = client.submit_many([gated(tmp_path, "echo again")])
            assert client.wait(after).success
            assert output_of(client, after) == "again\n"
            assert launcher_of(instance) == second
    finally:
        instance.stop()
    assert not list((state / "exec" / "spool").iterdir())


def kill_with_launcher(instance: LiveInstance, order: str) -> None:
    """SIGKILL the broker and its launcher: together (the broker stopped first, so it
    cannot start another launcher in between), or the launcher first, then the broker
    once the launcher is gone (whatever the broker did meanwhile)."""
    launcher = launcher_of(instance)
    if order == "together":
        instance.proc.send_signal(signal.SIGSTOP)
        os.kill(launcher, signal.SIGKILL)
    else:
        os.kill(launcher, signal.SIGKILL)
        wait_exit([launcher])
    instance.kill()


@pytest.mark.parametrize("order", ["together", "launcher first"])
def test_jobs_outlive_their_broker_and_launcher_killed_together(tmp_path: Path, order: str) -> None:
    state = tmp_path / "state"
    first = LiveInstance(state, cores=3)
    with Client(first.uri) as client:
        on, ended = two_running(client, tmp_path, 'seq -f "after %g" 1 2000')
    kill_with_launcher(first, order)
    # no instance: one job ends, its end spooled; the other's task runs on
    [(task, shell)] = pids(tmp_path, ended)
    open_gate_of(tmp_path, ended, task)
    wait_exit([task, shell])
    [(running, _)] = pids(tmp_path, on)
    assert alive(running)
    second = LiveInstance(state, cores=3)
    try:
        with Client(second.uri) as client:
            open_gate(tmp_path, on)
            results = client.wait_all([on, ended])
            expected = "before\n" + "".join(f"after {i}\n" for i in range(1, 2001))
            for jobid, code in ((on, 3), (ended, 5)):
                log = [e.name for e in client.events(jobid, follow=False)]
                assert "exception" not in log, (jobid, log, results[jobid].errstr)
                assert log.count("start") == 1, log
                finish = next(e for e in client.events(jobid) if e.name == "finish")
                assert (finish.context or {})["status"] == code << 8
                assert output_of(client, jobid) == expected
                assert len(pids(tmp_path, jobid)) == 1  # never ran twice
                execlog = [e.name for e in client.events(jobid, path="guest.exec.eventlog")]
                assert execlog.count("reattach") == 1, execlog
            [after] = client.submit_many([gated(tmp_path, "echo again")])
            assert client.wait(after).success
            assert output_of(client, after) == "again\n"
    finally:
        second.stop()
    assert not list((state / "exec" / "spool").iterdir())


def test_a_shell_or_task_killed_while_no_instance_runs_ends_its_job(tmp_path: Path) -> None:
    """Broker and launcher dead: one job's shell is killed (its task left behind), another's
    task is; the restart kills the task left and fails the first job, finishes the second
    with the task's status, each with the output it had."""
    state = tmp_path / "state"
    first = LiveInstance(state, cores=2)
    with Client(first.uri) as client:
        specs = [gated(tmp_path, "echo up; read x < $GATE")] * 2
        shot, signalled = submit_gated(client, tmp_path, specs, "")
        for jobid in (shot, signalled):
            client.wait_event(jobid, "data", match={"data": "up\n"}, path="guest.output")
    kill_with_launcher(first, "together")
    [(left, shell)] = pids(tmp_path, shot)
    [(task, _)] = pids(tmp_path, signalled)
    os.kill(shell, signal.SIGKILL)
    os.kill(task, signal.SIGTERM)
    wait_exit([shell, task])
    assert alive(left)
    second = LiveInstance(state, cores=2)
    try:
        with Client(second.uri) as client:
            results = client.wait_all([shot, signalled])
            assert not results[shot].success
            assert "not found when the instance restarted" in results[shot].errstr
            wait_exit([left])
            finish = next(e for e in client.events(signalled) if e.name == "finish")
            assert (finish.context or {})["status"] == (128 + signal.SIGTERM) << 8
            assert "exception" not in [e.name for e in client.events(signalled, follow=False)]
            for jobid in (shot, signalled):
                assert output_of(client, jobid) == "up\n"
                assert len(pids(tmp_path, jobid)) == 1
    finally:
        second.stop()


def test_shells_that_no_instance_takes_over_end_their_tasks(tmp_path: Path) -> None:
    state = tmp_path / "state"
    config = tmp_path / "config.toml"
    config.write_text('[exec]\nrejoin-timeout = "1s"\n')
    first = LiveInstance(state, "--config", str(config), cores=2)
    with Client(first.uri) as client:
        [jobid] = submit_gated(client, tmp_path, [gated(tmp_path, "echo up; read x < $GATE")], "")
        client.wait_event(jobid, "data", match={"data": "up\n"}, path="guest.output")
    kill_with_launcher(first, "together")
    [(task, shell)] = pids(tmp_path, jobid)
    wait_exit([task, shell])  # a second after nobody came
    second = LiveInstance(state, "--config", str(config), cores=2)
    try:
        with Client(second.uri) as client:
            result = client.wait(jobid)
            assert not result.success
            assert "no instance took the job over in 1 s" in result.errstr, result.errstr
            assert output_of(client, jobid) == "up\n"
            assert len(pids(tmp_path, jobid)) == 1
    finally:
        second.stop()


def test_only_a_kept_state_directory_gets_a_crash_safe_kvs(tmp_path: Path) -> None:
    """With --state-dir the KVS writes a WAL; a temporary instance's keeps its journal in
    memory (nothing can restart from it), as flux-core's content-sqlite without a statedir."""
    state = "os.path.dirname(os.environ['PFLUX_URI'][len('local://'):])"
    look = f"import os; print(sorted(os.listdir({state})))"
    runs = {}
    for kept in (True, False):
        where = ["--state-dir", str(tmp_path / "state")] if kept else []
        done = console("start", *where, sys.executable, "-c", look)
        assert done.returncode == 0, done.stderr
        runs[kept] = done.stdout
    assert "kvs.sqlite-wal" in runs[True]
    assert "kvs.sqlite" in runs[False]
    assert "kvs.sqlite-wal" not in runs[False]


def test_a_fast_kvs_in_a_state_directory_keeps_its_jobs_across_a_clean_stop(
    tmp_path: Path,
) -> None:
    """``[kvs] journal_mode = "memory"`` groups commits; stopping commits what is held."""
    config = tmp_path / "fast.toml"
    config.write_text('[kvs]\njournal_mode = "memory"\n')
    state = ["--state-dir", str(tmp_path / "state")]
    submit = "from pflux.api import Client; c = Client(); print(c.wait(c.submit(['true'])))"
    done = console("start", *state, "--config", str(config), sys.executable, "-c", submit)
    assert done.returncode == 0, done.stderr
    count = "from pflux.api import Client; print(len(Client().list_jobs()))"
    again = console("start", *state, sys.executable, "-c", count)  # durable again
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "1"
