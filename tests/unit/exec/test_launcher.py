"""The launcher and shells: records relayed, and nothing of a job outliving its launcher."""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pflux.exec.service import LAUNCHER_RESTARTS
from pflux.protocol import shelljournal as journal
from pflux.protocol import shellwire as wire
from pflux.protocol.shellwire import REJOIN_TIMEOUT
from pflux.shell.acklog import DATAGRAM
from pflux.shell.job import WINDOW
from pflux.shell.launcher import JOURNAL_IDLE_LIMIT, SPARES_KEPT, STOP_AT_SPAWN
from pflux.spec.eventlog import parse
from support.procs import children, pidfd_wait
from support.shells import description

JOB = 1 << 24


def busy_shell(launcher: int) -> tuple[int, int]:
    """(shell, task) of the one job running under ``launcher``; spares have no child."""
    [(shell, task)] = [(pid, kids[0]) for pid in children(launcher) if (kids := children(pid))]
    return shell, task


class Launcher:
    """A launcher process driven as job-exec drives it: a link, and the shells' records.

    ``listening``: on a listening socket, as job-exec starts it, so that another
    "job-exec" can take it over (``attach``); else on a socket pair.
    """

    def __init__(self, tmp: Path, *, listening: bool = False, rejoin_timeout: float = 0) -> None:
        self.tmp = tmp
        self.journal = tmp / "journal"
        self.path = tmp / "sock"
        self.env = {**os.environ, REJOIN_TIMEOUT: repr(rejoin_timeout)}
        self.listener: socket.socket | None = None
        if listening:
            self.listen()
        self.start()

    def listen(self) -> None:
        """Listen on ``sock`` anew, as a restarted job-exec does (the last one's is closed)."""
        if self.listener is not None:
            self.listener.close()
            self.path.unlink()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(self.path))
        self.listener.listen(16)

    def start(self) -> None:
        """Start a launcher (on the same listening socket as the last), as job-exec does."""
        ours, theirs = socket.socketpair()
        self.records, shells = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        passed = [theirs.fileno(), shells.fileno()]
        if self.listener is not None:
            passed.append(self.listener.fileno())
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pflux.shell.launcher", *map(str, passed[:2]), str(self.journal)]
            + [str(fd) for fd in passed[2:]],
            pass_fds=passed,
            env=self.env,
        )
        theirs.close()
        shells.close()
        self.sock = ours
        self.buffer = b""
        self.pending: list[wire.Record] = []

    def send(self, kind: bytes, payload: bytes, jobid: int = JOB) -> None:
        self.sock.sendall(wire.record(kind, jobid, payload))

    def attach(self, sent: Callable[[], None] = lambda: None) -> tuple[int, bytes]:
        """Take the launcher over as a new job-exec would: (its pid, LIVE's lines);
        ``sent`` is called once ATTACH is sent."""
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(str(self.path))
        self.records.close()
        self.records, shells = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        rights = [
            (socket.SOL_SOCKET, socket.SCM_RIGHTS, shells.fileno().to_bytes(4, sys.byteorder))
        ]
        self.sock.sendmsg([wire.record(wire.ATTACH, 0)], rights)
        shells.close()
        sent()
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
        if self.listener is not None:
            self.listener.close()
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


def test_a_shell_with_no_launcher_to_rejoin_kills_its_tasks(launcher: Launcher) -> None:
    launcher.send(wire.SPAWN, launcher.job(["sleep", "100"]))
    launcher.until(wire.STARTED)
    shell, task = busy_shell(launcher.proc.pid)
    spares = [pid for pid in children(launcher.proc.pid) if pid != shell]
    assert spares  # shells are forked ahead of need
    assert os.getsid(shell) == shell
    launcher.proc.kill()
    launcher.proc.wait()
    assert pidfd_wait([shell, task, *spares], 10) == []
    assert JOB in journal.live(str(launcher.journal))  # its end was never recorded


def kill_launcher(launcher: Launcher) -> None:
    """SIGKILL the launcher, as a crash would, and end job-exec's side of it."""
    launcher.proc.kill()
    launcher.proc.wait()
    launcher.sock.close()
    launcher.records.close()


