"""``pflux mini run|submit|bulksubmit|batch|alloc ...``: older flux's spelling of the
submission commands, which scripts and tools written for it still type.

flux-core dropped ``flux mini`` in 2024; before that it ran the same commands and,
at a terminal, warned that ``mini`` is deprecated. pflux does both.
"""

from __future__ import annotations

import argparse
import sys

from pflux.cli import base

SUBMISSION = ("run", "submit", "bulksubmit", "batch", "alloc")


def parser() -> argparse.ArgumentParser:
    p = base.parser("mini", "Run a submission command (older flux's 'flux mini CMD').")
    p.add_argument("command", metavar="COMMAND", help=", ".join(SUBMISSION))
    p.add_argument("args", nargs=argparse.REMAINDER, help="its options and arguments")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv[:1])
    from pflux.cli import COMMANDS, dispatch

    if args.command not in SUBMISSION:
        sys.stderr.write(f"{base.PROG}-mini: ERROR: '{args.command}' is not a submission command\n")
        return 2
    if sys.stderr.isatty():
        warning = f"{base.PROG}-mini: WARNING: flux mini is deprecated, use flux {args.command}"
        sys.stderr.write(warning + "\n")
    commands = {name: COMMANDS[name] for name in SUBMISSION if name in COMMANDS}
    return dispatch("pflux", commands, "", argv)
