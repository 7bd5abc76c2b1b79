"""``pflux queue status|list|enable|disable|start|stop|drain|idle``: control the queues,
as flux.

With no ``[queues]`` configured there is one queue, with no name, and ``-q NAME`` is
refused as flux-core refuses a queue it does not have (``'NAME' is not a valid queue``).
With named queues, ``-q NAME`` acts on one and ``-a``/``--all`` on every one; ``status``
and the lines printed after a change show each queue, prefixed ``NAME: ``. ``list``
shows a line per queue (``queue_list``). Submission is enabled or disabled (with a
reason); scheduling is started or stopped (with an optional reason). Output is flux's:
``Job submission is enabled``, ``Scheduling is stopped: REASON``. ``drain`` waits until
no job is active, ``idle`` until none is running and prints how many are pending.
"""

from __future__ import annotations

import argparse
import errno
from collections.abc import Callable

from pflux.cli import base, jobcommon, queue_list
from pflux.cli.printable import printable
from pflux.errors import PfluxError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from pflux import Client, QueueStatus

NAME = "queue"
DEFAULT_DISABLE_REASON = "disabled by administrator"


def main(argv: list[str]) -> int:
    parser = base.parser(NAME, "Control the job queue.")
    commands = parser.add_subparsers(title="subcommands", dest="subcommand", metavar="COMMAND")
    commands.required = True
    status = commands.add_parser("status", help="show whether submission and scheduling are on")
    jobcommon.add_uri(status)
    _verbose(status)
    _queue_name(status)
    status.set_defaults(func=_status)
    for command, func, what in (
        ("enable", _enable, "accept new jobs"),
        ("disable", _disable, "refuse new jobs"),
        ("start", _start, "start scheduling"),
        ("stop", _stop, "stop scheduling (running jobs go on)"),
    ):
        sub = commands.add_parser(command, help=what)
        jobcommon.add_uri(sub)
        sub.add_argument("-a", "--all", action="store_true", help="every queue, if none is named")
        _queue_name(sub)
        sub.add_argument("--quiet", action="store_true", help="print only errors")
        _verbose(sub)
        if command in ("disable", "stop"):
            sub.add_argument("-m", "--message", metavar="REASON", help="why, shown by status")
        if command == "stop":
            sub.add_argument(
                "--nocheckpoint",
                action="store_true",
                help="stop only until the instance restarts (the stop is not stored)",
            )
        sub.set_defaults(func=func)
    queue_list.add_parser(commands)
    for command, func, what in (
        ("drain", _drain, "wait until no job is active"),
        ("idle", _idle, "wait until no job is running"),
    ):
        sub = commands.add_parser(command, help=what)
        jobcommon.add_uri(sub)
        sub.add_argument("-t", "--timeout", metavar="DURATION", help="give up after DURATION (FSD)")
        if command == "idle":
            sub.add_argument(
                "--quiet", action="store_true", help="print the pending count only if nonzero"
            )
        sub.set_defaults(func=func)
    args = parser.parse_args(argv)
    return base.run(NAME, lambda: _connected(args))


def _verbose(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="also show the job manager's alloc queue"
    )


def _queue_name(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-q", "--queue", metavar="NAME", help="the named queue (of those configured)"
    )


def _connected(args: argparse.Namespace) -> int | None:
    from pflux import Client

    func: Callable[[Client, argparse.Namespace], int | None] = args.func
    with Client(args.uri) as client:
        return func(client, args)


def _call(what: str, fn: Callable[[], Any]) -> Any:
    """Run one request; its error is reported as ``WHAT: message``, as flux-queue does."""
    from pflux.errors import RPCError

    try:
        return fn()
    except RPCError as exc:
        if exc.errnum == errno.ETIMEDOUT:
            raise PfluxError(f"{what}: timeout") from None
        raise PfluxError(f"{what}: {exc.errstr}") from None


def _statuses(client: Client, args: argparse.Namespace) -> list[tuple[str, QueueStatus]]:
    """The state of the queue named, else of every named queue, else of the anonymous one,
    each with its line prefix (flux's ``NAME: ``)."""
    names: list[str | None] = [args.queue]
    if args.queue is None or args.verbose:
        names = [*_call("list", client.queues)] or names
    return [(_prefix(name), _one_status(client, name)) for name in names]


def _prefix(name: str | None) -> str:
    return "" if name is None else f"{printable(name)}: "


def _one_status(client: Client, name: str | None) -> QueueStatus:
    status: QueueStatus = _call("status", lambda: client.queue_status(queue=name))
    return status


def _enable_line(status: QueueStatus) -> str:
    if status.enable:
        return "Job submission is enabled"
    reason = status.disable_reason
    if not reason:
        return "Job submission is disabled"
    return f"Job submission is disabled: {printable(reason)}"


def _start_line(status: QueueStatus) -> str:
    if status.start:
        return "Scheduling is started"
    reason = status.stop_reason
    return f"Scheduling is stopped: {printable(reason)}" if reason else "Scheduling is stopped"


def _alloc_query(client: Client) -> None:
    query = _call("alloc-query", client.alloc_query)
    print(f"{query.queue_length} alloc requests queued")
    print(f"{query.alloc_pending} alloc requests pending to scheduler")
    print(f"{query.running} running jobs")


def _status(client: Client, args: argparse.Namespace) -> None:
    for prefix, status in _statuses(client, args):
        print(prefix + _enable_line(status))
        print(prefix + _start_line(status))
    if args.verbose:
        _alloc_query(client)


def _set_enable(client: Client, args: argparse.Namespace, enable: bool, reason: str) -> None:
    _call("enable", lambda: client.queue_enable(enable, reason, queue=args.queue, all=args.all))
    if not args.quiet:
        for prefix, status in _statuses(client, args):
            print(prefix + _enable_line(status))
        if args.verbose:
            _alloc_query(client)


def _set_start(client: Client, args: argparse.Namespace, start: bool, reason: str) -> None:
    if args.queue is None and not args.all and _call("list", client.queues):
        raise PfluxError("Named queues are defined. Specify queues or use --all.")
    stored = not getattr(args, "nocheckpoint", False)
    _call(
        "start",
        lambda: client.queue_start(
            start, reason, checkpoint=stored, queue=args.queue, all=args.all
        ),
    )
    if not args.quiet:
        for prefix, status in _statuses(client, args):
            print(prefix + _start_line(status))
        if args.verbose:
            _alloc_query(client)


def _enable(client: Client, args: argparse.Namespace) -> None:
    _set_enable(client, args, True, "")


def _disable(client: Client, args: argparse.Namespace) -> None:
    _set_enable(client, args, False, args.message or DEFAULT_DISABLE_REASON)


def _start(client: Client, args: argparse.Namespace) -> None:
    _set_start(client, args, True, "")


def _stop(client: Client, args: argparse.Namespace) -> None:
    _set_start(client, args, False, args.message or "")


def _drain(client: Client, args: argparse.Namespace) -> None:
    timeout = jobcommon.duration_arg(args.timeout)
    _call("drain", lambda: client.drain(timeout))


def _idle(client: Client, args: argparse.Namespace) -> None:
    timeout = jobcommon.duration_arg(args.timeout)
    pending: int = _call("idle", lambda: client.idle(timeout))
    if not args.quiet or pending:
        print(f"{pending} jobs")