def test_a_shell_rejoins_the_launcher_started_after_its_own_died(tmp_path: Path) -> None:
    go = tmp_path / "go"
    os.mkfifo(go)
    launcher = Launcher(tmp_path, listening=True)
    try:
        script = f"echo one; read x < {go}; echo two; exit 4"
        launcher.send(wire.SPAWN, launcher.job(["sh", "-c", script]))
        before = launcher.until(wire.OUTPUT)  # received, and never acknowledged
        shell, _ = busy_shell(launcher.proc.pid)
        kill_launcher(launcher)
        launcher.start()  # on the same listening socket, where the shell waits
        [(_, pid, lines)] = launcher.until(wire.LIVE)
        assert (pid, lines) == (launcher.proc.pid, b"%d\n" % JOB)
        launcher.send(wire.RESUME, b"0")
        assert launcher.until(wire.OUTPUT) == before  # again, byte for byte
        with open(go, "w") as f:
            f.write("go\n")
        got = launcher.until(wire.EXITED)
        assert [p[5:] for k, _, p in got if k == wire.OUTPUT] == [b"two\n"]
        assert got[-1][2] == b"%d" % (4 << 8)
        launcher.send(wire.ACK, b"%d" % (1 << 62))  # in the KVS: it says DONE, and is retired
        assert pidfd_wait([shell], 10) == []
        assert shell not in children(launcher.proc.pid)  # adopted, never its child
    finally:
        launcher.close()
    assert journal.live(str(launcher.journal)) == {}
    assert not (tmp_path / "spool" / str(JOB)).exists()


def test_a_shell_whose_broker_died_too_waits_for_the_next_instance(tmp_path: Path) -> None:
    """Nobody listens on ``sock`` (job-exec died with the launcher): the shell keeps its
    task and rejoins the launcher a restarted job-exec starts on a new ``sock``."""
    go = tmp_path / "go"
    os.mkfifo(go)
    launcher = Launcher(tmp_path, listening=True, rejoin_timeout=60)
    try:
        script = f"echo one; read x < {go}; echo two; exit 4"
        launcher.send(wire.SPAWN, launcher.job(["sh", "-c", script]))
        before = launcher.until(wire.OUTPUT)
        shell, task = busy_shell(launcher.proc.pid)
        assert launcher.listener is not None
        launcher.listener.close()  # job-exec's copy: the broker is dead
        kill_launcher(launcher)
        assert sorted(pidfd_wait([shell, task], 1.5)) == sorted([shell, task])  # it waits
        launcher.listen()
        launcher.start()
        [(_, pid, lines)] = launcher.until(wire.LIVE)
        assert (pid, lines) == (launcher.proc.pid, b"%d\n" % JOB)
        launcher.send(wire.RESUME, b"0")
        assert launcher.until(wire.OUTPUT) == before
        with open(go, "w") as f:
            f.write("go\n")
        got = launcher.until(wire.EXITED)
        assert [p[5:] for k, _, p in got if k == wire.OUTPUT] == [b"two\n"]
        assert got[-1][2] == b"%d" % (4 << 8)
    finally:
        launcher.close()


def test_a_shell_that_no_instance_takes_kills_its_task(tmp_path: Path) -> None:
    launcher = Launcher(tmp_path, listening=True, rejoin_timeout=0.5)
    try:
        launcher.send(wire.SPAWN, launcher.job(["sh", "-c", "echo one; exec sleep 100"]))
        launcher.until(wire.OUTPUT)
        shell, task = busy_shell(launcher.proc.pid)
        assert launcher.listener is not None
        launcher.listener.close()
        kill_launcher(launcher)
        assert pidfd_wait([shell, task], 20) == []
        records = wire.split((tmp_path / "spool" / str(JOB)).read_bytes()[8:])[0]
        note = b"job shell launcher died; no instance took the job over in 0.5 s"
        assert (wire.EXCEPTION, JOB, note) in records
        assert records[-1] == (wire.EXITED, JOB, b"%d" % ((128 + signal.SIGKILL) << 8))
    finally:
        launcher.listener = None
        launcher.close()


