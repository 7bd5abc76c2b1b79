"""flux.job's output watchers and job_kvs/job_kvs_guest against a live instance, in a
clean interpreter: events, chunks and lines as they come, the never-started job's
EIO, and the job's KVS directories, as flux-core's."""

from __future__ import annotations

from textwrap import dedent

from support.instance import LiveInstance
from support.shim import flux_output


def test_output_watchers_and_job_kvs(instance: LiveInstance) -> None:
    out = flux_output(
        dedent(
            """
            import flux
            import flux.job
            from flux.job import JobspecV1, submit
            from flux.job.output import LogEvent, OutputEvent
            h = flux.Flux()
            spec = JobspecV1.from_command(["sh", "-c", "echo a; echo b; echo c >&2"])
            spec.setattr_shell_option("verbose", 1)
            jobid = submit(h, spec)
            names = [e.name for e in flux.job.output_event_watch(h, jobid)]
            print(names[0], "data" in names, "log" in names)
            chunks = list(flux.job.output_watch(h, jobid, log_stderr_level=-1))
            print(sorted({stream for stream, _ in chunks}))
            print("".join(d for s, d in chunks if s == "stdout").split())
            lines = list(flux.job.output_watch_lines(h, jobid, labelio=True))
            print([line for stream, line in lines if stream == "stdout"])
            print([line for stream, line in lines if stream == "stderr"][-1])
            kept = list(flux.job.output_watch_lines(h, jobid, nowait=True, keepends=True))
            print([line for stream, line in kept if stream == "stdout"])
            seen = []
            def cb(future):
                event = future.get_event()
                if event is not None and isinstance(event, OutputEvent) and event.data:
                    seen.append(event.data)
            flux.job.output_event_watch_async(h, jobid).then(cb)
            h.reactor_run()
            print(sorted("".join(seen).splitlines()))
            held = submit(h, JobspecV1.from_command(["true"]), urgency=0)
            flux.job.cancel(h, held, "no")
            try:
                list(flux.job.output_watch(h, held))
            except OSError as exc:
                print(exc.errno, exc.strerror == f"job {held} never started")
            try:
                list(flux.job.output_watch(h, int(held) + 1000000))
            except OSError as exc:
                print(exc.errno, exc.strerror.endswith("not found"))
            d = flux.job.job_kvs(h, jobid)
            print(sorted(k for k in d if k in ("jobspec", "eventlog", "R")))
            g = flux.job.job_kvs_guest(h, jobid)
            print(sorted(k for k in g if k in ("output", "exec")))
            print(isinstance(LogEvent, type))
            """
        ),
        instance.uri,
    )
    assert out.splitlines() == [
        "header True True",
        "['log', 'stderr', 'stdout']",
        "['a', 'b']",
        "['0: a', '0: b']",
        "0: c",
        "['a\\n', 'b\\n']",
        "['a', 'b', 'c']",
        "5 True",
        "2 True",
        "['R', 'eventlog', 'jobspec']",
        "['exec', 'output']",
        "True",
    ]
