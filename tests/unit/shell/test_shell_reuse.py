"""A shell runs job after job: each in a process put back as the launcher left it.

The test forks a real shell (``serve``) and plays the launcher and job-exec
on its two sockets: SPAWN a job, read its records, acknowledge them, wait
for DONE, SPAWN the next.
"""

from __future__ import annotations

import marshal
import os
import select
import signal
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pflux.protocol import shelljournal as journal
from pflux.protocol import shellwire as wire
from pflux.shell import serve, tasks
from pflux.shell.context import Context
from pflux.shell.job import TRIM_AFTER
from support.policy import UNDER_OTHER
from support.shells import description

JOB = 1 << 24
REPORT = 'echo "$PPID"; pwd; echo "$PATH"; grep Cpus_allowed_list /proc/self/status | cut -f2'
POLICIES = [  # the task's scheduling policy, then its shell's
    sys.executable,
    "-c",
    "import os; print(os.sched_getscheduler(0), os.sched_getscheduler(os.getppid()))",
]


class Forked:
    """A shell forked from the test, with the launcher's socket and job-exec's records."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.link, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.records, shells = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        journal_fd = os.open(tmp / "journal", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        (tmp / "spool").mkdir()
        context = Context(
            journal=journal_fd,
            boot=journal.boot_id().encode(),
            devnull=os.open(os.devnull, os.O_RDONLY),
            cpus=tuple(sorted(os.sched_getaffinity(0))),
            cwd=os.getcwd(),
            path=os.environ.get("PATH"),
            records=shells,
            spool=str(tmp / "spool"),
            exec_dir=os.open(tmp, os.O_PATH | os.O_DIRECTORY),
        )
        self.pid = os.fork()
        if self.pid == 0:  # pragma: no cover - the shell's side
            code = 1
            try:
                self.link.close()
                self.records.close()
                code = serve.serve(context, theirs)
            finally:
                os._exit(code)
        for fd in (journal_fd, context.devnull):
            os.close(fd)
        theirs.close()
        shells.close()

    def job(self, jobid: int, script: str | list[str], **changes: object) -> bytes:
        """The description of a job running ``sh -c script`` (or argv), with fields changed."""
        argv = ["sh", "-c", script] if isinstance(script, str) else script
        planned = wire.Description(*marshal.loads(description(jobid, argv, self.tmp)))
        fields = dict(zip(wire.Description._fields, planned, strict=True))
        if "cwd" in changes:
            fields["cwd"] = changes["cwd"]
        if "path" in changes:
            planned.env["PATH"] = str(changes["path"])
        if "cpus" in changes:
            fields["tasks"] = [(*task[:2], changes["cpus"], task[3]) for task in planned.tasks]
        if "output" in changes:
            fields["stdout"] = ((changes["output"],), False, False)
        if "error" in changes:
            fields["stderr"] = ((changes["error"],), False, False)
        return marshal.dumps(tuple(wire.Description(**fields)))

    def run(self, jobid: int, description: bytes, *sent: bytes) -> list[wire.Record]:
        """SPAWN the job, send ``sent`` after it, and return its records up to EXITED."""
        self.link.send(wire.record(wire.SPAWN, jobid, description))
        for data in sent:
            self.link.send(data)
        got: list[wire.Record] = []
        while not got or got[-1][0] != wire.EXITED:
            ready, _, _ = select.select([self.records], [], [], 20)
            assert ready, f"no record in 20 s; got {got}"
            got += wire.split(self.records.recv(1 << 17))[0]
        return got

    def done(self, jobid: int, got: list[wire.Record]) -> None:
        """Acknowledge every record of the job; the shell says DONE."""
        self.link.send(wire.record(wire.ACK, jobid, b"%d" % size(jobid, got)))
        ready, _, _ = select.select([self.link], [], [], 20)
        assert ready, "no DONE in 20 s"
        assert wire.split(self.link.recv(1 << 16))[0] == [(wire.DONE, jobid, b"")]

    def close(self) -> int:
        """Close the launcher's end: a shell waiting for a job exits; its wait status."""
        self.link.close()
        self.records.close()
        return os.waitpid(self.pid, 0)[1]