def test_a_shell_whose_job_ends_before_a_launcher_takes_it_leaves_it_spooled(
    tmp_path: Path,
) -> None:
    launcher = Launcher(tmp_path, listening=True)
    try:
        launcher.send(wire.SPAWN, launcher.job(["sh", "-c", "echo one; read x; echo two; exit 5"]))
        launcher.until(wire.OUTPUT)
        shell, task = busy_shell(launcher.proc.pid)
        kill_launcher(launcher)
        os.kill(task, signal.SIGTERM)  # the job ends while no launcher runs
        assert pidfd_wait([shell], 10) == []
        spool = tmp_path / "spool" / str(JOB)
        records = wire.split(spool.read_bytes()[8:])[0]
        assert records[-1] == (wire.EXITED, JOB, b"%d" % ((128 + signal.SIGTERM) << 8))
        launcher.start()  # it adopts the shell, which had rejoined, and finds it gone
        got = launcher.until(wire.EXITED)
        assert got == [
            (wire.LIVE, launcher.proc.pid, b"%d\n" % JOB),
            (wire.EXITED, JOB, b"-2 spooled"),
        ]
    finally:
        launcher.close()
    assert journal.live(str(launcher.journal)) == {}


def test_what_job_exec_sends_before_a_shell_rejoins_reaches_it_when_it_does(
    tmp_path: Path,
) -> None:
    launcher = Launcher(tmp_path, listening=True)
    try:
        launcher.send(wire.SPAWN, launcher.job(["sleep", "100"]))
        launcher.until(wire.STARTED)
        shell, task = busy_shell(launcher.proc.pid)
        os.kill(shell, signal.SIGSTOP)  # it rejoins only once the KILL is held for it
        kill_launcher(launcher)
        launcher.start()
        launcher.send(wire.KILL, b"%d" % signal.SIGTERM)
        other = JOB + 1  # the launcher reads in order: once this runs, the KILL is held
        launcher.send(wire.SPAWN, launcher.job(["true"], other), jobid=other)
        assert launcher.until(wire.EXITED)[-1] == (wire.EXITED, other, b"0")
        os.kill(shell, signal.SIGCONT)
        assert pidfd_wait([task, shell], 10) == []  # killed, then it ended into its spool
        got = launcher.until(wire.EXITED)
        assert got == [
            (wire.LIVE, launcher.proc.pid, b"%d\n" % JOB),
            (wire.EXITED, JOB, b"-2 spooled"),
        ]
        spooled = wire.split((tmp_path / "spool" / str(JOB)).read_bytes()[8:])[0]
        assert spooled[-1] == (wire.EXITED, JOB, b"%d" % ((128 + signal.SIGTERM) << 8))
    finally:
        launcher.close()


@pytest.mark.parametrize(
    ("hello", "passing"),
    [
        (b"nonsense", None),
        (wire.record(wire.REJOIN, JOB, b"1"), None),  # no socket to the shell
        (wire.record(wire.REJOIN, JOB, b"not a pid"), "seqpacket"),
        (wire.record(wire.REJOIN, JOB, b"1"), "pipe"),
        (wire.record(wire.REJOIN, JOB, b"1"), "stream"),
        (wire.record(wire.ATTACH, 0), "stream"),  # while its job-exec is there
    ],
    ids=["nonsense", "no-socket", "bad-pid", "pipe", "stream", "attach-while-attached"],
)
def test_a_bad_caller_on_the_listening_socket_is_hung_up_on(
    tmp_path: Path, hello: bytes, passing: str | None
) -> None:
    launcher = Launcher(tmp_path, listening=True)
    kinds = {"seqpacket": socket.SOCK_SEQPACKET, "stream": socket.SOCK_STREAM}
    try:
        ends = socket.socketpair(socket.AF_UNIX, kinds.get(passing or "", socket.SOCK_STREAM))
        pipe = os.pipe()
        passed = pipe[1] if passing == "pipe" else ends[1].fileno()
        rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, passed.to_bytes(4, sys.byteorder))]
        caller = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        caller.connect(str(launcher.path))
        caller.sendmsg([hello], rights if passing else [])
        assert select.select([caller], [], [], 20)[0]
        assert caller.recv(100) == b""  # hung up on
        launcher.send(wire.SPAWN, launcher.job(["true"]))
        assert launcher.until(wire.EXITED)[-1][2] == b"0"  # and serving on
        caller.close()
        for end in ends:
            end.close()
        for fd in pipe:
            os.close(fd)
    finally:
        launcher.close()


