"""``pflux cancel``: cancel jobs by raising a fatal ``cancel`` exception, as ``flux cancel``.

Jobs are named on the command line, or selected with ``--all``, ``--user`` or
``--states`` (one ``job-manager.raiseall`` request); the two ways do not mix.
Summaries go to stderr in flux's words (``Canceled 4 jobs (0 errors)``).
"""

from __future__ import annotations

import argparse
import os

from pflux.cli import base, jobcommon
from pflux.errors import PfluxError
from pflux.spec.states import State

NAME = "cancel"

# flux-cancel's --states names
STATES = {
    "depend": State.DEPEND,
    "priority": State.PRIORITY,
    "sched": State.SCHED,
    "run": State.RUN,
    "pending": State.PENDING,
    "running": State.RUNNING,
    "active": State.ACTIVE,
}


def main(argv: list[str]) -> int:
    parser = base.parser(NAME, "Cancel pending or running jobs with an optional exception note.")
    parser.usage = f"{base.PROG} cancel [OPTIONS] [JOBID...]"
    jobcommon.add_uri(parser)
    parser.add_argument("--all", action="store_true", help="target all of the user's jobs")
    parser.add_argument(
        "-n", "--dry-run", action="store_true", help="only say how many jobs would be canceled"
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="say nothing when no jobs match")
    parser.add_argument(
        "-u", "--user", metavar="USER", help="target USER's jobs, or 'all' (instance owner only)"
    )
    parser.add_argument(
        "-S",
        "--states",
        action="append",
        metavar="STATES",
        help=f"target jobs in these states (default: active): {', '.join(STATES)}",
    )
    parser.add_argument("-m", "--message", metavar="NOTE", help="the exception note")
    parser.add_argument("jobids", nargs="*", metavar="JOBID", help="job ids (any encoding)")
    args = parser.parse_args(argv)
    return base.run(NAME, lambda: _cancel(args))


def _cancel(args: argparse.Namespace) -> int:
    select = args.all or args.user is not None or args.states
    if select and args.jobids:
        raise PfluxError("Do not specify a list of jobids with --all,--user,--states options")
    if select:
        return _cancel_all(args)
    if not args.jobids:
        raise PfluxError("No target jobs were provided")
    jobids = jobcommon.job_ids(args.jobids)
    if args.dry_run:
        jobcommon.note(NAME, f"Would cancel {jobcommon.plural(len(jobids), 'job')}")
        return 0
    from pflux import Client

    with Client(args.uri) as client:
        errors = client.raise_many(jobids, "cancel", 0, args.message or "")
    return jobcommon.report_failures(NAME, jobids, errors)


def _cancel_all(args: argparse.Namespace) -> int:
    userid = os.getuid() if args.user is None else jobcommon.user_id(args.user)
    states = _states(args.states) if args.states else State.PENDING | State.RUNNING
    from pflux import Client

    with Client(args.uri) as client:
        count = client.raise_all(
            "cancel",
            0,
            args.message or "",
            userid=userid,
            states=int(states),
            dry_run=args.dry_run,
        )
    if count and args.dry_run:
        jobcommon.note(NAME, f"Would cancel {jobcommon.plural(count, 'job')}")
    elif count:
        # job-manager.raiseall raises on every job it counts: there are no partial errors
        jobcommon.note(NAME, f"Canceled {jobcommon.plural(count, 'job')} (0 errors)")
    elif not args.quiet:
        jobcommon.note(NAME, "Matched 0 jobs")
    return 0


def _states(options: list[str]) -> State:
    mask = State(0)
    for name in ",".join(options).split(","):
        state = STATES.get(name.strip().lower())
        if state is None:
            raise PfluxError(f"Invalid state {name} specified")
        mask |= state
    return mask
