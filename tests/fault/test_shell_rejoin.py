"""The broker and the launcher killed together around a job shell's start, or while a
shell is too slow to rejoin the restarted instance in the first seconds.

A job the launcher had journalled as given to a shell, and that the shell never
received, or that job-exec had journalled as asked for and the launcher never read,
is started again by the restarted instance, once: none of its tasks had run; so is
one job-exec journalled while the launcher was compacting the journal. A
shell that still runs but rejoins late (stopped here with SIGSTOP) is waited for,
and its job finishes. The tests sequence themselves with FIFOs and the processes'
ends, never with sleeps.
"""

from __future__ import annotations

import os
import select
import signal
import time
from pathlib import Path

import pytest

from pflux.api import Client, jobspec_of
from pflux.exec.service import ORPHANS_WAIT
from pflux.protocol import shelljournal as journal
from pflux.protocol import shellwire as wire
from pflux.shell.launcher import JOURNAL_IDLE_LIMIT, STOP_AT_COMPACT, STOP_AT_SPAWN
from support.instance import LiveInstance, wait_exit


def launcher_of(instance: LiveInstance) -> int:
    """The pid of the instance's job shell launcher: the broker's child running
    ``pflux.shell.launcher`` (started with job-exec, before the instance is ready)."""
    with os.scandir("/proc") as entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                cmdline = Path(entry.path, "cmdline").read_bytes()
                ppid = int(Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == instance.proc.pid and b"pflux.shell.launcher" in cmdline:
                return int(entry.name)
    raise AssertionError("no job shell launcher")


def kill_with_launcher(instance: LiveInstance) -> None:
    """SIGKILL the broker and its launcher together (the broker stopped first, so it
    cannot start another launcher in between)."""
    launcher = launcher_of(instance)
    instance.proc.send_signal(signal.SIGSTOP)
    os.kill(launcher, signal.SIGKILL)
    wait_exit([launcher])
    instance.kill()


def restarted_it_runs_once(first: LiveInstance, state: Path, jobid: int, runs: Path) -> None:
    """Kill ``first`` with its launcher before job ``jobid`` ran anything, restart it on
    ``state``, and see the job succeed, started once, its command run once."""
    kill_with_launcher(first)
    assert not runs.exists()
    with LiveInstance(state, cores=2) as second, Client(second.uri) as client:
        result = client.wait(jobid)
        assert result.success, result.errstr
        names = [e.name for e in client.events(jobid, follow=False)]
        assert names.count("start") == 1, names
    assert runs.read_text() == "ran\n"  # once


def read_fifo(path: Path, timeout: float = 60.0) -> str:
    """What the first writer of the FIFO ``path`` wrote (select, not polling)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
        assert ready, f"{path}: nothing written in {timeout} s"
        return os.read(fd, 4096).decode()
    finally:
        os.close(fd)


def test_a_job_journalled_but_not_yet_given_to_its_shell_runs_once_after_the_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    stopped = tmp_path / "stopped"
    os.mkfifo(stopped)
    runs = tmp_path / "runs"
    monkeypatch.setenv(STOP_AT_SPAWN, str(stopped))
    first = LiveInstance(state, cores=2)
    monkeypatch.delenv(STOP_AT_SPAWN)
    with Client(first.uri) as client:
        spec = jobspec_of(
            ["sh", "-c", f"echo ran >> {runs}"], environment={"PATH": "/bin:/usr/bin"}
        )
        [jobid] = client.submit_many([spec])
        # the launcher has journalled the job (its one shell's key), and stopped
        assert int(read_fifo(stopped)) == wire.shell_key(jobid, 0)
        # job-exec has begun the job where the restart will read it
        client.wait_event(jobid, "starting", path="guest.exec.eventlog")
    restarted_it_runs_once(first, state, jobid, runs)


def test_a_job_whose_start_the_launcher_never_read_runs_once_after_the_restart(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    runs = tmp_path / "runs"
    first = LiveInstance(state, cores=2)
    os.kill(launcher_of(first), signal.SIGSTOP)  # it reads no job from now on
    with Client(first.uri) as client:
        spec = jobspec_of(
            ["sh", "-c", f"echo ran >> {runs}"], environment={"PATH": "/bin:/usr/bin"}
        )
        [jobid] = client.submit_many([spec])
        client.wait_event(jobid, "starting", path="guest.exec.eventlog")
    kill_with_launcher(first)
    with LiveInstance(state, cores=2) as second, Client(second.uri) as client:
        result = client.wait(jobid)
        assert result.success, result.errstr
    assert runs.read_text() == "ran\n"  # once


def test_a_live_shell_slow_to_rejoin_the_restarted_instance_is_waited_for(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    gate, pids = tmp_path / "gate", tmp_path / "pids"
    os.mkfifo(gate)
    script = f"echo $$ $PPID > {pids}; echo up; read x < {gate}; echo done"
    spec = jobspec_of(["sh", "-c", script], environment={"PATH": "/bin:/usr/bin"})
    first = LiveInstance(state, cores=2)
    with Client(first.uri) as client:
        [jobid] = client.submit_many([spec])
        client.wait_event(jobid, "data", match={"data": "up\n"}, path="guest.output")
    task, shell = map(int, pids.read_text().split())
    kill_with_launcher(first)
    os.kill(shell, signal.SIGSTOP)  # it cannot rejoin the next launcher until it continues
    began = time.monotonic()
    with LiveInstance(state, cores=2) as second, Client(second.uri) as client:
        try:
            # job-exec takes jobs once it has waited ORPHANS_WAIT for the shells
            [probe] = client.submit_many([jobspec_of(["true"])])
            assert client.wait(probe).success
            assert time.monotonic() - began >= ORPHANS_WAIT
            assert journal.proc_stat(task) is not None, "the stopped shell's task was killed"
        finally:
            os.kill(shell, signal.SIGCONT)
        with open(gate, "w") as f:
            f.write("go\n")
        result = client.wait(jobid)
        assert result.success, result.errstr
        output = "".join(
            (event.context or {}).get("data", "")
            for event in client.events(jobid, path="guest.output")
            if event.name == "data"
        )
        assert output == "up\ndone\n"
    wait_exit([task])


def test_a_job_asked_for_while_the_journal_is_compacted_runs_once_after_the_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    hook, go = tmp_path / "compact", tmp_path / "compact.go"
    os.mkfifo(hook)
    os.mkfifo(go)
    runs = tmp_path / "runs"
    monkeypatch.setenv(STOP_AT_COMPACT, str(hook))
    first = LiveInstance(state, cores=2)
    monkeypatch.delenv(STOP_AT_COMPACT)
    with (state / "exec" / "journal").open("ab") as f:  # worth compacting at the next end
        f.write(journal.end_lines([1]) * (JOURNAL_IDLE_LIMIT // 4 + 1))
    with Client(first.uri) as client:
        [ended] = client.submit_many([jobspec_of(["true"])])
        assert read_fifo(hook) == "compacting\n"  # the launcher waits, before its lock
        spec = jobspec_of(
            ["sh", "-c", f"echo ran >> {runs}"], environment={"PATH": "/bin:/usr/bin"}
        )
        [jobid] = client.submit_many([spec])
        # job-exec has journalled the job (Q), and asked the launcher, which has not read it
        client.wait_event(jobid, "starting", path="guest.exec.eventlog")
        with open(go, "w") as f:
            f.write("go\n")
        assert read_fifo(hook) == "compacted\n"  # and the launcher stops itself
        assert client.wait(ended).success
    assert journal.live(str(state / "exec" / "journal")) == {
        wire.shell_key(jobid, 0): (0, 0, "", True)
    }
    restarted_it_runs_once(first, state, jobid, runs)
