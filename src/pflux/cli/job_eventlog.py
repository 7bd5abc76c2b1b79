"""``pflux job eventlog [-F] [-p PATH] ID``: print a job's eventlog, as ``flux job eventlog``.

Without ``--follow`` it prints what the log holds now; with it, every event
from the first, live, until the event that ends that log (``clean`` for the
job eventlog, ``done`` for ``exec``) or, for a log without one, until the job
is inactive and the log complete.
"""

from __future__ import annotations

import argparse
import sys

from pflux.cli import base, eventwatch, jobcommon

NAME = "job"


def main(argv: list[str]) -> int:
    parser = base.parser("job eventlog", "Print a job's eventlog.")
    jobcommon.add_uri(parser)
    eventwatch.add_format_options(parser)
    eventwatch.add_path_option(parser)
    parser.add_argument(
        "-F", "--follow", action="store_true", help="follow events until the log ends"
    )
    parser.add_argument("jobid", metavar="ID", help="job id (any encoding)")
    args = parser.parse_args(argv)
    return base.run(NAME, lambda: _eventlog(args))


def _eventlog(args: argparse.Namespace) -> int:
    from pflux import Client
    from pflux.spec.fluid import JobID

    jobid = JobID.parse(args.jobid)
    path, end = eventwatch.resolve(args.path)
    printer = eventwatch.EventPrinter(args)
    write = sys.stdout.write
    with Client(args.uri) as client:
        if not args.follow:
            for event in client.events(jobid, path=path, follow=False):
                write(printer.line(event))
            return 0
        for event in client.events(jobid, path=path):
            write(printer.line(event))
            sys.stdout.flush()  # a pipe sees each event as it comes
            if event.name == end:
                break
    return 0
