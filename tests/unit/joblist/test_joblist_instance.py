"""job-list in a real instance (kvs, job-manager, sched, job-exec in test mode) and `pflux jobs`.

The instance is ``pflux start`` on a state directory, running a shell that
prints its URI and waits on stdin; closing stdin ends it, and starting again
on the same directory restarts it, so job-list must rebuild from the journal's
backlog what it had learned live.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from pflux.api import Client
from pflux.spec.fluid import JobID
from support.instance import LiveInstance, console, jobspec


@contextmanager
def instance(state: Path) -> Iterator[str]:
    """The instance on ``state`` (2 cores): its URI; it must shut down cleanly."""
    with LiveInstance(state, cores=2) as live:
        yield live.uri
        assert live.stop() == 0


def job(run_duration: str = "0.01s", **test: Any) -> dict[str, Any]:
    """A test-mode job whose name, as the listings show it, is ``work``."""
    return jobspec(run_duration, command=["/bin/work"], **test)


def pflux_jobs(uri: str, *args: str) -> subprocess.CompletedProcess[str]:
    return console("jobs", *args, PFLUX_URI=uri)


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("joblist") / "state"


@pytest.fixture(scope="module")
def jobs(state: Path) -> Iterator[tuple[str, dict[str, JobID]]]:
    """The instance, with one job of each kind."""
    with instance(state) as uri, Client(uri) as client:
        ids = {
            "done": client.submit(job()),
            "failed": client.submit(job(wait_status=256)),
            "canceled": client.submit(job(), urgency="hold"),
        }
        for name in ("done", "failed"):
            client.wait(ids[name])
        client.cancel(ids["canceled"], "not today")
        client.wait(ids["canceled"])
        ids["running"] = client.submit(job("0"))
        client.wait_event(ids["running"], "start")
        ids["held"] = client.submit(job(), urgency="hold")
        client.wait_event(ids["held"], "priority")
        yield uri, ids
        client.cancel(ids["running"])
        client.cancel(ids["held"])
        client.drain()


def test_list_id_right_after_submit(jobs: tuple[str, dict[str, JobID]]) -> None:
    uri, _ = jobs
    with Client(uri) as client:
        for _ in range(20):
            jobid = client.submit(job())
            assert client.job_info(jobid, ["userid"]).to_dict() == {
                "id": jobid,
                "userid": os.getuid(),
            }
            client.wait(jobid)  # leave only the module's pending and running jobs


def test_default_listing(jobs: tuple[str, dict[str, JobID]]) -> None:
    uri, ids = jobs
    proc = pflux_jobs(uri)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["JOBID", "USER", "NAME", "ST", "NTASKS", "NNODES", "TIME", "INFO"]
    rows = [line.split() for line in lines[1:]]
    assert [row[0] for row in rows] == [str(ids["held"]), str(ids["running"])]
    assert rows[0][2:] == ["work", "S", "1", "-", "-", "held"]
    assert rows[1][2:5] == ["work", "R", "1"]


def test_all_and_filters(jobs: tuple[str, dict[str, JobID]]) -> None:
    uri, ids = jobs
    out = pflux_jobs(uri, "-a", "-n", "-o", "{id.dec} {status}").stdout
    shown = dict(line.split() for line in out.splitlines())
    for name, status in [
        ("done", "COMPLETED"),
        ("failed", "FAILED"),
        ("canceled", "CANCELED"),
        ("running", "RUN"),
        ("held", "SCHED"),
    ]:
        assert shown[ids[name].dec] == status
    failed = pflux_jobs(uri, "-f", "failed,CANCELED", "-n", "-o", "{id}").stdout.split()
    assert failed == [str(ids["canceled"]), str(ids["failed"])]


def test_json_for_one_job(jobs: tuple[str, dict[str, JobID]]) -> None:
    uri, ids = jobs
    job = json.loads(pflux_jobs(uri, "--json", ids["canceled"].f58).stdout)
    assert job["id"] == ids["canceled"]
    assert job["result"] == "CANCELED"
    assert job["returncode"] == -128
    assert job["exception"] == {
        "occurred": True,
        "severity": 0,
        "type": "cancel",
        "note": "not today",
    }
    unknown = pflux_jobs(uri, "ƒ2")
    assert (unknown.returncode, unknown.stderr) == (1, "JobID ƒ2 unknown\n")


def test_restart_rebuilds_the_same_list(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with instance(state) as uri, Client(uri) as client:
        done = [client.submit(job(wait_status=256 * i)) for i in range(3)]
        for jobid in done:
            client.wait(jobid)
        held = client.submit(job(), urgency="hold")
        client.wait_event(held, "priority")
        before = client.list_jobs(max_entries=0)
    with instance(state) as uri, Client(uri) as client:
        after = client.list_jobs(max_entries=0)
        client.cancel(held)
    assert [job.id for job in before] == [held, *reversed(done)]
    assert after == before
