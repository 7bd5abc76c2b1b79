"""Durability: kill -9 the instance with jobs pending and running, restart it, lose nothing.

Every id a submit acknowledged must come back, reach INACTIVE exactly once,
and never run twice; pending jobs run after the restart, and the jobs that were
running end with an exception that says the instance restarted.
"""

from __future__ import annotations

import os
from pathlib import Path

from pflux.api import Client, jobspec_of
from pflux.spec.eventlog import parse
from support.instance import LiveInstance, jobspec

PENDING = 500


def running_marker(tmp: Path) -> dict[str, object]:
    """A real job that records its pid and then sleeps past the test."""
    script = f"echo $$ > {tmp}/pid-$FLUX_JOB_ID; exec sleep 300"
    return jobspec_of(["sh", "-c", script], environment={"PATH": os.environ["PATH"]})


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_kill_9_loses_no_job(tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = LiveInstance(state, cores=2)
    with Client(first.uri) as client:
        running = client.submit_many([running_marker(tmp_path)] * 2)
        for jobid in running:
            client.wait_event(jobid, "start")
        pending = client.submit_many([jobspec("0.001s")] * PENDING)
        pids = [int((tmp_path / f"pid-{jobid}").read_text()) for jobid in running]
    first.kill()

    second = LiveInstance(state, cores=2)
    try:
        with Client(second.uri) as client:
            client.handle.call("job-manager.drain", {})
            for jobid in [*running, *pending]:
                log = client.handle.call(
                    "job-info.lookup", {"id": int(jobid), "keys": ["eventlog"]}
                )
                names = [e.name for e in parse(log["eventlog"])]
                assert names.count("clean") == 1, (jobid, names)
                assert names.count("flux-restart") <= 1, (jobid, names)
                assert names.count("start") <= 1, (jobid, names)
            for jobid in pending:
                assert client.wait(jobid).success, jobid
            for jobid in running:
                result = client.wait(jobid)
                assert not result.success
                assert "restarted" in result.errstr, result.errstr
            # the tasks of the jobs that were running are gone: nothing runs twice
            assert not [pid for pid in pids if alive(pid)]
            listed = {job["id"] for job in client.list_jobs(attrs=["state"])}
            assert {int(j) for j in [*running, *pending]} <= listed
    finally:
        second.stop()
