"""``pflux pkill``: cancel the jobs ``pflux pgrep`` would list (``pflux.cli.pgrep``)."""

from __future__ import annotations

import argparse

from pflux.cli import pgrep


def parser() -> argparse.ArgumentParser:
    return pgrep.parser(kill=True)


def main(argv: list[str]) -> int:
    """Entry point of ``pflux pkill``."""
    return pgrep.run(argv, kill=True)
