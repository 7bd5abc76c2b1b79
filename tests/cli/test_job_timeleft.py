"""``pflux job timeleft`` and ``flux.job.timeleft`` against a live instance: from inside
a job with a time limit, for a job named, for one pending, ended or unknown, and for
the instance itself (no limit), with flux-core's output and messages."""

from __future__ import annotations

import os
import sys
from textwrap import dedent

import pytest

from pflux import fluxshim
from pflux.api import Client
from pflux.spec.fluid import JobID
from support.instance import console, fails, held, jobspec, ok
from support.shim import run_flux

FLUX = os.path.join(fluxshim.BIN, "flux")


def test_a_job_reads_its_own_time_left(uri: str) -> None:
    script = f"{FLUX} job timeleft; {FLUX} job timeleft -H"
    proc = console(
        "run", "-t", "5m", "sh", "-c", script, PFLUX_URI=uri, PFLUX_PYTHON=sys.executable
    )
    assert proc.returncode == 0, proc.stderr
    seconds, human = proc.stdout.splitlines()
    assert 240 < int(seconds) <= 300
    assert human.endswith("m")
    assert 4.0 < float(human[:-1]) <= 5.0


def test_an_instance_run_as_a_job_has_the_jobs_time_left(uri: str) -> None:
    script = f"{FLUX} job timeleft; {FLUX} python -c 'import flux.job; print(flux.job.timeleft())'"
    proc = console(
        "alloc", "-n1", "-t", "5m", "sh", "-c", script, PFLUX_URI=uri, PFLUX_PYTHON=sys.executable
    )
    assert proc.returncode == 0, proc.stderr
    seconds, python = proc.stdout.splitlines()
    assert 240 < int(seconds) <= 300
    assert 240 < float(python) <= 300


def limited(client: Client) -> JobID:
    """A test-mode job running until killed, with a 10-minute time limit."""
    spec = jobspec("0")
    spec["attributes"]["system"]["duration"] = 600
    jobid = client.submit(spec)
    client.wait_event(jobid, "start")
    return jobid


def test_a_named_job_and_the_errors(uri: str, client: Client) -> None:
    running = limited(client)
    assert 500 < int(ok(uri, "job", "timeleft", running.f58)) <= 600
    pending = held(client)
    err = fails(uri, "job", "timeleft", pending.f58)
    assert err == f"pflux-job: ERROR: job {pending.f58} has not started\n"
    client.cancel(running)
    client.wait(running)
    assert ok(uri, "job", "timeleft", running.f58) == "0\n"
    assert ok(uri, "job", "timeleft", "-H", str(int(running))) == "0s\n"
    unknown = JobID(int(pending) + 1000000)
    assert (
        fails(uri, "job", "timeleft", unknown.f58)
        == f"pflux-job: ERROR: {unknown.f58}: no such jobid\n"
    )
    assert fails(uri, "job", "timeleft", "bad") == "pflux-job: ERROR: failed to parse jobid bad\n"
    client.cancel(pending)


def test_the_instance_has_no_limit(uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FLUX_JOB_ID", raising=False)
    assert ok(uri, "job", "timeleft") == "4294967295\n"
    assert ok(uri, "job", "timeleft", "--human") == "infinity\n"


def test_flux_job_timeleft_in_python(uri: str, client: Client) -> None:
    running = limited(client)
    pending = held(client)
    code = f'''
        import os, flux, flux.job
        h = flux.Flux()
        print(flux.job.timeleft(h))
        os.environ["FLUX_JOB_ID"] = "{running.f58}"
        print(500 < flux.job.timeleft() <= 600)
        for text in ("{pending.f58}", "bad"):
            os.environ["FLUX_JOB_ID"] = text
            try:
                flux.job.timeleft(h)
            except OSError as exc:
                print(type(exc).__name__, exc.strerror)
        '''
    proc = run_flux(dedent(code), uri)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "inf",
        "True",
        f"OSError job {pending.f58} has not started",
        "OSError failed to parse jobid bad",
    ]
    client.cancel(pending)
    client.cancel(running)
