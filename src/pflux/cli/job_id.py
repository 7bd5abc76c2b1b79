"""``pflux job id``: convert job ids between RFC 19 encodings, as ``flux job id`` does.

Like flux: decimal by default, input in any encoding, ids from stdin when none
are given, and the first invalid id ends the run with exit status 1.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from pflux.cli.base import parser, run
from pflux.errors import PfluxError
from pflux.spec.fluid import ENCODINGS, JobID, ascii_f58_preferred


def main(argv: list[str]) -> int:
    """Entry point of ``pflux job id``."""
    p = parser("job id", "Convert job ids to another encoding, one per line.")
    p.add_argument(
        "-t",
        "--to",
        default="dec",
        type=str.lower,
        choices=ENCODINGS,
        metavar="ENCODING",
        help=f"print ids as {', '.join(ENCODINGS)} (default: dec)",
    )
    p.add_argument(
        "ids",
        nargs="*",
        metavar="ID",
        help="job id in any encoding; with none, ids are read from stdin, one per line",
    )
    args = p.parse_args(argv)
    return run("job id", lambda: _convert(args.to, args.ids))


def _convert(to: str, ids: list[str]) -> int:
    if to == "f58" and ascii_f58_preferred():
        to = "f58plain"
    texts: Iterable[str] = ids or (line for line in sys.stdin if line.strip())
    write = sys.stdout.write
    converted = 0
    for text in texts:
        write(JobID.parse(text).encode(to) + "\n")
        converted += 1
    if not converted:
        # flux job id also fails when it converted nothing
        raise PfluxError("no job ids on stdin")
    return 0
