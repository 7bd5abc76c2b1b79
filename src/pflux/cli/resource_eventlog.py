"""``pflux resource eventlog``: the resource eventlog, as flux resource eventlog prints it.

The scheduler posts ``restart`` and ``resource-define`` when it starts, ``drain`` and
``undrain``, ``online`` and ``offline`` (``pflux.sched.eventlog``). Without ``-F`` or
``-w`` the events so far are printed; ``-F`` goes on printing them as they are posted,
``-w EVENT`` until EVENT is (with ``-m KEY=VAL``, one whose context holds each pair),
both for ``-t`` at most. ``-i TARGETS`` (ranks, or hosts) keeps the events that name
one of them, as flux's: ranks are looked for in a context's ``idset``/``ranks``, hosts
in its ``nodelist`` and then, as ranks, in its ``idset``/``ranks``.
"""

from __future__ import annotations

import argparse
import errno
import json
import math
import sys

from pflux.spec.eventlog import TIME_FORMATS

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from pflux import Client


def _pair(text: str) -> tuple[str, Any]:
    """``KEY=VAL``: VAL as JSON where it is, else as text (flux's rule)."""
    key, eq, value = text.partition("=")
    if not eq:
        raise argparse.ArgumentTypeError(f"invalid KEY=VAL argument: {text!r} (missing '=')")
    if not key:
        raise argparse.ArgumentTypeError(f"invalid KEY=VAL argument: {text!r} (empty key)")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


def _context_matches(pairs: list[tuple[str, Any]], context: dict[str, Any]) -> bool:
    """Whether ``context`` holds every pair (a float within 1e-5, as flux's)."""
    for key, value in pairs:
        have = context.get(key)
        if isinstance(have, float):
            try:
                if not math.isclose(float(value), have, rel_tol=0, abs_tol=1e-5):
                    return False
            except (TypeError, ValueError):
                return False
        elif have != value:
            return False
    return True


class _Targets:
    """The ranks or hosts of ``-i``; an event matches if its context names one."""

    def __init__(self, targets: str, hostlist: list[str]) -> None:
        from pflux.errors import PfluxError, SpecError
        from pflux.spec import hostlist as hl
        from pflux.spec import idset

        self.hosts: set[str] | None = None
        try:
            self.ranks = set(idset.decode(targets))
        except SpecError:
            try:
                self.hosts = set(hl.decode(targets))
            except SpecError:
                raise PfluxError(f"invalid targets {targets}") from None
            self.ranks = {rank for rank, host in enumerate(hostlist) if host in self.hosts}

    def _ranks_match(self, context: dict[str, Any]) -> bool:
        from pflux.spec import idset

        key = "ranks" if "ranks" in context else "idset"
        return key in context and not self.ranks.isdisjoint(idset.decode(str(context[key])))

    def match(self, context: dict[str, Any]) -> bool:
        from pflux.spec import hostlist as hl

        if self.hosts is None:
            return self._ranks_match(context)
        nodelist = context.get("nodelist")
        if isinstance(nodelist, str) and not self.hosts.isdisjoint(hl.decode(nodelist)):
            return True
        return self._ranks_match(context)


def add_parser(commands: Any) -> None:
    """The ``eventlog`` sub-command's parser."""
    events = commands.add_parser("eventlog", help="print the resource eventlog")
    events.add_argument(
        "-f", "--format", choices=("text", "json"), default="text", help="text, or the raw lines"
    )
    events.add_argument(
        "-T",
        "--time-format",
        choices=TIME_FORMATS,
        default="raw",
        metavar="FORMAT",
        help=f"timestamps as {', '.join(TIME_FORMATS)}",
    )
    events.add_argument("-H", "--human", action="store_true", help="human-readable text")
    events.add_argument("-F", "--follow", action="store_true", help="print events as posted")
    events.add_argument("-w", "--wait", metavar="EVENT", help="print events until EVENT is posted")
    events.add_argument(
        "-t",
        "--timeout",
        metavar="DURATION",
        help="with --follow or --wait, give up after DURATION",
    )
    events.add_argument(
        "-m",
        "--match-context",
        metavar="KEY=VAL",
        type=_pair,
        action="append",
        default=[],
        help="with --wait, only an EVENT whose context holds KEY=VAL (repeatable)",
    )
    events.add_argument(
        "-i", "--include", metavar="TARGETS", help="only events naming TARGETS (ranks or hosts)"
    )
    events.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")


def run(args: argparse.Namespace) -> int:
    from pflux import Client
    from pflux.errors import PfluxError, RPCError
    from pflux.spec.eventlog import EventlogReader, TextFormatter
    from pflux.spec.kvs_keys import RESOURCE_EVENTLOG

    if args.timeout is not None and not args.follow and args.wait is None:
        raise PfluxError("-t/--timeout: only with --follow or --wait")
    if args.match_context and args.wait is None:
        raise PfluxError("-m/--match-context: only with --wait")
    raw = args.format == "json" and not args.human
    formatter = TextFormatter("human" if args.human else args.time_format)
    reader = EventlogReader()
    targets: _Targets | None = None

    def show(text: str) -> bool:
        """Print the events of ``text``; True once the awaited one is printed."""
        for event in reader.feed(text):
            context = event.context or {}
            if targets is not None and not targets.match(context):
                continue
            sys.stdout.write(event.to_line() if raw else formatter.format(event) + "\n")
            if event.name == args.wait and _context_matches(args.match_context, context):
                sys.stdout.flush()
                return True
        sys.stdout.flush()
        return False

    with Client(args.uri) as client:
        if args.include is not None:
            targets = _Targets(args.include, _hostlist(client))
        if args.follow or args.wait is not None:
            _follow(client, show, args.timeout)
            return 0
        try:
            show(client.kvs_get(RESOURCE_EVENTLOG))
        except RPCError as exc:
            if exc.errnum != errno.ENOENT:
                raise
    return 0


def _hostlist(client: Client) -> list[str]:
    """The instance's hosts, by rank."""
    from pflux.spec import hostlist

    hosts = client.attrs().get("hostlist", "")
    return hostlist.decode(hosts) if hosts else []


def _follow(client: Client, show: Callable[[str], bool], timeout: str | None) -> None:
    """Show the eventlog as it grows, until ``show`` says the awaited event came, for
    ``timeout`` (a duration) at most."""
    import time

    from pflux.cli.jobcommon import duration_arg
    from pflux.errors import PfluxError, RPCError
    from pflux.spec.kvs_keys import RESOURCE_EVENTLOG

    seconds = duration_arg(timeout)
    watch = client.kvs_watch([RESOURCE_EVENTLOG], append=True, waitcreate=True)
    if seconds is not None:
        watch.deadline = time.monotonic() + seconds
    try:
        for _, value in watch:
            if show(value):
                watch.stop(0)
    except RPCError as exc:
        if exc.errnum == errno.ETIMEDOUT:
            raise PfluxError("Connection timed out") from None
        raise
