"""``pflux job wait-event ID EVENT``: wait for an event in a job's eventlog, as flux does.

The event is printed when it arrives (``-v``: every earlier one too; ``-q``:
nothing). ``-m KEY=VAL`` requires a context value, compared as compact JSON or,
for a string, as the bare string; ``-c N`` waits for the N-th match. The
command fails when the log ends without the event, or when ``--timeout``
passes: the timeout bounds the whole wait (flux's restarts with each event).
``-W`` is refused: pflux always waits for the log to be created.
"""

from __future__ import annotations

import argparse
import errno
import sys

from pflux.cli import base, eventwatch, jobcommon
from pflux.errors import PfluxError, UsageError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

NAME = "job"
# flux fails at once on a missing log unless -W; pflux's job-info always waits, so -W
# would change nothing
WAITCREATE_REFUSED = (
    "--waitcreate: not supported: pflux always waits for the log to be created, with or without it"
)


def main(argv: list[str]) -> int:
    parser = base.parser("job wait-event", "Wait for an event in a job's eventlog.")
    jobcommon.add_uri(parser)
    eventwatch.add_format_options(parser)
    eventwatch.add_path_option(parser)
    parser.add_argument("-t", "--timeout", metavar="DURATION", help="give up after DURATION")
    parser.add_argument(
        "-m", "--match-context", metavar="KEY=VAL", help="match only events with KEY=VAL"
    )
    parser.add_argument(
        "-c", "--count", type=int, default=1, help="wait for the COUNT-th match (default 1)"
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="do not print the event")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="print every event before the match too"
    )
    parser.add_argument(
        "-W",
        "--waitcreate",
        action="store_true",
        help="refused: pflux always waits for the log to be created",
    )
    parser.add_argument("jobid", metavar="ID", help="job id (any encoding)")
    parser.add_argument("event", metavar="EVENT", help="event name")
    args = parser.parse_args(argv)
    return base.run(NAME, lambda: _wait_event(args))


def _wait_event(args: argparse.Namespace) -> int:
    from pflux import Client
    from pflux.errors import RPCError
    from pflux.spec.fluid import JobID

    if args.waitcreate:
        raise UsageError(WAITCREATE_REFUSED)
    jobid = JobID.parse(args.jobid)
    if args.count <= 0:
        raise PfluxError("count must be > 0")
    match = _match(args.match_context)
    timeout = jobcommon.duration_arg(args.timeout)
    path, _ = eventwatch.resolve(args.path)
    printer = eventwatch.EventPrinter(args)
    matches = 0
    try:
        with Client(args.uri) as client:
            for event in client.events(jobid, path=path, timeout=timeout):
                found = event.name == args.event and (
                    match is None or _context_matches(event.context, *match)
                )
                matches += found
                if found and matches == args.count:
                    if not args.quiet:
                        sys.stdout.write(printer.line(event))
                    return 0
                if args.verbose:
                    sys.stdout.write(printer.line(event))
                    sys.stdout.flush()  # a pipe sees each event as it comes
                else:
                    printer.seen(event)
    except RPCError as exc:
        if exc.errnum == errno.ETIMEDOUT:
            raise PfluxError(f"wait-event timeout on event '{args.event}'") from None
        raise
    raise PfluxError(f"event '{args.event}' never received")


def _match(text: str | None) -> tuple[str, str] | None:
    if text is None:
        return None
    key, equals, value = text.partition("=")
    if not equals:
        raise PfluxError("must specify a context test as key=value")
    return key, value


def _context_matches(context: dict[str, Any] | None, key: str, value: str) -> bool:
    if context is None or key not in context:
        return False
    found = context[key]
    if isinstance(found, str) and found == value:
        return True
    import orjson

    return bool(orjson.dumps(found).decode() == value)
