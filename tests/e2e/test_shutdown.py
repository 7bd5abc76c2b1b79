"""``pflux shutdown``: it prints the instance's log as it stops, and the jobs it
cancels keep the reason across a restart; pending jobs wait for the next start."""

from __future__ import annotations

from pathlib import Path

from pflux.api import Client
from pflux.spec.fluid import JobID
from support.instance import LiveInstance, console, held, ok


def test_shutdown_cancels_running_jobs_and_says_why(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with LiveInstance(state) as live:
        running = JobID.parse(ok(live.uri, "submit", "sleep", "300"))
        with Client(live.uri) as client:
            client.wait_event(running, "start")
            pending = held(client)
        proc = console("shutdown", PFLUX_URI=live.uri)
        assert proc.returncode == 0, proc.stderr
        lines = proc.stderr.splitlines()
        assert lines[:3] == [
            "broker.info[0]: shutdown started",
            "broker.info[0]: canceled 1 running job",
            "broker.info[0]: no job is running",
        ]
        assert "broker.info[0]: stopping services" in lines
        live.stop()
    with LiveInstance(state) as live:
        fields = "{id.f58} {state} {result} {exception.type} {exception.note}"
        out = ok(live.uri, "jobs", "-a", "-n", "-o", fields)
        shown = {line.split()[0]: line.split(None, 1)[1] for line in out.splitlines()}
        assert shown[running.f58] == "INACTIVE CANCELED cancel instance shutdown"
        assert shown[pending.f58].startswith("SCHED")


def test_shutdown_quiet_and_background(tmp_path: Path) -> None:
    with LiveInstance(tmp_path / "state") as live:
        proc = console("shutdown", "--quiet", PFLUX_URI=live.uri)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == ""  # only warnings and errors, and there were none
        live.stop()
    with LiveInstance(tmp_path / "state") as live:
        proc = console("shutdown", "--background", PFLUX_URI=live.uri)
        assert (proc.returncode, proc.stderr) == (0, "")
        live.stop()
    assert "--quiet and --verbose" in console("shutdown", "--quiet", "-v").stderr
