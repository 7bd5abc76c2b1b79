"""``kvs eventlog get|append|wait-event``: RFC 18 eventlogs kept in the KVS.

``get`` prints the events (``-w`` as they come, ``-W`` once the log exists, ``-c``
at most so many); ``append`` adds one (``-t`` its timestamp, else now; the
context words joined make a JSON object); ``wait-event`` prints the first event
of a name (``-v`` the events before it too, ``-q`` nothing) and fails after
``-t`` (a duration). As ``flux``, an event prints as flux-core's ``flux-kvs`` prints
it, ``TIMESTAMP NAME {context as JSON}``; as ``pflux``, in the text form of
``pflux job eventlog``; ``-H``, that text with human-readable times either way.
``-u``: the raw lines.
"""

from __future__ import annotations

import argparse
import errno
import sys
import time
from collections.abc import Callable

import orjson

from pflux.cli.kvs_common import (
    Failure,
    as_flux,
    client,
    commit_failure,
    lookup_failure,
    namespace,
    normalize,
)
from pflux.errors import PfluxError, RPCError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from pflux.spec.eventlog import Event


def _printer(args: argparse.Namespace) -> Callable[[Event], str]:
    """How one event is printed, with its newline."""
    from pflux.spec.eventlog import TextFormatter

    if args.unformatted or getattr(args, "format", "text") == "json":
        return lambda event: event.to_line()
    human = getattr(args, "human", False)
    if as_flux() and not human:
        return _flux_line
    formatter = TextFormatter("human" if human else "raw")
    return lambda event: formatter.format(event) + "\n"


def _flux_line(event: Event) -> str:
    context = "" if event.context is None else " " + orjson.dumps(event.context).decode()
    return f"{event.timestamp:.6f} {event.name}{context}\n"


# --- get -----------------------------------------------------------------------------------


def get(args: argparse.Namespace) -> None:
    from pflux.spec.eventlog import EventlogReader

    key = normalize(args.key)
    line = _printer(args)
    reader = EventlogReader()
    shown = 0

    def show(text: str) -> None:
        nonlocal shown
        for event in reader.feed(text):
            if args.count and shown >= args.count:
                break
            sys.stdout.write(line(event))
            shown += 1
        sys.stdout.flush()

    with client(args) as kvs:
        ns = namespace(args)
        if args.watch or args.waitcreate:
            # -W alone: the whole value once it exists; -w: the value, then what is appended
            watch = kvs.kvs_watch(
                [key], append=args.watch, waitcreate=args.waitcreate, namespace=ns
            )
            try:
                for _, text in watch:
                    show(text)
                    if not args.watch or (args.count and shown >= args.count):
                        watch.stop(0)
            except RPCError as exc:
                raise lookup_failure(key, exc) from None
        else:
            try:
                show(kvs.kvs_get(key, namespace=ns))
            except RPCError as exc:
                raise lookup_failure(key, exc) from None
    reader.finish()


# --- append --------------------------------------------------------------------------------


def append(args: argparse.Namespace) -> None:
    from pflux.errors import EventlogError
    from pflux.spec.eventlog import Event

    context = None
    if args.context:
        try:
            context = orjson.loads(" ".join(args.context))
        except orjson.JSONDecodeError as exc:
            raise Failure(f"eventlog append: context: not JSON: {exc}") from None
    try:
        event = Event(args.timestamp or time.time(), args.name, context)
    except EventlogError as exc:
        raise Failure(f"eventlog append: {exc}") from None
    key = normalize(args.key)
    with client(args) as kvs:
        try:
            kvs.kvs_put([(key, event.to_line())], append=True, namespace=namespace(args))
        except RPCError as exc:
            raise commit_failure("flux_kvs_commit", exc) from None


def duration(text: str) -> float | None:
    """A Flux standard duration (a bare number: seconds) as seconds; None: no limit."""
    import math

    from pflux.spec import duration

    try:
        seconds = duration.parse(text)
    except PfluxError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return None if math.isinf(seconds) else seconds


def timestamp(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text} is not a time since the epoch")
    return value


# --- wait-event ------------------------------------------------------------------------------


def wait_event(args: argparse.Namespace) -> None:
    from pflux.spec.eventlog import EventlogReader

    key = normalize(args.key)
    line = _printer(args)
    reader = EventlogReader()
    with client(args) as kvs:
        watch = kvs.kvs_watch(
            [key], append=True, waitcreate=args.waitcreate, namespace=namespace(args)
        )
        if args.timeout is not None:
            watch.deadline = time.monotonic() + args.timeout
        try:
            for _, text in watch:
                for event in reader.feed(text):
                    if event.name == args.event:
                        if not args.quiet:
                            sys.stdout.write(line(event))
                        return
                    if args.verbose:
                        sys.stdout.write(line(event))
                sys.stdout.flush()
        except RPCError as exc:
            if exc.errnum == errno.ETIMEDOUT:
                raise Failure(f"wait-event timeout on event '{args.event}'") from None
            if exc.errnum == errno.ENOENT:
                raise Failure(f"eventlog path {key} not found") from None
            raise
    raise Failure(f"event '{args.event}' never received")
