"""``help [COMMAND]``: the list of commands (as ``--help``), or a command's own help.

flux-core's ``flux help COMMAND`` opens the command's manual page; pflux has none, so
it prints the command's ``--help``. ``COMMAND`` may be written as ``flux-COMMAND``.
"""

from __future__ import annotations

import argparse
import sys

from pflux.cli import base


def parser() -> argparse.ArgumentParser:
    p = base.parser("help", "List the commands, or show one command's help.")
    p.add_argument("command", nargs="?", help="the command (or flux-COMMAND) to show")
    return p


def main(argv: list[str]) -> int:
    from pflux.cli import COMMANDS, main_usage
    from pflux.cli.similar import not_a_command

    args = parser().parse_args(argv)
    if args.command is None:
        sys.stdout.write(main_usage())
        return 0
    topic = args.command
    for prefix in ("flux-", "pflux-"):
        topic = topic.removeprefix(prefix)
    if topic not in COMMANDS:
        return not_a_command(base.PROG, topic, COMMANDS)
    import importlib

    command = importlib.import_module(f"pflux.cli.{COMMANDS[topic]}")
    try:
        rc: int = command.main(["--help"])
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else 0
    return rc
