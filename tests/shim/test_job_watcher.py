"""flux.job.watcher against a live instance, in a clean interpreter: JobWatcher copies
the jobs' output, logs their end, keeps the worst exit code and shows an exception;
JobProgressBar counts them, as flux-core's."""

from __future__ import annotations

from textwrap import dedent

from support.instance import LiveInstance
from support.shim import run_flux


def test_job_watcher_follows_output_status_and_exceptions(instance: LiveInstance) -> None:
    proc = run_flux(
        dedent(
            """
            import sys
            import flux
            import flux.job
            from flux.job import JobspecV1, submit
            from flux.job.watcher import JobProgressBar, JobStatus, JobWatcher
            h = flux.Flux()
            ok = submit(h, JobspecV1.from_command(["sh", "-c", "echo hello; echo oops >&2"]))
            bad = submit(h, JobspecV1.from_command(["sh", "-c", "exit 3"]))
            held = submit(h, JobspecV1.from_command(["true"]), urgency=0)
            flux.job.cancel(h, held, "not today")
            watcher = JobWatcher(h, log_status=True)
            for jobid in (ok, bad, held):
                watcher.add_jobid(jobid)
            watcher.start()
            h.reactor_run()
            watcher.stop()
            sys.stdout.flush()
            bar = watcher.progress
            print("exitcode", watcher.exitcode)
            print("counts", bar.total, bar.pending, bar.running, bar.complete, bar.failed)
            print("statuses", sorted(job.status for job in bar.jobs.values()))
            try:
                JobStatus(object())
            except ValueError as exc:
                print(exc)
            try:
                JobProgressBar(h).add_job(1)
            except ValueError as exc:
                print(exc)
            """
        ),
        instance.uri,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "hello",
        "exitcode 3",
        "counts 3 0 0 1 2",
        "statuses ['complete', 'failed', 'failed']",
        "JobStatus requires an object of type JobInfo",
        "add_job takes an argument of type JobInfo",
    ]
    err = proc.stderr.splitlines()
    assert "oops" in err
    assert any(line.endswith("job.exception: type=cancel severity=0 not today") for line in err)
    assert sum(": complete: status=0" in line for line in err) == 1, err
    assert sum(": failed: status=768" in line for line in err) == 1, err


def test_an_output_callback_gets_the_output_instead(instance: LiveInstance) -> None:
    proc = run_flux(
        dedent(
            """
            import flux
            from flux.job import JobspecV1, submit
            from flux.job.watcher import JobWatcher
            h = flux.Flux()
            jobid = submit(h, JobspecV1.from_command(["sh", "-c", "echo hi; echo ho >&2"]))
            got = []
            watcher = JobWatcher(h, output_callback=lambda *a: got.append(a))
            watcher.add_jobid(jobid)
            h.reactor_run()
            print(sorted((str(i == jobid), s, d) for i, s, d in got if s))
            print([(str(i == jobid), s, d) for i, s, d in got if not s])
            """
        ),
        instance.uri,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "[('True', 'stderr', 'ho\\n'), ('True', 'stdout', 'hi\\n')]",
        "[('True', None, None)]",
    ]
    assert proc.stderr == ""
