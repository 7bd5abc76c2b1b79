"""``pflux dmesg``: print the instance's log ring (flux-dmesg(1)'s options and format)."""

from __future__ import annotations

import argparse
import sys

from pflux.cli import base


def parser() -> argparse.ArgumentParser:
    p = base.parser("dmesg", "Print or control the instance's log ring buffer.")
    p.add_argument("-C", "--clear", action="store_true", help="clear the ring buffer")
    p.add_argument(
        "-c", "--read-clear", action="store_true", help="clear the ring buffer after printing"
    )
    p.add_argument("-f", "--follow", action="store_true", help="print new entries as they come")
    p.add_argument("-n", "--new", action="store_true", help="print only new entries")
    p.add_argument("-H", "--human", action="store_true", help="human readable timestamps")
    p.add_argument(
        "-d", "--delta", action="store_true", help="with --human, time since the previous entry"
    )
    p.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    return base.run("dmesg", lambda: _dmesg(args))


def _dmesg(args: argparse.Namespace) -> None:
    from pflux import Client
    from pflux.cli import logentry
    from pflux.cli.printable import printable
    from pflux.errors import UsageError

    if args.delta and not args.human:
        raise UsageError("--delta can only be used with --human")
    human = logentry.Human(args.delta) if args.human else None
    with Client(args.uri) as client:
        if not args.clear:
            for entry in client.dmesg(follow=args.follow, new=args.new):
                stamp = entry.get("timestamp", 0.0)
                shown = human.stamp(stamp) if human else logentry.iso(stamp)
                sys.stdout.write(f"{shown} {printable(logentry.body(entry))}\n")
                sys.stdout.flush()
        if args.clear or args.read_clear:
            client.clear_log()
