"""Naming and printing job eventlogs: what ``job eventlog`` and ``wait-event`` share.

Paths have flux's short names (``exec`` is ``guest.exec.eventlog``, ``output``
is ``guest.output``) and each known log has the event that ends it, which
``eventlog --follow`` waits for. Events print in flux's text form
(``<timestamp> <name> key=value ...``) or as their JSON lines.
"""

from __future__ import annotations

import argparse

from pflux.cli.printable import printable
from pflux.spec.eventlog import Event, TextFormatter, format_text

# short name -> (path under the job's KVS directory, the event that ends that log)
PATHS: dict[str, tuple[str, str | None]] = {
    "eventlog": ("eventlog", "clean"),
    "exec": ("guest.exec.eventlog", "done"),
    "output": ("guest.output", None),
    "input": ("guest.input", None),
}
_BY_PATH = {path: (path, end) for path, end in PATHS.values()}


def resolve(name: str) -> tuple[str, str | None]:
    """The path a short name or full path means, and the event that ends its log, if known."""
    return PATHS.get(name) or _BY_PATH.get(name) or (name, None)


def add_path_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-p",
        "--path",
        default="eventlog",
        help="eventlog to read: eventlog (default), exec, output, input, or a full path"
        " such as guest.exec.eventlog",
    )


def add_format_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-f", "--format", choices=("text", "json"), default="text", help="output format"
    )
    parser.add_argument(
        "-T",
        "--time-format",
        choices=("raw", "iso", "offset"),
        default="raw",
        help="timestamps as seconds (raw), ISO 8601 (iso), or seconds since the first event",
    )
    parser.add_argument(
        "-H", "--human", action="store_true", help="human-readable text (implies --format=text)"
    )


class EventPrinter:
    """Formats events as the options ask, counting offsets from the first event *seen*.

    An event seen but not printed (``wait-event`` skips most) still sets the
    offset origin, as flux does.
    """

    def __init__(self, args: argparse.Namespace) -> None:
        self.json = args.format == "json" and not args.human
        self.time_format = "human" if args.human else args.time_format
        self.human = TextFormatter("human") if args.human else None
        self.t0: float | None = None

    def seen(self, event: Event) -> None:
        if self.t0 is None:
            self.t0 = event.timestamp

    def line(self, event: Event) -> str:
        """The event's line: its JSON as stored, else text made printable (a memo's key
        or a note's C1 controls reach no terminal raw)."""
        self.seen(event)
        if self.json:
            return event.to_line()
        if self.human is not None:
            return printable(self.human.format(event)) + "\n"
        return printable(format_text(event, time_format=self.time_format, t0=self.t0)) + "\n"
