"""The launcher and shells: records relayed, and nothing of a job outliving its launcher."""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pflux.exec import journal, wire
from pflux.shell.plan import plan
from pflux.spec.builder import from_command
from pflux.spec.idset import IdSet
from pflux.spec.resource import ResourceSet

JOB = 1 << 24


def children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(p) for p in f.read().split()]


def gone(pid: int) -> bool:
    """The process has ended (a zombie waiting for init to reap it counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read()
    except FileNotFoundError:
        return True
    return text[text.rfind(b")") + 2 :].startswith(b"Z")


def wait_gone(pids: list[int], timeout: float = 10.0) -> list[int]:
    """The pids still running after ``timeout`` (waiting on pidfds, not polling)."""
    fds = {}
    for pid in pids:
        try:
            fds[os.pidfd_open(pid)] = pid
        except ProcessLookupError:
            continue
    try:
        ready, _, _ = select.select(list(fds), [], [], timeout) if fds else ([], [], [])
        while len(ready) < len(fds):
            more, _, _ = select.select([fd for fd in fds if fd not in ready], [], [], timeout)
            if not more:
                break
            ready += more
    finally:
        for fd in fds:
            os.close(fd)
    return [pid for pid in pids if not gone(pid)]


def busy_shell(launcher: int) -> tuple[int, int]:
    """(shell, task) of the one job running under ``launcher``; spares have no child."""
    [(shell, task)] = [(pid, kids[0]) for pid in children(launcher) if (kids := children(pid))]
    return shell, task


class Launcher:
    """A launcher process driven as job-exec drives it: a link, and the shells' records."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.journal = tmp / "journal"
        ours, theirs = socket.socketpair()
        self.records, shells = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pflux.exec.launcher",
                str(theirs.fileno()),
                str(shells.fileno()),
                str(self.journal),
            ],
            pass_fds=(theirs.fileno(), shells.fileno()),
        )
        theirs.close()
        shells.close()
        self.sock = ours
        self.buffer = b""
        self.pending: list[wire.Record] = []

    def send(self, kind: bytes, payload: bytes, jobid: int = JOB) -> None:
        self.sock.sendall(wire.record(kind, jobid, payload))

    def job(self, command: list[str], jobid: int = JOB) -> bytes:
        """A shell's description of a job running ``command`` (its tmpdir under the test's)."""
        R = ResourceSet.build({0: (IdSet.decode("0"), IdSet())}, "h").to_json()  # noqa: N806
        jobspec = from_command(command, environment=dict(os.environ))
        planned = plan(
            jobid,
            jobspec,
            R,
            uri="local:///x",
            namespace=f"job-{jobid}",
            tmp_parents=(str(self.tmp),),
            hostname="h",
            cpus=(0,),
        )
        return planned.description

    def until(self, kind: bytes, timeout: float = 20.0) -> list[wire.Record]:
        """Records up to and including the first of ``kind``, from the shells or the launcher."""
        got: list[wire.Record] = []
        while True:
            while self.pending:
                got.append(self.pending.pop(0))
                if got[-1][0] == kind:
                    return got
            ready, _, _ = select.select([self.records, self.sock], [], [], timeout)
            assert ready, f"nothing came in {timeout} s; got {got}"
            if self.records in ready:  # first: a shell's records precede the launcher's word
                self.pending += wire.split(self.records.recv(1 << 17))[0]
                continue
            data = self.sock.recv(65536)
            assert data, f"the launcher closed its end; got {got}"
            records, used = wire.split(self.buffer + data)
            self.buffer = (self.buffer + data)[used:]
            self.pending += records

    def close(self) -> int:
        """Close job-exec's end: the launcher ends its shells and exits; its exit status."""
        self.sock.close()
        status = self.proc.wait(timeout=30)
        self.records.close()
        return status


@pytest.fixture
def launcher(tmp_path: Path) -> Iterator[Launcher]:
    started = Launcher(tmp_path)
    yield started
    started.close()


def test_a_job_runs_and_its_records_come_back_in_order(launcher: Launcher) -> None:
    launcher.send(wire.SPAWN, launcher.job(["sh", "-c", "echo out; echo err >&2; exit 3"]))
    got = launcher.until(wire.EXITED)
    kinds = [kind for kind, _, _ in got]
    assert kinds[0] == wire.STARTED
    assert kinds[-1] == wire.EXITED
    assert got[-1][2] == b"%d" % (3 << 8)
    assert all(jobid == JOB for _, jobid, _ in got)
    output = {payload[:1]: payload[5:] for kind, _, payload in got if kind == wire.OUTPUT}
    assert output == {wire.STDOUT: b"out\n", wire.STDERR: b"err\n"}
    assert sorted(p for kind, _, p in got if kind == wire.EOF) == [b"e\0\0\0\0", b"o\0\0\0\0"]
    assert launcher.close() == 0
    assert journal.live(str(launcher.journal)) == {}  # the launcher recorded the end


