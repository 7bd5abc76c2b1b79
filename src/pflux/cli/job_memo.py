"""``pflux job memo [--volatile] ID KEY=VALUE ...``: attach data to a job (RFC 21 ``memo``).

As ``flux job memo``: VALUE is JSON if it parses, else a string; ``-`` reads it
from stdin; a dotted KEY sets a nested key (``a.b=1`` is ``{"a": {"b": 1}}``);
``null`` removes a key. The memo shows in ``pflux jobs -o {user.KEY}``.
``--volatile`` skips the eventlog: the memo is lost at a restart.
"""

from __future__ import annotations

import argparse
import sys

from pflux.cli import base, jobcommon
from pflux.errors import PfluxError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

NAME = "job"


def main(argv: list[str]) -> int:
    parser = base.parser("job memo", "Attach KEY=VALUE data to an active job.")
    jobcommon.add_uri(parser)
    parser.add_argument(
        "--volatile",
        action="store_true",
        help="keep the memo out of the eventlog (it is lost at a restart)",
    )
    parser.add_argument("jobid", metavar="ID", help="job id (any encoding)")
    parser.add_argument("pairs", metavar="KEY=VALUE", nargs="+", help="VALUE: JSON, text or -")
    args = parser.parse_args(argv)
    return base.run(NAME, lambda: _memo(args))


def memo_object(pairs: list[str]) -> dict[str, Any]:
    """The memo the KEY=VALUE arguments make (``-``: the value is read from stdin)."""
    import orjson

    from pflux.spec.replay import apply_jobspec_updates

    memo: dict[str, Any] = {}
    for pair in pairs:
        key, equals, text = pair.partition("=")
        if not equals:
            raise PfluxError(f"memo: no value for key={key}")
        if text == "-":
            text = sys.stdin.read()
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            value = text
        apply_jobspec_updates(memo, {key: value})  # dotted keys nest, as an update's do
    return memo


def _memo(args: argparse.Namespace) -> int:
    from pflux import Client
    from pflux.errors import RPCError
    from pflux.spec.fluid import JobID

    jobid = JobID.parse(args.jobid)
    memo = memo_object(args.pairs)
    with Client(args.uri) as client:
        try:
            client.memo(jobid, memo, volatile=args.volatile)
        except RPCError as exc:
            raise PfluxError(f"memo: {exc.errstr}") from None
    return 0
