"""``pflux job list|list-inactive|list-ids``: job-list's answers, one job a line as JSON.

As flux's: tools' raw listings, not for a terminal (``pflux jobs`` is). ``list`` shows
your pending and running jobs (``-s STATES``, ``-a`` all states, ``-A`` every user's,
``-u USER``), ``list-inactive`` the inactive ones (``--since T``), ``-c N`` at most N;
``list-ids ID...`` each job once job-list knows it (``-W STATE``: once in or past STATE).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from pflux.cli import base, jobcommon
from pflux.spec.states import State

NAME = "job"
_NOT_FOR_A_TERMINAL = "This is not the command you are looking for. Try flux-jobs(1)."


def count(text: str) -> int:
    if not text.isascii() or not text.isdigit():
        raise argparse.ArgumentTypeError(f"invalid count {text!r}")
    return int(text)


def print_jobs(jobs: list[dict[str, object]]) -> None:
    for job in jobs:
        sys.stdout.write(json.dumps(job) + "\n")


def for_a_terminal() -> bool:
    """Whether stdout is a terminal: then flux's listing commands say so and fail."""
    if sys.stdout.isatty():
        sys.stderr.write(_NOT_FOR_A_TERMINAL + "\n")
        return True
    return False


def main(argv: list[str]) -> int:
    parser = base.parser("job list", "List jobs as JSON, one a line (for tools).")
    jobcommon.add_uri(parser)
    parser.add_argument("-c", "--count", type=count, default=0, metavar="N", help="N jobs at most")
    parser.add_argument(
        "-s",
        "--states",
        action="append",
        metavar="STATES",
        help="jobs in these states (default: pending,running)",
    )
    parser.add_argument("-u", "--user", metavar="USER", help="this user's jobs, or 'all'")
    parser.add_argument("-a", "--all-user", action="store_true", help="your jobs, in any state")
    parser.add_argument("-A", "--all", action="store_true", help="every user's, in any state")
    args = parser.parse_args(argv)
    if for_a_terminal():
        return 1
    return base.run(NAME, lambda: _list(args))


def _list(args: argparse.Namespace) -> int:
    from pflux import Client
    from pflux.cli.job_raiseall import states_mask, user_id

    states = State.PENDING | State.RUNNING
    if args.all_user or args.all:
        states = State.ACTIVE | State.INACTIVE
    elif args.states:
        states = states_mask(args.states)
    userid = os.getuid()
    if args.all:
        userid = -1
    elif args.user is not None:
        userid = user_id(args.user)
    with Client(args.uri) as client:
        jobs = client.list_jobs(states=int(states), userid=userid, max_entries=args.count)
    print_jobs([dict(job.answered) for job in jobs])
    return 0
