"""``pflux resource eventlog``: the resource eventlog, as flux resource eventlog prints it.

The scheduler posts ``restart`` and ``resource-define`` when it starts, ``drain`` and
``undrain``, ``online`` and ``offline`` (``pflux.sched.eventlog``). Without ``-F`` or
``-w`` the events so far are printed; ``-F`` goes on printing them as they are posted,
``-w EVENT`` until EVENT is.
"""

from __future__ import annotations

import argparse
import errno
import sys
from typing import Any

from pflux.spec.eventlog import TIME_FORMATS


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
    events.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")


def run(args: argparse.Namespace) -> int:
    from pflux import Client
    from pflux.errors import RPCError
    from pflux.spec.eventlog import EventlogReader, TextFormatter
    from pflux.spec.kvs_keys import RESOURCE_EVENTLOG

    raw = args.format == "json" and not args.human
    formatter = TextFormatter("human" if args.human else args.time_format)
    reader = EventlogReader()

    def show(text: str) -> bool:
        """Print the events of ``text``; True once the awaited one is printed."""
        for event in reader.feed(text):
            sys.stdout.write(event.to_line() if raw else formatter.format(event) + "\n")
            if args.wait is not None and event.name == args.wait:
                sys.stdout.flush()
                return True
        sys.stdout.flush()
        return False

    with Client(args.uri) as client:
        if not args.follow and args.wait is None:
            try:
                show(client.kvs_get(RESOURCE_EVENTLOG))
            except RPCError as exc:
                if exc.errnum != errno.ENOENT:
                    raise
            return 0
        watch = client.kvs_watch([RESOURCE_EVENTLOG], append=True, waitcreate=True)
        for _, value in watch:
            if show(value):
                watch.stop(0)
    return 0
