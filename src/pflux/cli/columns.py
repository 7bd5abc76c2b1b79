"""The terminal's width, for argparse's help: asked once, without importing shutil.

argparse makes a formatter for every option it adds, and shutil (its way to ask)
brings bz2, lzma and more with it, a twentieth of a short command's time. It
imports nothing of pflux's: the argparse side of the commands uses it.
"""

from __future__ import annotations

import os
import sys

__all__ = ["forget_terminal_columns", "terminal_columns"]

_COLUMNS: list[int] = []  # the terminal's width, once asked


def terminal_columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size().columns`` gives it: COLUMNS
    if set, else stdout's terminal, else 80; asked once (``forget_terminal_columns``),
    as argparse makes a formatter for every option it adds."""
    if not _COLUMNS:
        _COLUMNS.append(_ask_terminal_columns())
    return _COLUMNS[0]


def forget_terminal_columns() -> None:
    """Ask the terminal's width again at the next ``terminal_columns()``."""
    _COLUMNS.clear()


def _ask_terminal_columns() -> int:
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80