def size(jobid: int, got: list[wire.Record]) -> int:
    """The bytes of a job's records: the offset acknowledging them all."""
    return sum(len(wire.record(kind, jobid, payload)) for kind, _, payload in got)


def stdout(got: list[wire.Record]) -> list[str]:
    text = b"".join(p[5:] for kind, _, p in got if kind == wire.OUTPUT and p[:1] == wire.STDOUT)
    return text.decode().splitlines()


@pytest.fixture
def forked(tmp_path: Path) -> Iterator[Forked]:
    started = Forked(tmp_path)
    yield started
    if started.link.fileno() >= 0:
        started.close()


def test_the_next_job_finds_the_process_as_the_launcher_left_it(
    forked: Forked, tmp_path: Path
) -> None:
    forked.done(JOB, forked.run(JOB, forked.job(JOB, "true")))
    fds = sorted(os.listdir(f"/proc/{forked.pid}/fd"))
    cpus = sorted(os.sched_getaffinity(0))
    out = tmp_path / "out"
    only_there = tmp_path / "pflux-test-only-in-tmp"
    only_there.write_text("#!/bin/sh\n")
    only_there.chmod(0o755)
    path = f"{tmp_path}:/usr/bin:/bin"
    changed = forked.job(
        JOB + 1, REPORT, cwd=str(tmp_path), path=path, cpus=(cpus[-1],), output=str(out)
    )
    forked.done(JOB + 1, forked.run(JOB + 1, changed))
    assert out.read_text().splitlines() == [str(forked.pid), str(tmp_path), path, str(cpus[-1])]
    assert sorted(os.listdir(f"/proc/{forked.pid}/fd")) == fds  # its file is closed
    got = forked.run(JOB + 2, forked.job(JOB + 2, REPORT))
    status = Path("/proc/self/status").read_text().splitlines()
    [expected] = [line.split("\t")[1] for line in status if line.startswith("Cpus_allowed_list")]
    # the same process, back in the launcher's directory, with its PATH, unbound again
    assert stdout(got) == [str(forked.pid), os.getcwd(), os.environ["PATH"], expected]
    forked.done(JOB + 2, got)
    got = forked.run(JOB + 3, forked.job(JOB + 3, [only_there.name]))
    assert got[-1] == (wire.EXITED, JOB + 3, b"%d" % (127 << 8))  # not searched for in tmp_path
    forked.done(JOB + 3, got)
    assert forked.close() == 0
    # each start is recorded by the shell (the launcher, not here, records the ends)
    assert journal.live(str(tmp_path / "journal")).keys() == {JOB, JOB + 1, JOB + 2, JOB + 3}


def test_a_job_whose_files_cannot_all_be_opened_leaves_none_open(
    forked: Forked, tmp_path: Path
) -> None:
    forked.done(JOB, forked.run(JOB, forked.job(JOB, "true")))
    fds = sorted(os.listdir(f"/proc/{forked.pid}/fd"))
    bad = forked.job(JOB + 1, "true", output=str(tmp_path / "out"), error=str(tmp_path / "no/err"))
    got = forked.run(JOB + 1, bad)
    assert got[-1] == (wire.EXITED, JOB + 1, b"%d" % (1 << 8))
    assert (
        wire.EXCEPTION,
        JOB + 1,
        b"error opening output file %s/no/err: No such file or directory" % bytes(tmp_path),
    ) in got
    forked.done(JOB + 1, got)
    assert sorted(os.listdir(f"/proc/{forked.pid}/fd")) == fds