def test_a_shell_that_dies_before_it_rejoins_is_reported(tmp_path: Path) -> None:
    launcher = Launcher(tmp_path, listening=True)
    try:
        launcher.send(wire.SPAWN, launcher.job(["sleep", "100"]))
        launcher.until(wire.STARTED)
        shell, task = busy_shell(launcher.proc.pid)
        os.kill(shell, signal.SIGSTOP)  # it cannot rejoin before it dies
        kill_launcher(launcher)
        launcher.start()
        os.kill(shell, signal.SIGKILL)
        [(kind, jobid, why)] = launcher.until(wire.EXITED)
        assert (kind, jobid) == (wire.EXITED, JOB)
        assert why.startswith(b"-1 job shell ended without its status")
        assert pidfd_wait([task], 10) == []  # what it left is killed
    finally:
        launcher.close()
    assert journal.live(str(launcher.journal)) == {}


def test_a_job_is_journalled_as_given_before_its_shell_has_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stopped = tmp_path / "stopped"
    os.mkfifo(stopped)
    monkeypatch.setenv(STOP_AT_SPAWN, str(stopped))
    launcher = Launcher(tmp_path)
    try:
        launcher.send(wire.SPAWN, launcher.job(["true"]))
        fd = os.open(stopped, os.O_RDONLY | os.O_NONBLOCK)
        try:
            assert select.select([fd], [], [], 20)[0], "the launcher did not stop at the spawn"
            assert os.read(fd, 100) == b"%d\n" % JOB
        finally:
            os.close(fd)
        _, status = os.waitpid(launcher.proc.pid, os.WUNTRACED)  # once it has stopped
        assert os.WIFSTOPPED(status)
        [(pid, _, _, given)] = journal.live(str(launcher.journal)).values()
        assert given
        assert pid in children(launcher.proc.pid)  # a spare, which has no job yet
        assert not children(pid)
        os.kill(launcher.proc.pid, signal.SIGCONT)
        assert launcher.until(wire.EXITED)[-1][2] == b"0"
    finally:
        os.kill(launcher.proc.pid, signal.SIGCONT)
        launcher.close()
    assert journal.live(str(launcher.journal)) == {}


def test_a_shell_given_a_job_that_ended_before_recording_itself_never_started_it(
    tmp_path: Path,
) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    when = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
    launcher_journal = tmp_path / "journal"
    launcher_journal.write_bytes(
        journal.given_line(JOB, gone.pid, when, journal.boot_id().encode())
    )
    launcher = Launcher(tmp_path, listening=True)
    try:
        [(kind, jobid, why)] = launcher.until(wire.EXITED)
        assert (kind, jobid) == (wire.EXITED, JOB)
        assert why.startswith(b"%d " % wire.EXITED_UNSTARTED)
    finally:
        launcher.close()
    assert journal.live(str(launcher.journal)) == {}


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
    assert pidfd_wait([shell, task], 10) == []


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
    assert pidfd_wait(everything, 10) == []
    assert journal.live(str(launcher.journal)) == {}


def test_the_launcher_refuses_bad_arguments() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pflux.shell.launcher"], capture_output=True, text=True, check=False
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
    assert pidfd_wait([launcher, shell, task, *spares], 10) == []
    assert journal.live(str(tmp_path / "exec" / "journal")) == {}


def stdout_of(live: Any, jobid: int) -> str:
    """What the job's tasks wrote to stdout, from its output eventlog."""
    events = parse(live.guest(jobid, "output"))
    return "".join(
        e.context.get("data", "")
        for e in events
        if e.name == "data" and e.context and e.context["stream"] == "stdout"
    )


def next_launcher(live: Any, old: int | None) -> int:
    """The pid of the launcher job-exec starts after ``old`` died (no event says when)."""
    deadline = time.monotonic() + 20
    while (pid := live.exec.launcher.pid) in (old, None) or not live.exec.launcher.running:
        assert time.monotonic() < deadline, "no new launcher"
        time.sleep(0.01)
    assert pid is not None
    return pid


def test_a_job_outlives_its_launchers_and_ends_with_all_its_output(
    tmp_path: Path, live: Any
) -> None:
    go = tmp_path / "go"
    os.mkfifo(go)
    stream = live.start(live.job(["sh", "-c", f"echo one; read x < {go}; echo two; exit 3"]))
    assert stream.next() == ("start", {})
    live.wait_output(stream.id, "one")
    first = live.exec.launcher.pid
    shell, task = busy_shell(first)
    os.kill(first, signal.SIGKILL)
    second = next_launcher(live, first)
    os.kill(second, signal.SIGKILL)  # again at once: the next starts after a backoff
    next_launcher(live, second)
    with open(go, "w") as f:
        f.write("go\n")
    assert stream.kinds() == ["finish", "release"]
    assert stream.status() == 3 << 8
    assert stdout_of(live, stream.id) == "one\ntwo\n"
    assert pidfd_wait([shell, task], 10) == []
    again = live.start(live.job(["true"]))
    assert again.kinds() == ["start", "finish", "release"]


