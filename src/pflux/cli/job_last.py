"""``pflux job last [N | [SLICE]]``: the user's most recently submitted job ids.

As ``flux job last``: no argument prints the last job; N the last N, most
recent first; ``[start:stop[:step]]`` a Python-style slice of the history,
index 0 the most recent (``[::-1]``: every job in submission order).
"""

from __future__ import annotations

import argparse

from pflux.cli import base, jobcommon
from pflux.errors import PfluxError, UsageError

NAME = "job"


def main(argv: list[str]) -> int:
    parser = base.parser("job last", "Print the ids of your most recently submitted jobs.")
    jobcommon.add_uri(parser)
    parser.add_argument(
        "slice", metavar="N|[SLICE]", nargs="?", default="[:1]", help="how many, or which"
    )
    args = parser.parse_args(argv)
    return base.run(NAME, lambda: _last(args))


def _slice(text: str) -> str:
    if "[" in text:
        return text
    if not text.isascii() or not text.lstrip("+-").isdigit():
        raise UsageError(f'last: "{text}" is neither a number N nor a [start:stop:step] slice')
    return f"[:{int(text)}]"


def _last(args: argparse.Namespace) -> int:
    from pflux import Client
    from pflux.errors import RPCError

    request = _slice(args.slice)
    with Client(args.uri) as client:
        try:
            jobs = client.last_jobs(request)
        except RPCError as exc:
            raise PfluxError(exc.errstr) from None
    if not jobs:
        raise PfluxError("job history is empty")
    print("\n".join(jobcommon.f58(jobid) for jobid in jobs))
    return 0
