"""``pflux job timeleft [-H] [JOBID]``: the time the calling job has left.

As ``flux job timeleft``: whole seconds (a fraction of one rounds up to 1, no time
limit prints 4294967295), or with ``-H/--human`` a duration (``1.5m``,
``infinity``). The job is JOBID, else ``FLUX_JOB_ID``; outside a job, the
instance's own expiration: its resources', or, for an instance run as a job
(attributes ``jobid`` and ``parent-uri``), that job's in the parent instance.
A pending job is an error (``job ID has not started``); one no longer running
has 0 left.
"""

from __future__ import annotations

import errno
import math
import os
import time

from pflux.cli import base, jobcommon
from pflux.errors import PfluxError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from pflux import Client

NAME = "job"
UNLIMITED = 4294967295  # what flux prints for no time limit (UINT_MAX)


def main(argv: list[str]) -> int:
    parser = base.parser("job timeleft", "Print the time the current job has left.")
    jobcommon.add_uri(parser)
    parser.add_argument(
        "-H", "--human", action="store_true", help="print a duration instead of seconds"
    )
    parser.add_argument("jobid", metavar="JOBID", nargs="?", help="this job (default: FLUX_JOB_ID)")
    args = parser.parse_args(argv)
    return base.run(NAME, lambda: _timeleft(args.uri, args.jobid, args.human))


def _timeleft(uri: str | None, jobid: str | None, human: bool) -> int:
    from pflux import Client

    text = jobid if jobid is not None else os.environ.get("FLUX_JOB_ID")
    with Client(uri) as client:
        expiration = _instance(client) if text is None else _job(client, text)
    left = math.inf if expiration == 0.0 else max(expiration - time.time(), 0.0)
    if human:
        from pflux.spec import duration

        print(duration.format(left))
    elif math.isinf(left):
        print(UNLIMITED)
    else:
        print(max(math.floor(left), 1 if left > 0 else 0))
    return 0


def _job(client: Client, text: str) -> float:
    from pflux.errors import JobIDError, RPCError
    from pflux.spec.fluid import JobID
    from pflux.spec.states import State

    try:
        jobid = JobID.parse(text)
    except JobIDError:
        raise PfluxError(f"failed to parse jobid {text}") from None
    try:
        job = client.job_info(jobid, ["expiration", "state"])
    except RPCError as exc:
        if exc.errnum == errno.ENOENT:
            raise PfluxError(f"{text}: no such jobid") from None
        raise PfluxError(f"flux_job_list_id: {text}: {exc.errstr}") from None
    if job.state is not None and job.state & State.PENDING:
        raise PfluxError(f"job {text} has not started")
    if job.state is not State.RUN:
        return 1.0  # long past: nothing left
    return job.expiration or 0.0


def _instance(client: Client) -> float:
    from pflux.errors import RPCError

    try:
        execution = client.resource_status()["all"].get("execution", {})
        expiration = float(execution.get("expiration", 0.0))
        attrs = client.attrs()
    except (RPCError, KeyError, TypeError, AttributeError, ValueError):
        raise PfluxError("failed to get instance expiration") from None
    if expiration == 0.0 and "jobid" in attrs and "parent-uri" in attrs:
        from pflux import Client

        with Client(attrs["parent-uri"]) as parent:
            return _job(parent, attrs["jobid"])
    return expiration
