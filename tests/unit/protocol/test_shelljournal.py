"""The launcher's journal of job shell sessions: reading, killing what it names, compacting."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.protocol import shelljournal as journal

BOOT = journal.boot_id().encode()


def test_a_start_without_its_end_is_live(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    path.write_bytes(
        journal.start_line(1, 100, 5, BOOT)
        + journal.start_line(2, 200, 6, BOOT)
        + journal.end_lines([1])
        + b"S 3 garbage\nnonsense\n\nE x\nS 4 400 7 b"  # damage, and a partial last line
    )
    assert journal.live(str(path)) == {
        2: (200, 6, BOOT.decode(), False),
        4: (400, 7, "b", False),
    }
    assert journal.live(str(tmp_path / "none")) == {}


@settings(max_examples=100)
@given(st.binary(max_size=200))
def test_reading_any_bytes_raises_nothing(data: bytes) -> None:
    import tempfile

    with tempfile.NamedTemporaryFile() as f:
        f.write(data)
        f.flush()
        assert isinstance(journal.live(f.name), dict)


# A session leader that records itself as a job shell does: after it started, before its tasks.
LEADER = """
import subprocess, sys, time
print(time.clock_gettime_ns(time.CLOCK_BOOTTIME), flush=True)
sleeps = [subprocess.Popen(["sleep", "100"]) for _ in range(2)]
sleeps[0].wait()
"""


def test_a_session_is_killed_whole_and_the_journal_removed(tmp_path: Path) -> None:
    session = subprocess.Popen(
        [sys.executable, "-c", LEADER], start_new_session=True, stdout=subprocess.PIPE
    )
    assert session.stdout is not None
    with session.stdout:
        when = int(session.stdout.readline())
    path = tmp_path / "journal"
    path.write_bytes(journal.start_line(9, session.pid, when, BOOT))
    members = []
    deadline = time.monotonic() + 10
    while len(members) < 3 and time.monotonic() < deadline:  # the leader and its two sleeps
        members = [
            int(p)
            for p in os.listdir("/proc")
            if p.isdigit() and (stat := journal.proc_stat(int(p))) and stat[0] == session.pid
        ]
    assert journal.kill_recorded(str(path)) == ([9], [])
    assert session.wait(timeout=5) == -9
    assert all(journal.proc_stat(pid) is None for pid in members)
    assert not path.exists()


def test_killing_some_jobs_records_their_end(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    path.write_bytes(journal.start_line(1, 1 << 22, 0, b"gone") + journal.start_line(2, 1, 0, b"x"))
    assert journal.kill_recorded(str(path), [1, 3]) == ([1], [])
    assert journal.live(str(path)) == {2: (1, 0, "x", False)}


def test_compact_keeps_the_live_shells_on_the_same_descriptor(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, journal.start_line(1, 11, 5, BOOT) + journal.start_line(2, 22, 6, BOOT))
        os.write(fd, journal.end_lines([1]) * 1000)
        me = os.getpid()  # alive, and not recorded yet: its line comes from /proc
        journal.compact(str(path), fd, {2: 22, 3: me, 4: 1 << 22})
        entries = journal.live(str(path))
        assert entries[2] == (22, 6, BOOT.decode(), False)
        assert set(entries) == {2, 3}
        os.write(fd, journal.end_lines([2]))  # the descriptor now writes the new file
        assert set(journal.live(str(path))) == {3}
    finally:
        os.close(fd)


def test_a_job_given_to_a_shell_is_live_until_the_shell_records_itself_or_ends(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal"
    path.write_bytes(journal.given_line(1, 100, 5, BOOT) + journal.given_line(2, 200, 6, BOOT))
    assert journal.live(str(path)) == {
        1: (100, 5, BOOT.decode(), True),
        2: (200, 6, BOOT.decode(), True),
    }
    with open(path, "ab") as f:
        f.write(journal.start_line(1, 100, 7, BOOT) + journal.end_lines([2]))
    assert journal.live(str(path)) == {1: (100, 7, BOOT.decode(), False)}


def test_a_shell_given_a_job_runs_while_its_process_lives_session_or_not(tmp_path: Path) -> None:
    """The spare may not lead its session yet; a reused pid, started since, is not it."""
    spare = subprocess.Popen(["sleep", "100"])  # not a session leader
    try:
        when = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
        path = tmp_path / "journal"
        path.write_bytes(journal.given_line(5, spare.pid, when, BOOT))
        assert journal.alive(str(path)) == {5}
        entry = journal.live(str(path))[5]
        assert not journal.runs((*entry[:3], False))  # an S line needs its session
        assert not journal.runs((spare.pid, 0, BOOT.decode(), True))  # started after the line
        assert journal.kill_recorded(str(path), [5]) == ([5], [])
        assert spare.wait(timeout=5) == -9
        assert journal.alive(str(path)) == set()
    finally:
        spare.kill()
        spare.wait()


def test_compact_keeps_a_job_given_and_not_recorded_as_started(tmp_path: Path) -> None:
    """Its shell may record itself in the old file, which nobody reads again."""
    path = tmp_path / "journal"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, journal.given_line(1, 11, 5, BOOT) + journal.end_lines([9]) * 1000)
        journal.compact(str(path), fd, {1: 11})
        assert journal.live(str(path)) == {1: (11, 5, BOOT.decode(), False)}
    finally:
        os.close(fd)


def test_a_job_asked_for_is_live_with_no_process_until_a_shell_is_given_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal"
    path.write_bytes(journal.asked_line(1) + journal.asked_line(2) + journal.asked_line(3))
    assert journal.live(str(path)) == {k: (0, 0, "", True) for k in (1, 2, 3)}
    assert journal.alive(str(path)) == set()
    with open(path, "ab") as f:
        f.write(journal.given_line(1, 100, 5, BOOT) + journal.start_line(2, 200, 6, BOOT))
        f.write(journal.asked_line(2) + journal.end_lines([3]))  # not over a shell's line
    assert journal.live(str(path)) == {
        1: (100, 5, BOOT.decode(), True),
        2: (200, 6, BOOT.decode(), False),
    }
    assert journal.kill_recorded(str(path), [1, 2]) == ([1, 2], [])


def test_compact_keeps_the_jobs_asked_for_that_no_shell_has_yet(tmp_path: Path) -> None:
    """Its launcher has not read the request yet: a restart may start the job."""
    path = tmp_path / "journal"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, journal.asked_line(1) + journal.asked_line(2) + journal.asked_line(3))
        os.write(fd, journal.asked_line(4, 77))  # another rank's, its exec-node's incarnation
        os.write(fd, journal.given_line(2, 22, 5, BOOT) + journal.end_lines([3]) * 1000)
        assert journal.compact(str(path), fd, {2: 22})
        assert journal.live(str(path)) == {
            1: (0, 0, "", True),
            2: (22, 5, BOOT.decode(), False),
            4: (0, 77, "", True),
        }
    finally:
        os.close(fd)


def test_a_line_appended_during_a_compaction_is_in_the_new_file(tmp_path: Path) -> None:
    """The appender holds the file shared while it writes: compaction waits for it, and a
    line appended to the file compaction replaced is written again to the new one."""
    path = tmp_path / "journal"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    appender = journal.Appender(str(path))
    try:
        os.write(fd, journal.end_lines([9]) * 1000)
        appender.append(journal.asked_line(1))  # opens the file compaction will replace
        fcntl.flock(appender.fd, fcntl.LOCK_SH)  # as while it writes
        assert not journal.compact(str(path), fd, {})  # not now: tried again later
        fcntl.flock(appender.fd, fcntl.LOCK_UN)
        assert journal.compact(str(path), fd, {})
        appender.append(journal.asked_line(2))
        assert journal.live(str(path)) == {k: (0, 0, "", True) for k in (1, 2)}
        assert path.read_bytes() == journal.asked_line(1) + journal.asked_line(2)
    finally:
        appender.close()
        os.close(fd)


@pytest.mark.parametrize(
    ("call", "after"),
    [("write", False), ("write", True), ("rename", False), ("rename", True), ("dup2", True)],
)
def test_a_compaction_killed_at_any_point_loses_no_line(
    tmp_path: Path, call: str, after: bool
) -> None:
    """SIGKILL before or after each of its writes: one whole journal is left."""
    path = tmp_path / "journal"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, journal.asked_line(1) + journal.given_line(2, 22, 5, BOOT))
        os.write(fd, journal.asked_line(3) + journal.end_lines([3, 9]) * 1000)
        pid = os.fork()
        if pid == 0:  # the launcher, killed at that point of its compaction
            real = getattr(os, call)

            def killed(*args: object) -> object:
                if not after:
                    os.kill(os.getpid(), signal.SIGKILL)
                done = real(*args)
                os.kill(os.getpid(), signal.SIGKILL)
                return done

            setattr(os, call, killed)
            journal.compact(str(path), fd, {2: 22})
            os._exit(0)
        assert os.waitpid(pid, 0)[1] == signal.SIGKILL
    finally:
        os.close(fd)
    entries = journal.live(str(path))
    assert entries[1] == (0, 0, "", True)
    assert entries[2][:3] == (22, 5, BOOT.decode())
    assert set(entries) == {1, 2}
