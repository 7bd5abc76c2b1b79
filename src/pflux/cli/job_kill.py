"""``pflux job kill [-s SIG] ID...``: send a signal to running jobs' tasks, as ``flux job kill``.

SIG is a number or a name, with or without ``SIG`` (default ``SIGTERM``).
"""

from __future__ import annotations

import argparse

from pflux.cli import base, jobcommon

NAME = "job"


def main(argv: list[str]) -> int:
    parser = base.parser("job kill", "Send a signal to running jobs.")
    jobcommon.add_uri(parser)
    parser.add_argument(
        "-s", "--signal", default="SIGTERM", metavar="SIG", help="signal (default SIGTERM)"
    )
    parser.add_argument("jobids", nargs="+", metavar="ID", help="job ids (any encoding)")
    args = parser.parse_args(argv)
    return base.run(NAME, lambda: _kill(args))


def _kill(args: argparse.Namespace) -> int:
    from pflux import Client

    jobids = jobcommon.job_ids(args.jobids)
    signum = jobcommon.signal_number(args.signal, "kill")
    with Client(args.uri) as client:
        return jobcommon.report_failures(NAME, jobids, client.kill_many(jobids, signum))
