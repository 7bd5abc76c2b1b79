"""flux.job.JobInfoFormat against a live instance, in a clean interpreter: ``flux jobs``'
headings, annotation and nested-instance fields, the refusal of an unknown field,
and a line per JobInfo, as flux-core's."""

from __future__ import annotations

from textwrap import dedent

from support.instance import LiveInstance
from support.shim import flux_output


def test_jobinfo_format_heads_and_formats_jobs(instance: LiveInstance) -> None:
    out = flux_output(
        dedent(
            """
            import flux
            import flux.job
            from flux.job import JobInfoFormat, JobspecV1, submit
            from flux.util import OutputFormat
            h = flux.Flux()
            jobid = submit(h, JobspecV1.from_command(["true"], num_tasks=2), waitable=True)
            flux.job.wait(h, jobid)
            fmt = JobInfoFormat("{id.f58:>12} {name:<6} {ntasks:>6} {status} {returncode}")
            print(isinstance(fmt, OutputFormat), repr(fmt.header()))
            job = flux.job.JobList(h, ids=[jobid]).jobs()[0]
            print(fmt.format(job) == f"{jobid.f58:>12} true        2 COMPLETED 0")
            extra = JobInfoFormat("{annotations.sched.x} {user.y} {instance.resources.free.ncores}")
            print(repr(extra.header()), "user.y" in JobInfoFormat.headings)
            try:
                JobInfoFormat("{nosuch}")
            except ValueError as exc:
                print(exc)
            """
        ),
        instance.uri,
    )
    assert out.splitlines() == [
        "True '       JOBID NAME   NTASKS STATUS RC'",
        "True",
        "'SCHED.X USER.Y FREE' False",
        "Unknown format field: nosuch",
    ]