def test_a_shell_that_fails_says_why_and_is_killed(launcher: Launcher) -> None:
    launcher.send(wire.SPAWN, b"not a description")
    got = launcher.until(wire.EXITED)
    assert got[0][0] == wire.EXCEPTION
    assert got[0][2].startswith(b"job shell failed: ")
    assert got[-1][2] == b"%d" % signal.SIGKILL


def test_a_shell_kills_its_tasks_when_its_launcher_dies(launcher: Launcher) -> None:
    launcher.send(wire.SPAWN, launcher.job(["sleep", "100"]))
    launcher.until(wire.STARTED)
    shell, task = busy_shell(launcher.proc.pid)
    spares = [pid for pid in children(launcher.proc.pid) if pid != shell]
    assert spares  # shells are forked ahead of need
    assert os.getsid(shell) == shell
    launcher.proc.kill()
    launcher.proc.wait()
    assert wait_gone([shell, task, *spares]) == []
    assert JOB in journal.live(str(launcher.journal))  # its end was never recorded


def test_signals_reach_the_tasks_and_a_terminated_shell_takes_them_along(
    launcher: Launcher,
) -> None:
    launcher.send(wire.SPAWN, launcher.job(["sleep", "100"]))
    launcher.until(wire.STARTED)
    launcher.send(wire.KILL, b"%d" % signal.SIGUSR1)
    assert launcher.until(wire.EXITED)[-1][2] == b"%d" % ((128 + signal.SIGUSR1) << 8)
    launcher.send(wire.SPAWN, launcher.job(["sleep", "100"], JOB * 2), jobid=JOB * 2)
    launcher.until(wire.STARTED)
    shell, task = busy_shell(launcher.proc.pid)
    os.kill(shell, signal.SIGSTOP)  # it cannot pass signals on any more
    launcher.send(wire.TERMINATE, b"%d" % signal.SIGKILL, jobid=JOB * 2)
    assert launcher.until(wire.EXITED)[-1][2] == b"%d" % signal.SIGKILL
    assert wait_gone([shell, task]) == []


def test_a_second_spawn_for_a_running_job_is_refused(launcher: Launcher) -> None:
    launcher.send(wire.SPAWN, launcher.job(["sleep", "100"]))
    launcher.until(wire.STARTED)
    launcher.send(wire.SPAWN, launcher.job(["true"]))
    assert launcher.until(wire.EXITED)[-1][2] == b"-1 a shell for the job runs already"
    launcher.send(wire.KILL, b"9")
    launcher.until(wire.EXITED)


def test_closing_its_end_ends_the_launcher_and_every_task(launcher: Launcher) -> None:
    launcher.send(wire.SPAWN, launcher.job(["sh", "-c", "trap 'exit 7' TERM; sleep 100 & wait"]))
    launcher.until(wire.STARTED)
    shell, task = busy_shell(launcher.proc.pid)
    everything = [shell, task, *children(task), *children(launcher.proc.pid)]
    assert launcher.close() == 0
    assert wait_gone(everything) == []
    assert journal.live(str(launcher.journal)) == {}


def test_the_launcher_refuses_bad_arguments() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pflux.exec.launcher"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 2
    assert "usage:" in result.stderr


def test_stopping_job_exec_ends_the_launcher_and_every_task(tmp_path: Path, live: Any) -> None:
    other = type(live)(tmp_path)
    try:
        stream = other.start(other.job(["sleep", "100"]))
        assert stream.next() == ("start", {})
        launcher = other.exec.launcher.pid
        assert os.getsid(launcher) == launcher  # its own session: it could outlive a broker
        shell, task = busy_shell(launcher)
        spares = [pid for pid in children(launcher) if pid != shell]
    finally:
        other.close()
    assert wait_gone([launcher, shell, task, *spares]) == []
    assert journal.live(str(tmp_path / "exec" / "journal")) == {}


def test_a_dead_launcher_fails_its_jobs_and_is_replaced(live: Any) -> None:
    stream = live.start(live.job(["sleep", "100"]))
    assert stream.next() == ("start", {})
    launcher = live.exec.launcher.pid
    shell, task = busy_shell(launcher)
    os.kill(launcher, signal.SIGKILL)
    got = stream.all()
    assert got[0] == (
        "exception",
        {"severity": 0, "type": "exec", "note": "job shell launcher died"},
    )
    assert [kind for kind, _ in got[1:]] == ["finish", "release"]
    assert wait_gone([shell, task]) == []
    again = live.start(live.job(["true"]))
    assert again.kinds() == ["start", "finish", "release"]
    assert live.exec.launcher.pid != launcher


def test_a_shell_that_does_not_answer_is_killed_with_its_tasks(live: Any) -> None:
    live.exec.kill_timeout = 0.1
    try:
        stream = live.start(live.job(["sleep", "100"]))
        assert stream.next() == ("start", {})
        shell, task = busy_shell(live.exec.launcher.pid)
        os.kill(shell, signal.SIGSTOP)
        live.send("job-exec.exception", {"id": stream.id, "type": "cancel", "severity": 0})
        assert stream.kinds() == ["finish", "release"]
        assert stream.status() == signal.SIGKILL  # the shell itself was killed
        assert wait_gone([shell, task]) == []
    finally:
        live.exec.kill_timeout = 5.0
