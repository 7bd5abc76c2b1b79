"""argparse as pflux's commands use it: the parser of their help, usage and errors.

Only loaded where a command needs it (its help, a usage error, a rarer form of
its options: ``pflux.cli.options``), as argparse brings ``re``, enum and gettext.
"""

from __future__ import annotations

import argparse

from pflux.cli.columns import terminal_columns

__all__ = ["HelpFormatter", "parser"]

# argparse asks gettext for a translation of each message it builds, and gettext
# searches the locale directories for a catalogue every time (loading ``locale`` for
# it): pflux speaks English, as flux does, and Python ships argparse no catalogue.
argparse._ = str  # type: ignore[attr-defined]
argparse.ngettext = lambda singular, plural, n: singular if n == 1 else plural  # type: ignore[attr-defined]


def parser(prog: str, description: str | None) -> argparse.ArgumentParser:
    """An argument parser whose messages say ``prog``, as wide as the terminal."""
    return argparse.ArgumentParser(
        prog=prog, description=description, formatter_class=HelpFormatter
    )


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, as wide as the terminal (``pflux.cli.columns``)."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        if width is None:
            width = terminal_columns() - 2  # as argparse does
        super().__init__(prog, indent_increment, max_help_position, width)
