"""flux.uri against a live instance, in a clean interpreter: a job's nested instance's
URI resolved as flux-core's resolver does, JobInfo.uri, and flux's errors."""

from __future__ import annotations

from textwrap import dedent

from pflux.api import Client
from pflux.spec.fluid import JobID
from support.instance import LiveInstance, ok
from support.shim import flux_output

HOLD = "--setattr=system.exec.test.run_duration=0s"  # runs (no process) until canceled


def test_a_jobs_uri_resolved_and_errors(instance: LiveInstance, client: Client) -> None:
    uri = instance.uri
    nested = JobID.parse(ok(uri, "submit", "flux", "start", "sleep", "60"))
    posted = client.wait_event(nested, "memo").context["uri"]
    plain = JobID.parse(ok(uri, "submit", HOLD, "true"))
    client.wait_event(plain, "start")
    code = f"""
        import flux
        from flux.job import job_list_id
        from flux.uri import FluxURIResolver, JobURI
        r = FluxURIResolver()
        print(r.resolve("{nested.f58}"))
        print(r.resolve("jobid:{nested.f58}?wait"))
        print(r.resolve("jobid:{nested.f58}/.."))
        print(r.resolve("jobid:/"))
        print(r.resolve("jobid:{nested.f58}?remote").uri.startswith("ssh://"))
        print(JobURI("ssh://host//tmp/x").local, JobURI("local:///tmp/x").path)
        info = job_list_id(flux.Flux(), {int(nested)}).get_jobinfo()
        print(info.uri, info.to_dict()["uri"], "uri" in info.to_dict()["annotations"])
        print(job_list_id(flux.Flux(), {int(plain)}).get_jobinfo().uri)
        for bad in ("ƒ111", "jobid:x!", "{plain.f58}", "slurm:1", "{nested.f58}?local&remote"):
            try:
                r.resolve(bad)
            except (ValueError, NotImplementedError) as exc:
                print(type(exc).__name__, exc)
        print(sorted(r.plugins()))
    """
    lines = flux_output(dedent(code), uri).splitlines()
    client.cancel(nested)
    client.cancel(plain)
    client.wait(nested)
    assert lines == [
        posted,
        posted,
        uri,
        uri,
        "True",
        "local:///tmp/x /tmp/x",
        f"{posted} {posted} False",
        "None",
        "ValueError jobid ƒ111 not found",
        "ValueError x! is not a valid jobid",
        f"ValueError URI not found for job {plain.f58}",
        "NotImplementedError No plugin for URI scheme slurm",
        "ValueError Only one of 'local' or 'remote' is allowed",
        "['jobid', 'pid']",
    ]
