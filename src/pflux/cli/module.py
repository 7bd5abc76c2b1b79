"""``flux module list``: what the instance runs, in flux-module(1)'s columns.

pflux's services are part of the instance, not modules a broker loads: ``load``,
``remove``, ``reload`` and the rest are refused, saying so.
"""

from __future__ import annotations

import argparse
import sys

from pflux.cli import base

REFUSED = ("load", "remove", "reload", "stats", "debug", "trace")


def parser() -> argparse.ArgumentParser:
    p = base.parser("module", "List the instance's services (flux's broker modules).")
    sub = p.add_subparsers(dest="command", required=True)
    listing = sub.add_parser("list", help="list the services")
    listing.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    listing.add_argument("-l", "--long", action="store_true", help="also the Python path")
    for name in REFUSED:
        refused = sub.add_parser(name, help="not supported: pflux's services are built in")
        refused.add_argument("args", nargs=argparse.REMAINDER)
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    return base.run("module", lambda: _module(args))


def _module(args: argparse.Namespace) -> None:
    from pflux import Client
    from pflux.errors import PfluxError

    if args.command != "list":
        raise PfluxError(
            f"{args.command}: not supported: pflux's services are part of the instance,"
            " not modules loaded at run time (see 'module list')"
        )
    with Client(args.uri) as client:
        mods = client.modules()
    if args.long:
        sys.stdout.write(f"{'Module':<24.24} {'Idle':>4}  S Sendq Recvq {'Service':<8} Path\n")
    else:
        sys.stdout.write(f"{'Module':<24} {'Idle':>4}  S Sendq Recvq Service\n")
    for mod in mods:
        name = str(mod["name"])
        row = f"{name:<24.24} {'-':>4}  {mod['status']} {0:5d} {0:5d}"
        if args.long:
            row += f" {'':<8} {mod['path']}"
        else:
            row += " "
        sys.stdout.write(row + "\n")