def test_a_job_that_ends_before_the_next_launcher_serves_it_ends_from_its_spool(
    tmp_path: Path, live: Any
) -> None:
    go = tmp_path / "go"
    os.mkfifo(go)
    stream = live.start(live.job(["sh", "-c", f"echo one; read x < {go}; echo two; exit 5"]))
    assert stream.next() == ("start", {})
    live.wait_output(stream.id, "one")
    first = live.exec.launcher.pid
    shell, _ = busy_shell(first)
    os.kill(shell, signal.SIGSTOP)  # it rejoins only once the next launcher is stopped
    os.kill(first, signal.SIGKILL)
    second = next_launcher(live, first)
    os.kill(second, signal.SIGSTOP)
    try:
        os.kill(shell, signal.SIGCONT)
        with open(go, "w") as f:
            f.write("go\n")
        assert pidfd_wait([shell], 10) == []  # its job is over, into its spool
    finally:
        os.kill(second, signal.SIGCONT)
    assert stream.kinds() == ["finish", "release"]
    assert stream.status() == 5 << 8
    assert stdout_of(live, stream.id) == "one\ntwo\n"
    assert not (live.state_dir / "exec" / "spool" / str(stream.id)).exists()


def test_the_spool_of_a_job_over_before_its_shell_rejoined_is_removed(
    tmp_path: Path, live: Any
) -> None:
    go = tmp_path / "go"
    os.mkfifo(go)
    stream = live.start(live.job(["sh", "-c", f"read x < {go}; echo done"]))
    assert stream.next() == ("start", {})
    first = live.exec.launcher.pid
    shell, _ = busy_shell(first)
    os.kill(first, signal.SIGSTOP)  # the job's end reaches job-exec; its ACK, the shell never
    with open(go, "w") as f:
        f.write("go\n")
    assert stream.kinds() == ["finish", "release"]
    os.kill(first, signal.SIGKILL)
    assert pidfd_wait([shell], 10) == []  # it spooled what it had not had acknowledged
    spool = live.state_dir / "exec" / "spool" / str(stream.id)
    deadline = time.monotonic() + 20  # the next launcher's word on it has no event here
    while spool.exists():
        assert time.monotonic() < deadline, "the spool is left behind"
        time.sleep(0.01)
    assert stdout_of(live, stream.id) == "done\n"


def test_a_launcher_that_keeps_dying_fails_its_jobs_in_the_end(live: Any) -> None:
    stream = live.start(live.job(["sleep", "100"]))
    assert stream.next() == ("start", {})
    launcher = live.exec.launcher.pid
    shell, task = busy_shell(launcher)
    live.exec.restarts = LAUNCHER_RESTARTS  # as many as it starts in a row
    os.kill(launcher, signal.SIGKILL)
    got = stream.all()
    assert got[0] == (
        "exception",
        {"severity": 0, "type": "exec", "note": "job shell launcher died"},
    )
    assert [kind for kind, _ in got[1:]] == ["finish", "release"]
    assert pidfd_wait([shell, task], 10) == []
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
        assert pidfd_wait([shell, task], 10) == []
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
        assert pidfd_wait([shell], 10) == []
        assert not (tmp_path / "spool" / str(JOB)).exists()
    finally:
        launcher.close()


def test_an_attach_heard_before_the_end_of_the_dead_job_exec_is_taken(tmp_path: Path) -> None:
    """The next job-exec's ATTACH may be read before the last one's end (a launcher
    started just before its broker died): the launcher reads that end first."""
    launcher = Launcher(tmp_path, listening=True)
    try:
        launcher.send(wire.SPAWN, launcher.job(["sleep", "100"]))
        launcher.until(wire.STARTED)
        os.kill(launcher.proc.pid, signal.SIGSTOP)
        dead = launcher.sock

        def broker_dies() -> None:
            dead.close()
            os.kill(launcher.proc.pid, signal.SIGCONT)

        pid, live = launcher.attach(sent=broker_dies)  # ATTACH first, then the end
        assert (pid, live) == (launcher.proc.pid, b"%d\n" % JOB)
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
    assert pidfd_wait([task], 10) == []
    assert journal.entries(str(launcher.journal)) == ({}, {JOB: signal.SIGKILL})
    launcher.records.close()
    assert launcher.listener is not None
    launcher.listener.close()


