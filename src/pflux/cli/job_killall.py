"""``pflux job killall [-s SIG] [-u USER] [-f]``: signal every running job of a user.

As ``flux job killall``: SIG (default ``SIGTERM``) to each job of the user
(``-u``: another user, or ``all``, the instance owner only) that is running
(RUN or CLEANUP). Without ``-f`` nothing is signalled: it says how many jobs
match; with it, ``Terminated 3 jobs (0 errors)`` (the signal's description).
The running jobs come from job-list and each is signalled by its own
``job-manager.kill``, all sent before any answer is read.
"""

from __future__ import annotations

import argparse
import os
import signal

from pflux.cli import base, jobcommon
from pflux.cli.job_raiseall import user_id
from pflux.spec.states import State

NAME = "job"


def main(argv: list[str]) -> int:
    parser = base.parser("job killall", "Send a signal to all running jobs.")
    parser.usage = f"{base.PROG} job killall [OPTIONS]"
    jobcommon.add_uri(parser)
    parser.add_argument(
        "-s", "--signal", default="SIGTERM", metavar="SIG", help="send signal SIG (default SIGTERM)"
    )
    parser.add_argument(
        "-u", "--user", metavar="USER", help="target user or 'all' (instance owner only)"
    )
    parser.add_argument("-f", "--force", action="store_true", help="confirm the command")
    args = parser.parse_args(argv)
    return base.run(NAME, lambda: _killall(args))


def _killall(args: argparse.Namespace) -> int:
    from pflux import Client

    signum = jobcommon.signal_number(args.signal, "killall")
    userid = os.getuid() if args.user is None else user_id(args.user)
    with Client(args.uri) as client:
        jobs = client.list_jobs(states=int(State.RUNNING), userid=userid, attrs=())
        jobids = [job.id for job in jobs]
        errors = 0
        if args.force and jobids:
            errors = sum(exc is not None for exc in client.kill_many(jobids, signum))
    count = len(jobids)
    if count and not args.force:
        jobcommon.note(NAME, f"Command matched {count} jobs (-f to confirm)")
    elif count:
        description = signal.strsignal(signum) or f"Signal {signum}"
        jobcommon.note(NAME, f"{description} {count} jobs ({errors} errors)")
    else:
        jobcommon.note(NAME, "Command matched 0 jobs")
    return 0
