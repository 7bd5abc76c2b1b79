"""``flux startlog``: when the instance started and stopped (flux-startlog(1)).

Read from the KVS eventlog the broker keeps (``pflux.broker.startlog``): one line
a run, its start, its end and how long it ran; ``running`` for this run,
``crashed`` for a run no finish event ended.
"""

from __future__ import annotations

import argparse
import sys
import time

from pflux.cli import base

KEY = "admin.eventlog"


def parser() -> argparse.ArgumentParser:
    p = base.parser("startlog", "List the instance's start and stop times.")
    p.add_argument("--check", action="store_true", help="exit 1 if the last start followed a crash")
    p.add_argument("--quiet", action="store_true", help="print nothing but errors")
    p.add_argument(
        "-v", "--show-version", action="store_true", help="the version each run started with"
    )
    p.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    return base.run("startlog", lambda: _startlog(args))


def _stamp(timestamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(timestamp))


def _startlog(args: argparse.Namespace) -> int:
    from pflux import Client
    from pflux.spec import duration, eventlog

    with Client(args.uri) as client:
        events = eventlog.parse(client.kvs_get(KEY))
    runs = [e for e in events if e.name in ("start", "finish")]
    crashed = False
    for i, event in enumerate(runs):
        if event.name != "start":
            continue
        following = runs[i + 1] if i + 1 < len(runs) else None
        if following is None:
            end = "running"
        elif following.name == "finish":
            ran = duration.format(max(0.0, following.timestamp - event.timestamp), precision=3)
            end = f"{_stamp(following.timestamp)} ({ran})"
        else:
            end = "crashed"
        crashed = i > 0 and runs[i - 1].name == "start"
        if not args.quiet:
            version = f" {(event.context or {}).get('version', '')}" if args.show_version else ""
            sys.stdout.write(f"{_stamp(event.timestamp)}{version} - {end}\n")
    return 1 if args.check and crashed else 0
