"""``flux logger MESSAGE...``: add an entry to the instance's log ring (flux-logger(1))."""

from __future__ import annotations

import argparse

from pflux.cli import base

SEVERITIES = ("emerg", "alert", "crit", "err", "warning", "notice", "info", "debug")


def parser() -> argparse.ArgumentParser:
    p = base.parser("logger", "Append a message to the instance's log ring buffer.")
    p.add_argument(
        "-s",
        "--severity",
        default="info",
        help=f"the message's severity: {', '.join(SEVERITIES)} (default: info)",
    )
    p.add_argument(
        "-n", "--appname", default="logger", help="the application's name (default: logger)"
    )
    p.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    p.add_argument("message", nargs="+")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    return base.run("logger", lambda: _logger(args))


def _logger(args: argparse.Namespace) -> None:
    from pflux import Client
    from pflux.errors import UsageError

    if args.severity not in SEVERITIES:
        raise UsageError(
            f"--severity: invalid severity {args.severity!r} (one of {', '.join(SEVERITIES)})"
        )
    with Client(args.uri) as client:
        client.log(
            " ".join(args.message), severity=SEVERITIES.index(args.severity), appname=args.appname
        )
