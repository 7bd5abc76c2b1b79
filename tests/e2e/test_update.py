"""``pflux update`` end to end: pending jobs' jobspecs, running jobs' time limits.

A running job's new duration must reach every part that keeps time: the
eventlog (``jobspec-update`` and ``resource-update``), R as ``job info`` and
``pflux jobs`` show it, the scheduler (a pending job's start estimate moves)
and job-exec, whose ``timelimit`` exception must fire at the new expiration,
not the old one. Jobs that must outlive a time are real processes blocked
on a FIFO the test writes; a job that must pass its old limit unharmed is
released only once a witness job with a later limit has timed out, so no
test sleeps.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pflux.api import Client, jobspec_of
from pflux.spec.eventlog import Event
from pflux.spec.fluid import JobID
from support.instance import fails, jobspec, ok, quiesce

NOTE = "resource allocation expired"


@pytest.fixture(autouse=True)
def _clean(client: Client) -> Iterator[None]:
    yield
    quiesce(client)


def real(*command: str, duration: float | None = None, **options: Any) -> dict[str, Any]:
    return jobspec_of(
        list(command), environment={"PATH": "/usr/bin:/bin"}, duration=duration, **options
    )


def times(uri: str, jobid: JobID) -> tuple[float, float]:
    """R's starttime and expiration, as ``pflux job info ID R`` shows R (updates applied)."""
    execution = json.loads(ok(uri, "job", "info", str(jobid), "R"))["execution"]
    return execution["starttime"], execution["expiration"]


def named(client: Client, jobid: JobID, name: str) -> list[Event]:
    return [e for e in client.events(jobid, follow=False) if e.name == name]


def blocked(tmp_path: Path, name: str) -> tuple[list[str], Path]:
    """A command that exits 0 once its FIFO is written."""
    fifo = tmp_path / name
    os.mkfifo(fifo)
    return ["sh", "-c", f"read x < {fifo}"], fifo


def release(fifo: Path) -> None:
    with fifo.open("w") as f:
        f.write("go\n")


def test_extending_a_running_job_lets_it_run_past_its_original_limit(
    uri: str, client: Client, tmp_path: Path
) -> None:
    command, fifo = blocked(tmp_path, "extend")
    jobid = client.submit(real(*command, duration=3))
    client.wait_event(jobid, "start")
    start, old = times(uri, jobid)
    assert old == pytest.approx(start + 3)
    ok(uri, "update", str(jobid), "duration=+1m")
    # a witness whose limit is later than the job's old one: once it times out, so would the job
    later = jobspec("0")  # test mode: runs until its limit
    later["attributes"]["system"]["duration"] = 3
    witness = client.submit(later)
    assert (client.wait_event(witness, "exception").context or {})["type"] == "timelimit"
    assert time.time() > old
    release(fifo)
    result = client.wait(jobid)
    assert result.success, result.errstr
    assert times(uri, jobid) == (start, pytest.approx(start + 63))
    [update] = named(client, jobid, "jobspec-update")
    assert update.context == {"attributes.system.duration": 63.0}
    [resource] = named(client, jobid, "resource-update")
    assert resource.context == {"expiration": pytest.approx(start + 63)}
    assert not named(client, jobid, "exception")


def test_shortening_a_running_job_kills_it_at_the_new_expiration(uri: str, client: Client) -> None:
    jobid = client.submit(real("sleep", "60", duration=60))
    client.wait_event(jobid, "start")
    start, _ = times(uri, jobid)
    duration = time.time() - start + 1.0  # one second from now
    ok(uri, "update", str(jobid), f"duration={duration}")
    _, expiration = times(uri, jobid)
    exception = client.wait_event(jobid, "exception")
    assert exception.context == {"type": "timelimit", "severity": 0, "note": NOTE}
    assert expiration - 0.05 <= exception.timestamp < expiration + 5
    result = client.wait(jobid)
    assert result.errstr == f"Fatal exception type=timelimit {NOTE}"
    [finish] = named(client, jobid, "finish")
    assert (finish.context or {})["status"] == (128 + 14) << 8  # SIGALRM, as flux-core sends


