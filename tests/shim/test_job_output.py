"""flux.job.job_output against a live instance, in a clean interpreter: every task's
output or some ranks', labelled, the shell's log on stderr or apart, a redirect's
note, what is there now (nowait), and the errors, as flux-core's."""

from __future__ import annotations

from textwrap import dedent

from support.instance import LiveInstance
from support.shim import flux_output


def test_job_output_of_tasks_log_and_errors(instance: LiveInstance, tmp_path: object) -> None:
    out = flux_output(
        dedent(
            f"""
            import flux
            from flux.job import JobException, JobID, JobspecV1, job_output, submit
            from flux.job.output import LOG_QUIET, JobOutput
            h = flux.Flux()
            spec = JobspecV1.from_command(
                ["sh", "-c", 'echo out$FLUX_TASK_RANK; echo err$FLUX_TASK_RANK >&2'],
                num_tasks=2)
            jobid = submit(h, spec)
            both = job_output(h, jobid)
            print(type(both) is JobOutput, sorted(both.stdout.split()), sorted(both.stderr.split()))
            print(repr(job_output(h, jobid, tasks="1").stdout), repr(both.log))
            labelled = job_output(h, jobid, tasks="0", labelio=True)
            print(repr(labelled.stdout), repr(labelled.stderr))
            print(job_output(h, jobid, nowait=True) == both)
            verbose = JobspecV1.from_command(["true"])
            verbose.setattr_shell_option("verbose", 1)
            verbose.stdout = "{tmp_path}/out.txt"
            jobid = submit(h, verbose)
            apart = job_output(h, jobid, log_stderr_level=LOG_QUIET)
            print(repr(apart.stdout), apart.stderr.splitlines(), len(apart.log.splitlines()))
            print(apart.log.splitlines()[0].startswith("flux-shell[0]: DEBUG: "))
            mixed = job_output(h, jobid)
            print(mixed.log == "", len(mixed.stderr.splitlines()))
            held = submit(h, JobspecV1.from_command(["true"]), urgency=0)
            flux.job.cancel(h, held, "no")
            try:
                job_output(h, held)
            except JobException as exc:
                print("JobException", exc)
            try:
                job_output(h, JobID(int(held) + 1000000), nowait=True)
            except FileNotFoundError as exc:
                print("FileNotFoundError", str(exc).endswith("does not exist or output not ready"))
            """
        ),
        instance.uri,
    )
    assert out.splitlines() == [
        "True ['out0', 'out1'] ['err0', 'err1']",
        "'out1\\n' ''",
        "'0: out0\\n' '0: err0\\n'",
        "True",
        f"'' ['0: stdout redirected to {tmp_path}/out.txt', "
        f"'0: stderr redirected to {tmp_path}/out.txt'] 2",
        "True",
        "True 4",
        "JobException job.exception: type=cancel: no",
        "FileNotFoundError True",
    ]
