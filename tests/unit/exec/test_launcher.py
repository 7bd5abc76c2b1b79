"""The launcher and shells: records relayed, and nothing of a job outliving its launcher."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pflux.exec import journal, wire
from pflux.exec.launcher import SPARES_KEPT
from pflux.shell.main import DATAGRAM, WINDOW
from support.shells import description

JOB = 1 << 24


def children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(p) for p in f.read().split()]


def gone(pid: int) -> bool:
    """The process has ended (a zombie waiting for init to reap it counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read()
    except (FileNotFoundError, ProcessLookupError):
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
    """A launcher process driven as job-exec drives it: a link, and the shells' records.

    ``listening``: on a listening socket, as job-exec starts it, so that another
    "job-exec" can take it over (``attach``); else on a socket pair.
    """

    def __init__(self, tmp: Path, *, listening: bool = False) -> None:
        self.tmp = tmp
        self.journal = tmp / "journal"
        self.path = tmp / "sock"
        if listening:
            theirs = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            theirs.bind(str(self.path))
            theirs.listen(4)
            ours = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            ours.connect(str(self.path))
        else:
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

    def attach(self) -> tuple[int, bytes]:
        """Take the launcher over as a new job-exec would: (its pid, LIVE's lines)."""
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(str(self.path))
        self.records.close()
        self.records, shells = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        rights = [
            (socket.SOL_SOCKET, socket.SCM_RIGHTS, shells.fileno().to_bytes(4, sys.byteorder))
        ]
        self.sock.sendmsg([wire.record(wire.ATTACH, 0)], rights)
        shells.close()
        self.buffer = b""
        self.pending = []
        [(_, pid, lines)] = self.until(wire.LIVE)
        return pid, lines

    def read(self, timeout: float = 20.0) -> list[wire.Record]:
        """The shells' records of the next datagram."""
        if not self.pending:
            ready, _, _ = select.select([self.records], [], [], timeout)
            assert ready, f"nothing came in {timeout} s"
            self.pending += wire.split(self.records.recv(1 << 17))[0]
        got, self.pending = self.pending, []
        return got

    def job(self, command: list[str], jobid: int = JOB) -> bytes:
        """A shell's description of a job running ``command`` (its tmpdir under the test's)."""
        return description(jobid, command, self.tmp)

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
        """QUIT, and close job-exec's end: the launcher ends its shells and exits; its status."""
        with contextlib.suppress(OSError):
            self.send(wire.QUIT, b"", jobid=0)
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


def test_a_launcher_whose_job_exec_dies_keeps_the_jobs_for_the_next(tmp_path: Path) -> None:
    go, more = tmp_path / "go", tmp_path / "more"  # one FIFO per read: no race on reopening
    os.mkfifo(go)
    os.mkfifo(more)
    launcher = Launcher(tmp_path, listening=True)
    try:
        script = f"echo one; read x < {go}; echo two; read x < {more}; echo three; exit 4"
        launcher.send(wire.SPAWN, launcher.job(["sh", "-c", script]))
        before = launcher.until(wire.OUTPUT)  # received, and never acknowledged
        shell, _ = busy_shell(launcher.proc.pid)
        launcher.sock.close()  # its broker died: no QUIT
        with open(go, "w") as f:  # "two" is written while nobody listens: it is spooled
            f.write("go\n")
        pid, live = launcher.attach()
        assert pid == launcher.proc.pid
        assert live == b"%d\n" % JOB
        launcher.send(wire.RESUME, b"0")
        again = launcher.until(wire.OUTPUT)
        assert again == before  # everything not acknowledged, again, byte for byte
        assert launcher.until(wire.OUTPUT)[-1][2][5:] == b"two\n"
        with open(more, "w") as f:
            f.write("go\n")
        got = launcher.until(wire.EXITED)
        assert got[-1][2] == b"%d" % (4 << 8)
        assert [p[5:] for k, _, p in got if k == wire.OUTPUT] == [b"three\n"]
        launcher.send(wire.ACK, b"%d" % (1 << 62))  # all of it is in the KVS: it may go
        assert wait_gone([shell]) == []
        assert not (tmp_path / "spool" / str(JOB)).exists()
    finally:
        launcher.close()


def test_a_launcher_left_with_no_job_and_no_job_exec_exits(tmp_path: Path) -> None:
    launcher = Launcher(tmp_path, listening=True)
    launcher.send(wire.SPAWN, launcher.job(["sh", "-c", "read x; echo $x"]))
    launcher.until(wire.STARTED)
    [(shell, task)] = [(p, kids[0]) for p in children(launcher.proc.pid) if (kids := children(p))]
    launcher.sock.close()
    os.kill(shell, signal.SIGKILL)  # it dies with nobody to tell but the journal
    assert launcher.proc.wait(timeout=20) == 0
    assert wait_gone([task]) == []
    assert journal.entries(str(launcher.journal)) == ({}, {JOB: signal.SIGKILL})
    launcher.records.close()


def test_a_shell_sends_no_more_than_a_window_ahead_of_acknowledgements(
    launcher: Launcher,
) -> None:
    total = 12_000_000
    launcher.send(wire.SPAWN, launcher.job(["sh", "-c", f"yes 0123456789 | head -c {total}"]))
    received = acked = 0
    output = 0
    while True:
        got = []
        while received - acked < WINDOW and not (got and got[-1][0] == wire.EXITED):
            got += launcher.read()
            received = acked + sum(wire.HEADER.size + len(p) for _, _, p in got)
        assert received - acked <= WINDOW + DATAGRAM + 1024  # it stopped at the window
        output += sum(len(p) - 5 for k, _, p in got if k == wire.OUTPUT)
        acked = received
        launcher.send(wire.ACK, b"%d" % acked)
        if got[-1][0] == wire.EXITED:
            break
    assert output == total


def test_a_shell_done_with_its_job_is_given_the_next(launcher: Launcher) -> None:
    pids = []
    for jobid in (JOB, JOB + 1):
        launcher.send(wire.SPAWN, launcher.job(["sh", "-c", 'echo "$PPID"'], jobid), jobid)
        got = launcher.until(wire.EXITED)
        assert got[-1] == (wire.EXITED, jobid, b"0")
        pids += [int(p[5:]) for kind, _, p in got if kind == wire.OUTPUT]
        size = sum(wire.HEADER.size + len(p) for _, _, p in got)
        launcher.send(wire.ACK, b"%d" % size, jobid)
        # the shell says DONE, and the launcher records the job's end: no event tells the
        # test when, so it looks
        deadline = time.monotonic() + 20
        while journal.live(str(launcher.journal)) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert journal.live(str(launcher.journal)) == {}
    assert pids[0] == pids[1]  # the spare given the next job is the shell that is done
    assert pids[0] in children(launcher.proc.pid)


def test_shells_done_beyond_the_spares_kept_exit(launcher: Launcher) -> None:
    jobs = [JOB + i for i in range(SPARES_KEPT + 4)]
    for jobid in jobs:  # all at once: each reads its stdin, which stays open until told
        launcher.send(wire.SPAWN, launcher.job(["sh", "-c", "read x"], jobid), jobid)
    for jobid in jobs:
        launcher.sock.sendall(wire.input_record(jobid, None, b"", eof=True))
    exited: set[int] = set()
    while len(exited) < len(jobs):
        exited.update(
            jobid for kind, jobid, _ in launcher.until(wire.EXITED) if kind == wire.EXITED
        )
    for jobid in jobs:
        launcher.send(wire.ACK, b"%d" % (1 << 62), jobid)
    # no event says when the last has been kept or retired: look
    deadline = time.monotonic() + 20
    while len(children(launcher.proc.pid)) > SPARES_KEPT and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(children(launcher.proc.pid)) == SPARES_KEPT
