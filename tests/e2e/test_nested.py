"""``flux start CMD`` (and ``flux broker CMD``) in a job's task runs a nested pflux
instance over the job's resources, as flux-core's (Parsl and Maestro launch their
workers so): CMD reaches the nested instance, exits with CMD's status, and leaves
the enclosing instance's queue as it was."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from pflux.api import Client
from pflux.spec.fluid import JobID
from support.instance import console, fails, ok, pflux

HOLD = "--setattr=system.exec.test.run_duration=0s"  # runs (no process) until canceled


def run(uri: str, *args: str) -> tuple[int, str, str]:
    proc = pflux(uri, "run", *args, script=True)
    return proc.returncode, proc.stdout, proc.stderr


def test_a_jobs_flux_start_runs_its_command_in_a_nested_instance(uri: str) -> None:
    rc, out, err = run(
        uri, "-n1", "-c2", "flux", "start", "flux", "run", "-n2", "--label-io", "echo", "x"
    )
    assert rc == 0, err
    assert sorted(out.splitlines()) == ["0: x", "1: x"]


def test_the_nested_instance_has_the_jobs_cores_and_flux_attributes(uri: str) -> None:
    script = (
        "flux resource list -n -s free -o '{ncores} {ngpus}';"
        " for a in instance-level jobid parent-uri jobid-path; do flux getattr $a; done;"
        ' echo "$FLUX_ENCLOSING_ID ${FLUX_JOB_ID-unset} ${FLUX_KVS_NAMESPACE-unset}"'
    )
    rc, out, err = run(uri, "-n1", "-c3", "flux", "start", "sh", "-c", script)
    assert rc == 0, err
    counts, level, jobid, parent, path, env = out.splitlines()
    assert counts == "3 0"  # the job's 3 cores, not the enclosing instance's 4
    assert level == "1"
    assert parent == uri
    assert path == f"/{jobid}"
    assert env == f"{jobid} unset unset"  # as flux-core's: the job is the enclosing one


def test_what_the_nested_instance_does_stays_there(uri: str) -> None:
    script = "flux queue disable nested; flux queue stop; flux queue drain; exit 3"
    rc, _, err = run(uri, "-c1", "flux", "broker", "sh", "-c", script)
    assert rc == 3, err  # the nested instance exits with its command's status
    status = pflux(uri, "queue", "status").stdout
    assert status == "Job submission is enabled\nScheduling is started\n"


def test_a_job_whose_resources_cannot_be_read_is_said_so(uri: str) -> None:
    leaked = {"FLUX_JOB_ID": "ƒ2", "PFLUX_URI": uri, "PFLUX_KVS_NAMESPACE": "job-x"}
    proc = console("start", "true", **leaked)  # no such job in the enclosing instance
    assert proc.returncode == 1
    assert proc.stderr == (
        "pflux-start: ERROR: cannot read the resources of job ƒ2 (FLUX_JOB_ID) from its"
        f" instance ({uri}): job ƒ2 not found\n"
    )


@pytest.fixture
def nested(uri: str, client: Client) -> Iterator[tuple[JobID, str]]:
    """A running job's nested instance, once it has posted its URI (the memo event)."""
    jobid = JobID.parse(ok(uri, "submit", "flux", "start", "sleep", "60").strip())
    event = client.wait_event(jobid, "memo")
    yield jobid, event.context["uri"]
    client.cancel(jobid)
    client.wait(jobid)


def test_a_nested_instance_posts_its_uri_to_its_job(uri: str, nested: tuple[JobID, str]) -> None:
    jobid, posted = nested
    with Client(posted) as inner:
        assert inner.attrs()["jobid"] == jobid.f58  # the URI is the nested instance's
    assert ok(uri, "uri", jobid.f58) == f"{posted}\n"
    assert ok(uri, "uri", f"jobid:{jobid.f58}") == f"{posted}\n"
    assert ok(uri, "uri", f"jobid:{jobid.f58}/..") == f"{uri}\n"  # back up from inside
    assert ok(posted, "uri", "jobid:/") == ok(posted, "uri", "jobid:..") == f"{uri}\n"
    assert (
        ok(uri, "jobs", "-no", "{id.f58} {uri} {uri.local}") == f"{jobid.f58} {posted} {posted}\n"
    )
    listed = json.loads(ok(uri, "jobs", "--json", jobid.f58))
    assert listed["uri"] == posted  # at the top, as flux's, and not again in annotations
    assert "uri" not in listed["annotations"].get("user", {})


def test_uri_of_a_job_that_runs_no_instance_says_why(uri: str, client: Client) -> None:
    plain = JobID.parse(ok(uri, "submit", HOLD, "true").strip())
    client.wait_event(plain, "start")
    assert fails(uri, "uri", plain.f58) == f"pflux-uri: ERROR: URI not found for job {plain.f58}\n"
    client.cancel(plain)
    client.wait(plain)
    assert fails(uri, "uri", plain.f58) == f"pflux-uri: ERROR: jobid {plain.f58} is not running\n"
    assert fails(uri, "uri", "ƒ111") == "pflux-uri: ERROR: jobid ƒ111 not found\n"
    assert fails(uri, "uri", "jobid:x!") == "pflux-uri: ERROR: x! is not a valid jobid\n"


def test_uri_wait_waits_for_the_job_to_post_its_uri(uri: str, client: Client) -> None:
    jobid = JobID.parse(ok(uri, "submit", "flux", "start", "sleep", "60"))
    waited = ok(uri, "uri", "--wait", "--local", jobid.f58)  # before the memo, as a rule
    posted = client.wait_event(jobid, "memo").context["uri"]
    assert waited == f"{posted}\n"
    client.cancel(jobid)
    client.wait(jobid)
    plain = JobID.parse(ok(uri, "submit", "true"))  # ends without posting one
    assert fails(uri, "uri", "--wait", plain.f58) == (
        f"pflux-uri: ERROR: URI not found for job {plain.f58}\n"
    )
    assert fails(uri, "uri", "--wait", "ƒ111") == "pflux-uri: ERROR: jobid ƒ111 not found\n"


def test_an_instance_that_cannot_post_its_uri_stops(uri: str, client: Client) -> None:
    ended = JobID.parse(ok(uri, "submit", "true"))
    client.wait(ended)  # R is there to read, but an inactive job takes no memo
    leaked = {"FLUX_JOB_ID": ended.f58, "PFLUX_URI": uri, "PFLUX_KVS_NAMESPACE": "job-x"}
    proc = console("start", "echo", "never", **leaked)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == "pflux-start: ERROR: job-manager.memo uri: job is inactive\n"
