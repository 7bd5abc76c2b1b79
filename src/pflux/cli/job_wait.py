"""``pflux job wait [--all] [-v] [ID]``: wait for jobs to finish, as ``flux job wait``.

With ID: wait for that job; exit 0 if it succeeded, else print why and exit 1;
exit 2 if it cannot be waited for (no such job).

flux waits only for jobs submitted ``waitable``, and a result can be consumed
once, so ``flux job wait`` without ID takes the next finished waitable job. In
pflux every job can be waited for, any number of times, so without ID pflux
waits for the user's jobs that are *active now* (as job-list reports them):
the first to finish is printed and decides the exit code; with ``--all`` each
is reported as it finishes (failures, and with ``-v`` successes, on stderr) and
the exit code is 1 if any failed. With no active jobs, ``wait`` exits 2 and
``wait --all`` 0, as flux does when no waitable job is left. Jobs submitted
after the command starts are not waited for.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections import deque
from typing import TYPE_CHECKING

from pflux.cli import base, jobcommon
from pflux.errors import PfluxError

if TYPE_CHECKING:
    from pflux.api import Client
    from pflux.broker.message import Message
    from pflux.spec.fluid import JobID

NAME = "job"
NOT_WAITABLE = 2


def main(argv: list[str]) -> int:
    parser = base.parser("job wait", "Wait for jobs to finish.")
    jobcommon.add_uri(parser)
    parser.add_argument("-a", "--all", action="store_true", help="wait for all of your active jobs")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="with --all, report successes too"
    )
    parser.add_argument("jobid", nargs="?", metavar="ID", help="job id (any encoding)")
    args = parser.parse_args(argv)
    return base.run(NAME, lambda: _wait(args))


def _wait(args: argparse.Namespace) -> int:
    from pflux.api import Client
    from pflux.broker.message import RPCError
    from pflux.spec.fluid import JobID

    if args.jobid is not None and args.all:
        raise PfluxError("jobid not supported with --all")
    with Client(args.uri) as client:
        if args.jobid is not None:
            jobid = JobID.parse(args.jobid)
            try:
                result = client.wait(jobid)
            except RPCError as exc:
                jobcommon.error(NAME, jobcommon.job_message(jobid, exc.errstr))
                return NOT_WAITABLE
            if not result.success:
                raise PfluxError(result.errstr)
            return 0
        active = _active_jobs(client)
        if args.all:
            return _wait_all(client, active, args.verbose)
        if not active:
            jobcommon.error(NAME, "there are no active jobs to wait for")
            return NOT_WAITABLE
        return _wait_any(client, active)


def _active_jobs(client: Client) -> list[JobID]:
    from pflux.manager.states import State
    from pflux.spec.fluid import JobID

    jobs = client.list_jobs(states=int(State.ACTIVE), userid=os.getuid(), attrs=["id"])
    return [JobID(job["id"]) for job in jobs]


class _Waits:
    """One ``job-manager.wait`` per job, all in flight; ``finished`` in the order they end."""

    def __init__(self, client: Client, jobids: list[JobID]) -> None:
        self.handle = client.handle
        self.open = len(jobids)
        self.finished: deque[tuple[JobID, Message]] = deque()
        for jobid in jobids:
            rpc = self.handle.rpc("job-manager.wait", {"id": int(jobid)}, wait=True)
            rpc.then(functools.partial(self._done, jobid))

    def _done(self, jobid: JobID, msg: Message) -> None:
        self.open -= 1
        self.finished.append((jobid, msg))

    def next(self) -> tuple[JobID, Message] | None:
        """The next job to finish, or None when every one has."""
        while not self.finished and self.open:
            self.handle.process(None)
        return self.finished.popleft() if self.finished else None


def _wait_any(client: Client, jobids: list[JobID]) -> int:
    done = _Waits(client, jobids).next()
    assert done is not None  # there was at least one job
    jobid, msg = done
    reply = msg.raise_for_error()
    print(jobcommon.f58(jobid))
    if not reply["success"]:
        raise PfluxError(reply["errstr"])
    return 0


def _wait_all(client: Client, jobids: list[JobID], verbose: bool) -> int:
    waits = _Waits(client, jobids)
    rc = 0
    while (done := waits.next()) is not None:
        jobid, msg = done
        if msg.errnum:
            line, failed = jobcommon.job_message(jobid, msg.errstr or ""), True
        elif not msg.payload["success"]:
            line, failed = f"{jobcommon.f58(jobid)}: {msg.payload['errstr']}", True
        else:
            line, failed = f"{jobcommon.f58(jobid)}: job completed successfully", False
        if failed or verbose:
            sys.stderr.write(line + "\n")
        rc |= failed
    return rc
