"""``pflux job urgency ID N|hold|expedite|default``: change a pending job's urgency.

As ``flux job urgency``: the names are accepted in any case, and ``-v`` prints
the old urgency on stderr (``old urgency: job held`` for 0, ``job expedited``
for 31).
"""

from __future__ import annotations

import argparse
import sys

from pflux.cli import base, jobcommon
from pflux.errors import PfluxError
from pflux.spec.states import URGENCY_DEFAULT, URGENCY_EXPEDITE, URGENCY_HOLD

NAME = "job"
NAMES = {"hold": URGENCY_HOLD, "expedite": URGENCY_EXPEDITE, "default": URGENCY_DEFAULT}


def main(argv: list[str]) -> int:
    parser = base.parser("job urgency", "Set a pending job's urgency (0-31).")
    jobcommon.add_uri(parser)
    parser.add_argument("-v", "--verbose", action="store_true", help="print the old urgency")
    parser.add_argument("jobid", metavar="ID", help="job id (any encoding)")
    parser.add_argument("urgency", metavar="URGENCY", help="0-31, hold, expedite or default")
    args = parser.parse_args(argv)
    return base.run(NAME, lambda: _urgency(args))


def parse_urgency(text: str) -> int:
    """An urgency number or name (flux's ``error parsing urgency`` otherwise)."""
    named = NAMES.get(text.lower())
    if named is not None:
        return named
    if not text.isdigit() or not text.isascii():
        raise PfluxError(f'error parsing urgency: "{text}"')
    return int(text)


def _urgency(args: argparse.Namespace) -> int:
    from pflux import Client
    from pflux.errors import RPCError
    from pflux.spec.fluid import JobID

    jobid = JobID.parse(args.jobid)
    urgency = parse_urgency(args.urgency)
    with Client(args.uri) as client:
        try:
            old = client.urgency(jobid, urgency)
        except RPCError as exc:
            raise PfluxError(jobcommon.job_message(jobid, exc.errstr)) from None
    if args.verbose:
        if old == URGENCY_HOLD:
            shown = "job held"
        elif old == URGENCY_EXPEDITE:
            shown = "job expedited"
        else:
            shown = str(old)
        print(f"old urgency: {shown}", file=sys.stderr)
    return 0