def test_a_detached_launcher_whose_directory_is_removed_ends_its_jobs_and_exits(
    tmp_path: Path,
) -> None:
    """Once the instance's state is removed (a rank's directory, with its instance gone),
    no job-exec can come back: the launcher ends the jobs it kept and exits."""
    directory = tmp_path / "exec"
    directory.mkdir()
    launcher = Launcher(directory, listening=True)
    launcher.send(wire.SPAWN, launcher.job(["sleep", "300"]))
    launcher.until(wire.STARTED)
    [(shell, task)] = [(p, kids[0]) for p in children(launcher.proc.pid) if (kids := children(p))]
    launcher.sock.close()  # its broker died
    spool = directory / "spool" / str(JOB)
    deadline = time.monotonic() + 20
    while not spool.exists():  # the shell spools what job-exec has not acknowledged
        assert time.monotonic() < deadline, "the shell spooled nothing"
        time.sleep(0.01)
    shutil.rmtree(directory)
    assert launcher.proc.wait(timeout=20) == 0
    assert pidfd_wait([shell, task], 10) == []
    launcher.records.close()
    assert launcher.listener is not None
    launcher.listener.close()


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


def test_input_a_busy_shell_cannot_take_yet_waits_for_it_in_order(launcher: Launcher) -> None:
    """Records a shell's full socket refuses are passed on once it reads, none dropped."""
    launcher.send(wire.SPAWN, launcher.job(["wc", "-c"]))
    assert launcher.until(wire.STARTED)[-1][0] == wire.STARTED
    shell, _ = busy_shell(launcher.proc.pid)
    chunk = bytes(range(256)) * 256  # 64 KiB, as job-exec passes stdin on
    os.kill(shell, signal.SIGSTOP)  # it reads nothing: its socket fills
    try:
        for _ in range(128):
            launcher.sock.sendall(wire.input_record(JOB, None, chunk))
        launcher.sock.sendall(wire.input_record(JOB, None, b"", eof=True))
    finally:
        os.kill(shell, signal.SIGCONT)
    got = launcher.until(wire.EXITED)
    output = b"".join(p[5:] for kind, _, p in got if kind == wire.OUTPUT)
    assert int(output) == 128 * len(chunk)
    assert got[-1][2] == b"0"


def test_the_spares_are_kept_when_the_journal_is_rewritten(launcher: Launcher) -> None:
    def run(jobid: int, ended: Callable[[], bool]) -> int:
        """Run a job until ``ended``; the pid of the shell that ran it."""
        launcher.send(wire.SPAWN, launcher.job(["sh", "-c", 'echo "$PPID"'], jobid), jobid)
        got = launcher.until(wire.EXITED)
        size = sum(wire.HEADER.size + len(p) for _, _, p in got)
        launcher.send(wire.ACK, b"%d" % size, jobid)
        deadline = time.monotonic() + 20  # no event says when the end is recorded: look
        while not ended() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ended()
        return int(b"".join(p[5:] for kind, _, p in got if kind == wire.OUTPUT))

    def recorded(jobid: int) -> Callable[[], bool]:
        return lambda: f"E {jobid}\n" in launcher.journal.read_text()

    ran = run(JOB, recorded(JOB))
    spares = set(children(launcher.proc.pid))
    assert ran in spares
    with launcher.journal.open("ab") as appended:  # past the limit: the next end rewrites it
        appended.write(journal.end_lines([1]) * (JOURNAL_IDLE_LIMIT // 4))
    run(JOB + 1, lambda: launcher.journal.stat().st_size < JOURNAL_IDLE_LIMIT)
    shell = run(JOB + 2, recorded(JOB + 2))
    assert shell in spares  # a spare of before the rewrite, not one forked since
    assert b"S %d %d " % (JOB + 2, shell) in launcher.journal.read_bytes()  # in the new file
