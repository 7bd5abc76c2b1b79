"""``pflux queue list``: one line per queue with its state and limits, as flux-queue list.

A line per configured queue (the default one's name marked ``*``), or one for the
anonymous queue, with its default duration and duration limit from the ``[policy]``
tables (``pflux.spec.queues``); pflux has no job-size limits, so sizes are ``0-inf``.
``-q NAME`` lists only those; a name not configured: ``No such queue``.
"""

from __future__ import annotations

import argparse
import math
import sys

from pflux.cli.printable import printable
from pflux.errors import PfluxError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from pflux import Client, QueueStatus
    from pflux.spec.queues import QueueConfig

HEADINGS = {
    "queue": "QUEUE",
    "queuem": "QUEUE",
    "submission": "SUBMIT",
    "scheduling": "SCHED",
    "enabled": "EN",
    "started": "ST",
    "enabled.ascii": "EN",
    "started.ascii": "ST",
    "color_enabled": "",
    "color_started": "",
    "color_off": "",
    "defaults.timelimit": "TDEFAULT",
    "limits.timelimit": "TLIMIT",
    "limits.range.nnodes": "NNODES",
    "limits.range.ncores": "NCORES",
    "limits.range.ngpus": "NGPUS",
    "limits.min.nnodes": "MINNODES",
    "limits.max.nnodes": "MAXNODES",
    "limits.min.ncores": "MINCORES",
    "limits.max.ncores": "MAXCORES",
    "limits.min.ngpus": "MINGPUS",
    "limits.max.ngpus": "MAXGPUS",
}

FORMATS = {
    "default": (
        "Default flux-queue list format string",
        "?:{queuem:<8.8} {color_enabled}{enabled:>2}{color_off} "
        "{color_started}{started:>2}{color_off} {defaults.timelimit!F:>8} "
        "{limits.timelimit!F:>8} {limits.range.nnodes:>10} {limits.range.ncores:>10} "
        "{limits.range.ngpus:>10}",
    ),
}

_GREEN, _RED, _OFF = "\033[01;32m", "\033[01;31m", "\033[0;0m"


def add_parser(commands: Any) -> None:
    """The ``list`` sub-command's parser."""
    lister = commands.add_parser("list", help="list queues with their state and limits")
    lister.add_argument(
        "-q", "--queue", action="append", default=[], metavar="QUEUE,...", help="only these"
    )
    lister.add_argument(
        "-o",
        "--format",
        default="default",
        help="output format: a Python format string or a named format ('help' lists them)",
    )
    lister.add_argument("-n", "--no-header", action="store_true", help="suppress the header")
    lister.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    lister.set_defaults(func=run)


def run(client: Client, args: argparse.Namespace) -> None:
    from pflux.cli.resource import ResourceFormat

    if args.format == "help":
        sys.stdout.write("\nConfigured flux-queue list formats:\n\n")
        for name, (description, _) in FORMATS.items():
            sys.stdout.write(f"  {name:<8} {description}\n")
        return
    fmt = FORMATS[args.format][1] if args.format in FORMATS else args.format
    formatter = ResourceFormat(fmt, HEADINGS)
    from pflux.spec.queues import QueueConfig

    config = QueueConfig.from_config(client.config())
    wanted = [name for names in args.queue for name in names.split(",") if name]
    for name in wanted:
        if name not in config.queues:
            raise PfluxError(f"No such queue: {printable(name)}")
    color = sys.stdout.isatty()
    if config.queues:
        names = wanted or list(config.queues)
        rows = [_row(name, config, client.queue_status(queue=name), color=color) for name in names]
    else:
        rows = [_row(None, config, client.queue_status(), color=color)]
    sys.stdout.write(formatter.render(rows, no_header=args.no_header))


def _row(
    name: str | None, config: QueueConfig, status: QueueStatus, *, color: bool
) -> dict[str, Any]:
    """A queue's fields: its state, and the limits of its policy."""
    policy = config.policy if name is None else config.queues[name].policy
    marked = f"{name}*" if name is not None and name == config.default_queue else name
    row: dict[str, Any] = {
        "queue": name or "",
        "queuem": marked or "",
        "submission": "enabled" if status.enable else "disabled",
        "scheduling": "started" if status.start else "stopped",
        "enabled": "✔" if status.enable else "✗",
        "started": "✔" if status.start else "✗",
        "enabled.ascii": "y" if status.enable else "n",
        "started.ascii": "y" if status.start else "n",
        "color_enabled": (_GREEN if status.enable else _RED) if color else "",
        "color_started": (_GREEN if status.start else _RED) if color else "",
        "color_off": _OFF if color else "",
        "defaults.timelimit": policy.default_duration or math.inf,
        "limits.timelimit": math.inf if policy.duration_limit is None else policy.duration_limit,
    }
    for size in ("nnodes", "ncores", "ngpus"):
        row[f"limits.min.{size}"] = 0
        row[f"limits.max.{size}"] = math.inf
        row[f"limits.range.{size}"] = "0-inf"
    return row
