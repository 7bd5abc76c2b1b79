"""``pflux job stats``: job-list's job counts, printed as the JSON object it answers.

As ``flux job stats``: the counts by state, the inactive jobs' endings
(``successful``, ``failed``, ``canceled``, ``timeout``), the purged jobs, then
the same per queue, on one line.
"""

from __future__ import annotations

import json

from pflux.cli import base, jobcommon
from pflux.errors import PfluxError

NAME = "job"


def main(argv: list[str]) -> int:
    parser = base.parser("job stats", "Print job statistics as JSON.")
    jobcommon.add_uri(parser)
    args = parser.parse_args(argv)
    return base.run(NAME, lambda: _stats(args.uri))


def _stats(uri: str | None) -> int:
    from pflux import Client
    from pflux.errors import RPCError

    with Client(uri) as client:
        try:
            stats = client.job_stats()
        except RPCError as exc:
            raise PfluxError(f"stats: {exc.errstr}") from None
    print(json.dumps(stats, separators=(",", ":")))
    return 0