def test_what_comes_for_the_job_before_is_ignored(forked: Forked) -> None:
    forked.done(JOB, forked.run(JOB, forked.job(JOB, "true")))
    late_kill = wire.record(wire.KILL, JOB, b"%d" % signal.SIGKILL)
    forked.link.send(late_kill)  # before the next job: dropped while the shell waits
    got = forked.run(
        JOB + 1,
        forked.job(JOB + 1, "sleep 30"),
        wire.record(wire.ACK, JOB, b"1000000"),
        late_kill,
        wire.record(wire.KILL, JOB + 1, b"%d" % signal.SIGTERM),
    )
    assert got[-1] == (wire.EXITED, JOB + 1, b"%d" % ((128 + signal.SIGTERM) << 8))
    forked.done(JOB + 1, got)  # the late ACK did not count for this job's records


@UNDER_OTHER
def test_a_shell_gives_way_and_its_tasks_run_as_it_found_them(forked: Forked) -> None:
    for jobid in (JOB, JOB + 1):  # the next job's tasks too
        got = forked.run(jobid, forked.job(jobid, POLICIES))
        assert stdout(got) == [f"{os.SCHED_OTHER} {os.SCHED_BATCH}"]
        forked.done(jobid, got)
    assert forked.close() == 0


@UNDER_OTHER
def test_a_shell_started_under_another_policy_keeps_it_for_its_tasks(tmp_path: Path) -> None:
    os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    try:
        forked = Forked(tmp_path)
    finally:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    got = forked.run(JOB, forked.job(JOB, POLICIES))
    assert stdout(got) == [f"{os.SCHED_BATCH} {os.SCHED_BATCH}"]
    forked.done(JOB, got)
    assert forked.close() == 0


def test_a_shell_exits_after_its_last_job(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(serve, "JOBS_PER_SHELL", 1)  # before the fork: the shell's limit
    forked = Forked(tmp_path)
    got = forked.run(JOB, forked.job(JOB, "true"))
    forked.link.send(wire.record(wire.ACK, JOB, b"%d" % size(JOB, got)))
    assert os.waitpid(forked.pid, 0)[1] == 0  # 0: the job's status is reported
    assert forked.link.recv(1 << 16) == b""  # and no DONE
    forked.link.close()
    forked.records.close()


def test_a_shell_gives_back_its_heap_after_much_output(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    trimmed = tmp_path / "trimmed"
    monkeypatch.setattr(tasks, "trim_heap", trimmed.touch)  # in the fork
    forked = Forked(tmp_path)
    small = forked.run(JOB, forked.job(JOB, "echo small"))
    forked.done(JOB, small)
    assert not trimmed.exists()
    script = f"head -c {TRIM_AFTER + 1} /dev/zero | tr '\\0' x"
    got = []
    forked.link.send(wire.record(wire.SPAWN, JOB + 1, forked.job(JOB + 1, script)))
    while not got or got[-1][0] != wire.EXITED:  # acknowledged as it comes: the window
        ready, _, _ = select.select([forked.records], [], [], 20)
        assert ready, "no record in 20 s"
        got += wire.split(forked.records.recv(1 << 17))[0]
        forked.link.send(wire.record(wire.ACK, JOB + 1, b"%d" % size(JOB + 1, got)))
    forked.done(JOB + 1, got)
    assert trimmed.exists()
    assert forked.close() == 0


def test_a_spare_records_its_next_job_in_the_journal_the_launcher_passes(
    forked: Forked, tmp_path: Path
) -> None:
    forked.done(JOB, forked.run(JOB, forked.job(JOB, "true")))
    fds = sorted(os.listdir(f"/proc/{forked.pid}/fd"))
    rewritten = tmp_path / "journal.new"
    fd = os.open(rewritten, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fd.to_bytes(4, sys.byteorder))]
    forked.link.sendmsg([wire.record(wire.JOURNAL, 0)], rights)  # as the launcher's compaction
    os.close(fd)
    forked.done(JOB + 1, forked.run(JOB + 1, forked.job(JOB + 1, "true")))
    assert journal.live(str(rewritten)).keys() == {JOB + 1}
    assert journal.live(str(tmp_path / "journal")).keys() == {JOB}
    assert sorted(os.listdir(f"/proc/{forked.pid}/fd")) == fds  # in the old one's place
    assert forked.close() == 0
