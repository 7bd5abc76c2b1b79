"""``pflux job status [-v] [-e N] [--json] ID...``: wait for jobs and exit with their status.

As ``flux job status``: the exit code is the largest of the jobs' exit codes
(the largest task exit code, 128+signal for a signal), and a job ended by a
fatal exception counts as ``--exception-exit-code`` (default 1). Each job's
eventlog is followed to its end; all of them at once, on one connection.
The result is replayed through the job manager's own state machine, so
``result`` means exactly what job-list and ``job wait`` say. ``--json`` prints
flux's result object; its exception is the most severe one (the first of
equal severity).
"""

from __future__ import annotations

import argparse
import sys

from pflux.cli import base, jobcommon
from pflux.errors import PfluxError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from pflux.spec.eventlog import Event
    from pflux.spec.fluid import JobID

NAME = "job"
# flux's result numbers (FLUX_JOB_RESULT_*)
RESULTS = {"COMPLETED": 1, "FAILED": 2, "CANCELED": 4, "TIMEOUT": 8}


def main(argv: list[str]) -> int:
    parser = base.parser("job status", "Wait for jobs and exit with the largest exit code.")
    jobcommon.add_uri(parser)
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="say why jobs failed (-vv: all jobs)"
    )
    parser.add_argument(
        "-e",
        "--exception-exit-code",
        type=int,
        default=1,
        metavar="N",
        help="exit code of a job ended by a fatal exception (default 1)",
    )
    parser.add_argument("-j", "--json", action="store_true", help="print each job's result as JSON")
    parser.add_argument("jobids", nargs="+", metavar="ID", help="job ids (any encoding)")
    args = parser.parse_args(argv)
    return base.run(NAME, lambda: _status(args))


class JobStatus:
    """One job's eventlog, followed to its end and summarized as flux's result object."""

    def __init__(self, text: str, jobid: JobID) -> None:
        from pflux.spec.record import JobRecord

        self.text = text
        self.job = JobRecord(jobid)
        self.result: dict[str, Any] = {"id": int(jobid), "exception_occurred": False}
        self.error: str | None = None

    def on_event(self, event: Event) -> None:
        from pflux.spec.states import apply

        apply(self.job, event)
        self._record(event)

    def _record(self, event: Event) -> None:
        result = self.result
        context = event.context or {}
        if event.name == "submit":
            result["t_submit"] = event.timestamp
        elif event.name == "alloc":
            result["t_run"] = event.timestamp
        elif event.name == "finish":
            result["t_cleanup"] = event.timestamp
            result["waitstatus"] = context["status"]
        elif event.name == "exception":
            severity = context["severity"]
            if not result["exception_occurred"] or severity < result["exception_severity"]:
                result["exception_occurred"] = True
                result["exception_type"] = context["type"]
                result["exception_note"] = context.get("note", "")
                result["exception_severity"] = severity

    @property
    def fatal(self) -> bool:
        return self.job.exception is not None

    @property
    def exit_code(self) -> int:
        from pflux.spec.results import exit_code

        status = self.job.finish_status
        return 0 if status is None else exit_code(status)

    def summary(self) -> dict[str, Any]:
        """flux's result object: the times, waitstatus, exception and result number."""
        outcome = self.job.result
        return {**self.result, "result": RESULTS[outcome] if outcome else RESULTS["FAILED"]}


def _status(args: argparse.Namespace) -> int:
    from pflux import Client
    from pflux.errors import RPCError
    from pflux.spec.fluid import JobID

    jobs = [JobStatus(text, JobID.parse(text)) for text in args.jobids]
    verbose = args.verbose
    with Client(args.uri) as client:
        arriving = client.events_many([job.job.id for job in jobs])  # all in flight now
        if verbose and len(jobs) > 1:
            jobcommon.note(NAME, f"fetching status for {len(jobs)} jobs")
        for index, item in arriving:
            if isinstance(item, RPCError):
                jobs[index].error = item.errstr
            else:
                jobs[index].on_event(item)
    if verbose and len(jobs) > 1:
        jobcommon.note(NAME, "all done.")
    rc = 0
    for job in jobs:
        if job.error is not None:
            raise PfluxError(job.error)
        if args.json:
            import orjson

            sys.stdout.write(orjson.dumps(job.summary()).decode() + "\n")
        rc = max(rc, job.exit_code)
        if job.fatal:
            rc = max(rc, args.exception_exit_code)
        if verbose:
            _explain(job, verbose)
    return rc


def _explain(job: JobStatus, verbose: int) -> None:
    status = job.job.finish_status or 0
    if status & 0x7F:
        jobcommon.note(NAME, f"{job.text}: job shell died by signal {status & 0x7F}")
    elif verbose > 1 or job.exit_code:
        if job.fatal:
            jobcommon.note(NAME, f"{job.text}: exception type={job.result['exception_type']}")
        else:
            jobcommon.note(NAME, f"{job.text}: exited with exit code {job.exit_code}")
