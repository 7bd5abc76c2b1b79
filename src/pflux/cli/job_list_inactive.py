"""``pflux job list-inactive [-c N] [-s T]``: inactive jobs as JSON, one a line
(``job_list``'s module says more)."""

from __future__ import annotations

import argparse

from pflux.cli import base, jobcommon
from pflux.cli.job_list import NAME, count, for_a_terminal, print_jobs
from pflux.spec.states import State


def _since(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid time {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"invalid time {text!r}")
    return value


def main(argv: list[str]) -> int:
    parser = base.parser("job list-inactive", "List inactive jobs as JSON, one a line.")
    jobcommon.add_uri(parser)
    parser.add_argument("-c", "--count", type=count, default=0, metavar="N", help="N jobs at most")
    parser.add_argument(
        "-s", "--since", type=_since, default=0.0, metavar="T", help="inactive since time T"
    )
    args = parser.parse_args(argv)
    if for_a_terminal():
        return 1
    return base.run(NAME, lambda: _list_inactive(args))


def _list_inactive(args: argparse.Namespace) -> int:
    from pflux import Client

    with Client(args.uri) as client:
        jobs = client.list_jobs(
            states=int(State.INACTIVE), userid=-1, max_entries=args.count, since=args.since
        )
    print_jobs([dict(job.answered) for job in jobs])
    return 0