def test_pflux_jobs_and_the_scheduler_see_the_new_expiration(uri: str, client: Client) -> None:
    # the running job holds every core, so the pending one's start estimate is its expiration
    running = client.submit(real("sleep", "60", duration=60, num_tasks=4))
    client.wait_event(running, "start")
    pending = client.submit(real("true", duration=10))
    client.wait_event(pending, "priority")
    _, old = times(uri, running)
    journal = client.handle.rpc("job-manager.events-journal", {}, streaming=True)
    client.handle.flush()  # subscribed before the update
    ok(uri, "update", str(running), "duration=+2m")
    assert times(uri, running)[1] == pytest.approx(old + 120)
    listed = ok(uri, "jobs", "-n", "-o", "{expiration}", str(running))
    assert float(listed) == pytest.approx(old + 120)
    # the scheduler re-estimates the pending job's start from the running job's new expiration
    while True:
        payload = journal.get(timeout=30)
        estimates = [
            entry["entry"]["context"]["sched"].get("t_estimate")
            for entry in payload["events"]
            if entry["id"] == pending and entry["entry"]["name"] == "annotations"
        ]
        if any(t == pytest.approx(old + 120) for t in estimates):
            break
    out = ok(uri, "jobs", "-n", "-o", "{annotations.sched.t_estimate}", str(pending))
    assert float(out) == pytest.approx(old + 120)


def test_unlimited_and_back(uri: str, client: Client) -> None:
    jobid = client.submit(real("sleep", "60", duration=60))
    client.wait_event(jobid, "start")
    ok(uri, "update", str(jobid), "duration=0")
    assert times(uri, jobid)[1] == 0
    err = fails(uri, "update", str(jobid), "duration=+1m")
    assert f"duration for {jobid} is unlimited, can't update by +1m" in err


def test_pending_jobs_take_a_duration_update(uri: str, client: Client) -> None:
    jobid = client.submit(real("true", duration=300), urgency="hold")
    assert ok(uri, "update", "-n", str(jobid), "duration=-1m", "name=renamed") == (
        '{"attributes.system.duration": 240.0, "attributes.system.job.name": "renamed"}\n'
    )
    out = ok(uri, "update", "-v", "--wait", str(jobid), "duration=-1m")
    assert out == ""
    [update] = named(client, jobid, "jobspec-update")
    assert update.context == {"attributes.system.duration": 240.0}
    assert not named(client, jobid, "resource-update")  # nothing allocated yet
    current = json.loads(ok(uri, "job", "info", str(jobid), "jobspec"))
    assert current["attributes"]["system"]["duration"] == 240.0


@pytest.mark.parametrize(
    ("update", "message"),
    [
        ("duration=-1h", "current duration for {id} (5m) cannot be reduced by 1h"),
        ("duration=bogus", 'invalid Flux standard duration "bogus"'),
        ("duration=-5m", "current duration for {id} (5m) cannot be reduced by 5m"),
        ("resources.0.count=2", "update of resources.0.count not supported"),
        ("bogus=1", "update of attributes.system.bogus not supported"),
        ("name=renamed", "update of attributes.system.job.name not supported"),
        ("duration=1m name=x", "update of attributes.system.job.name not supported"),
        ("queue=batch", "'batch' is not a valid queue"),
        ("noequals", "noequals: an update must be KEY=VALUE"),
    ],
)
def test_bad_updates_of_a_pending_job(uri: str, client: Client, update: str, message: str) -> None:
    jobid = client.submit(real("true", duration=300), urgency="hold")
    err = fails(uri, "update", str(jobid), *update.split())
    assert err.startswith("pflux-update: ERROR: ")
    assert message.format(id=jobid) in err
    assert not named(client, jobid, "jobspec-update")


def test_bad_updates_of_a_running_job(uri: str, client: Client) -> None:
    jobid = client.submit(real("sleep", "60", duration=60))
    client.wait_event(jobid, "start")
    past = fails(uri, "update", str(jobid), "duration=0.001")
    assert "requested duration places job expiration in the past" in past
    name = fails(uri, "update", str(jobid), "name=x")
    assert "update of attributes.system.job.name not supported" in name
    queue = fails(uri, "update", str(jobid), "queue=batch")
    assert "update of queue for running job not supported" in queue
    assert not named(client, jobid, "jobspec-update")
    client.cancel(jobid)
    client.wait(jobid)
    assert f"job {jobid} is inactive" in fails(uri, "update", str(jobid), "duration=1h")
    assert "not found" in fails(uri, "update", "ƒ2", "duration=1h")


def test_bad_update_requests(client: Client) -> None:
    from pflux.errors import RPCError

    jobid = client.submit(real("true"), urgency="hold")
    for updates, message in (
        ({}, "job-manager.update: updates: expected object of length >= 1"),
        ({"foo.bar": 1}, "'foo.bar': only attributes, resources and tasks keys can be updated"),
        ({"attributes.system.duration": -1}, "must be a number of seconds >= 0, not -1"),
        ({"attributes.system.duration": "1h"}, "must be a number of seconds >= 0, not '1h'"),
    ):
        with pytest.raises(RPCError, match=message.replace("(", r"\(")):
            client.handle.call("job-manager.update", {"id": int(jobid), "updates": updates})
