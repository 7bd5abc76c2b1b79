"""``pflux job wait [--all] [-v] [ID]``: take the results of waitable jobs, as ``flux job wait``.

Only jobs submitted with ``--flags=waitable`` (``waitable=True`` in the Python
API) can be waited for, and each result only once: it is kept until taken.
With ID: that job; exit 0 if it succeeded, else print why and exit 1. Without
ID: the next waitable job to finish, whose id is printed. When there is
nothing to wait for (the job is not waitable, was already waited for, or no
waitable job is left) the job manager's reason is printed and the exit code is
2. ``--all`` takes every result until none is left, printing each failure
(and with ``-v`` each success) on stderr, and exits 1 if any job failed.
"""

from __future__ import annotations

import argparse
import errno
import sys

from pflux.cli import base, jobcommon
from pflux.cli.printable import printable
from pflux.errors import PfluxError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from pflux import Client

NAME = "job"
NOT_WAITABLE = 2


def main(argv: list[str]) -> int:
    parser = base.parser("job wait", "Wait for waitable jobs to finish and take their results.")
    jobcommon.add_uri(parser)
    parser.add_argument("-a", "--all", action="store_true", help="wait for all (waitable) jobs")
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="emit a line of output for all jobs, not just failing ones",
    )
    parser.add_argument("jobid", nargs="?", metavar="ID", help="job id (any encoding)")
    args = parser.parse_args(argv)
    return base.run(NAME, lambda: _wait(args))


def _wait(args: argparse.Namespace) -> int:
    from pflux import Client
    from pflux.errors import RPCError
    from pflux.spec.fluid import JobID

    if args.jobid is not None and args.all:
        raise PfluxError("jobid not supported with --all")
    jobid = None if args.jobid is None else JobID.parse(args.jobid)
    with Client(args.uri) as client:
        if args.all:
            return _wait_all(client, args.verbose)
        try:
            result = client.reap(jobid)
        except RPCError as exc:
            jobcommon.error(NAME, exc.errstr)
            return NOT_WAITABLE if exc.errnum == errno.ECHILD else 1
        if jobid is None:
            print(jobcommon.f58(result.id))
        if not result.success:
            raise PfluxError(result.errstr)
        return 0


def _wait_all(client: Client, verbose: bool) -> int:
    from pflux.errors import RPCError

    rc = 0
    while True:
        try:
            result = client.reap()
        except RPCError as exc:
            if exc.errnum == errno.ECHILD:  # no waitable job left
                return rc
            raise
        if not result.success:
            sys.stderr.write(f"{jobcommon.f58(result.id)}: {printable(result.errstr)}\n")
            rc = 1
        elif verbose:
            sys.stderr.write(f"{jobcommon.f58(result.id)}: job completed successfully\n")
