"""``flux event pub|sub``: publish events and print those subscribed to (flux-event(1)).

A subscription matches every event whose topic starts with it; ``sub`` prints
each event as its topic, a tab, and its payload (JSON), one a line.
"""

from __future__ import annotations

import argparse
import json
import sys

from pflux.cli import base

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from pflux import Client


def parser() -> argparse.ArgumentParser:
    p = base.parser("event", "Publish and subscribe to events.")
    sub = p.add_subparsers(dest="command", required=True)
    pub = sub.add_parser("pub", help="publish an event")
    pub.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    pub.add_argument("-r", "--raw", action="store_true", help="a raw payload (refused: JSON only)")
    pub.add_argument(
        "-s", "--synchronous", action="store_true", help="wait for its sequence number"
    )
    pub.add_argument(
        "-l", "--loopback", action="store_true", help="wait until the event is received back"
    )
    pub.add_argument("-p", "--private", action="store_true", help="a private event")
    pub.add_argument("topic")
    pub.add_argument("payload", nargs="*", help="JSON (several words are joined by spaces)")
    subscribe = sub.add_parser("sub", help="print events as they come")
    subscribe.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    subscribe.add_argument("-c", "--count", type=int, metavar="N", help="exit after N events")
    subscribe.add_argument("topics", nargs="*", help="topic prefixes (default: every event)")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    return base.run("event", lambda: _event(args))


def _event(args: argparse.Namespace) -> None:
    from pflux import Client

    with Client(args.uri) as client:
        if args.command == "pub":
            _pub(client, args)
        else:
            _sub(client, args)


def _pub(client: Client, args: argparse.Namespace) -> None:
    from pflux.errors import UsageError

    if args.raw:
        raise UsageError("--raw: pflux's events carry JSON payloads only")
    payload = None
    if args.payload:
        text = " ".join(args.payload)
        try:
            payload = json.loads(text)
        except ValueError:
            raise UsageError(f"{args.topic}: payload is not valid JSON: {text}") from None
    if not args.loopback:
        client.publish_event(args.topic, payload, private=args.private)
        return
    events = client.subscribe([args.topic])
    seq = client.publish_event(args.topic, payload, private=args.private)
    for event in events:
        if event["seq"] == seq:
            return


def _sub(client: Client, args: argparse.Namespace) -> None:
    from pflux.cli.printable import printable
    from pflux.errors import UsageError

    if args.count is not None and args.count <= 0:
        raise UsageError("--count must be a positive number")
    for seen, event in enumerate(client.subscribe(args.topics or [""]), 1):
        payload = event["payload"]
        text = "" if payload is None else json.dumps(payload, separators=(",", ":"))
        sys.stdout.write(f"{printable(event['topic'])}\t{printable(text)}\n")
        sys.stdout.flush()
        if args.count is not None and seen >= args.count:
            return
