"""flux.job.kvslookup against a live instance, in a clean interpreter: a job's jobspec
as it is now (its jobspec-update events replayed), as stored, as submitted (from J),
as text or objects, for one job or several, and unknown jobs, as flux-core's."""

from __future__ import annotations

from textwrap import dedent

from support.instance import LiveInstance
from support.shim import flux_output


def test_lookup_current_base_original_and_unknown(instance: LiveInstance) -> None:
    out = flux_output(
        dedent(
            """
            import flux
            from flux.constants import FLUX_JOB_LOOKUP_CURRENT, FLUX_JOB_URGENCY_HOLD
            from flux.job import (JobID, JobKVSLookup, JobspecV1, job_info_lookup,
                                  job_kvs_lookup, submit)
            h = flux.Flux()
            spec = JobspecV1.from_command(["true"])
            spec.duration = 60
            jobid = submit(h, spec, urgency=FLUX_JOB_URGENCY_HOLD)
            h.rpc("job-manager.update",
                  {"id": jobid, "updates": {"attributes.system.duration": 120.0}}).get()
            def duration(jobspec):
                return jobspec["attributes"]["system"]["duration"]
            now = job_kvs_lookup(h, jobid)
            print(sorted(now), duration(now["jobspec"]))
            print(duration(job_kvs_lookup(h, jobid, base=True)["jobspec"]))
            original = job_kvs_lookup(h, jobid, original=True)
            print(sorted(original), duration(original["jobspec"]))
            text = job_kvs_lookup(h, jobid, keys=["jobspec", "J"], decode=False, original=True)
            print(sorted(text), type(text["jobspec"]).__name__, "60.0" in text["jobspec"])
            raw = job_info_lookup(h, jobid, keys=["jobspec"], flags=FLUX_JOB_LOOKUP_CURRENT)
            print(type(raw.get()["jobspec"]).__name__, duration(raw.get_decode()["jobspec"]))
            unknown = JobID(int(jobid) + 1000000)
            print(job_kvs_lookup(h, unknown))
            many = JobKVSLookup(h, ids=[jobid, unknown.f58], keys=["jobspec", "eventlog"])
            data = many.data()
            print(len(data), duration(data[0]["jobspec"]), "eventlog" in data[0])
            print(many.errors == [f"JobID {unknown.f58} unknown"])
            flux.job.cancel(h, jobid)
            """
        ),
        instance.uri,
    )
    assert out.splitlines() == [
        "['id', 'jobspec'] 120.0",
        "60.0",
        "['id', 'jobspec'] 60.0",
        "['J', 'id', 'jobspec'] str True",
        "str 120.0",
        "None",
        "1 120.0 True",
        "True",
    ]
