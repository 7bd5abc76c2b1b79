"""``flux job hostpids``: host:pid of each task of a running job, from what its shells
said when the tasks started, and flux's errors."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

from support.instance import LiveInstance, fails, ok


def test_hostpids_names_each_task(instance: LiveInstance, tmp_path: Path) -> None:
    uri = instance.uri
    marks = tmp_path / "pids"
    marks.mkdir()
    script = f"echo $$ > {marks}/$FLUX_TASK_RANK; exec sleep 60"
    jobid = ok(uri, "submit", "-n3", "sh", "-c", script).strip()
    try:
        ok(uri, "job", "wait-event", "-p", "exec", jobid, "shell.start")
        found = ok(uri, "job", "hostpids", jobid).strip().split(",")
        assert len(found) == 3
        for rank, entry in enumerate(found):
            host, _, pid = entry.partition(":")
            assert host in (socket.gethostname(), os.uname().nodename)
            # each task's pid, in task rank order (the shell's exec keeps its pid)
            assert pid == _written(marks / str(rank))
        some = ok(uri, "job", "hostpids", "-r", "0,2", "-d", "\\n", jobid)
        assert some.splitlines() == [found[0], found[2]]
    finally:
        ok(uri, "cancel", jobid)
    ok(uri, "job", "wait-event", jobid, "clean")
    assert f"hostpids: job {jobid} is inactive" in fails(uri, "job", "hostpids", jobid)


def _written(path: Path) -> str:
    """What a task wrote to ``path`` (it may not have run that far yet)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = path.read_text().strip() if path.exists() else ""
        if text:
            return text
        time.sleep(0.01)  # a file gives no event to wait on
    raise AssertionError(f"{path}: nothing written")


def test_hostpids_errors(instance: LiveInstance) -> None:
    uri = instance.uri
    assert "f123: No such job" in fails(uri, "job", "hostpids", "f123")
    held = ok(uri, "submit", "--urgency=0", "true").strip()
    try:
        err = fails(uri, "job", "hostpids", "-t", "0.2s", held)
        assert "hostpids: timeout waiting for shell.start event" in err
        assert "--ranks=x" in fails(uri, "job", "hostpids", "-r", "x", held)
    finally:
        ok(uri, "cancel", held)


def test_hostpids_are_known_after_a_restart_takes_the_job_over(tmp_path: Path) -> None:
    """The tasks' pids are kept with where job-exec stands: a job-exec that takes a
    running job over knows them, though STARTED was behind the point it resumed from."""
    state = tmp_path / "state"
    first = LiveInstance(state)
    jobid = ok(first.uri, "submit", "sleep", "300").strip()
    try:
        ok(first.uri, "job", "wait-event", "-p", "exec", jobid, "shell.start")
        before = ok(first.uri, "job", "hostpids", jobid).strip()
        first.kill()
        with LiveInstance(state) as again:
            ok(again.uri, "job", "wait-event", "-t", "60", "-p", "exec", jobid, "reattach")
            assert ok(again.uri, "job", "hostpids", jobid).strip() == before
            ok(again.uri, "cancel", jobid)
            ok(again.uri, "job", "wait-event", "-t", "60", jobid, "clean")
    finally:
        if first.proc.poll() is None:
            first.stop()
