"""A mistyped command: flux's words for it, and the commands most like what was typed.

Likeness is flux's: the edit distance, less one when a command starts with what was
typed (nothing at all when that is 5 characters or more); commands at the smallest
distance are named, at most 3, when it is 3 or less.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

__all__ = ["most_similar", "not_a_command"]


def _distance(a: str, b: str) -> int:
    """Levenshtein distance: the fewest single-character edits from ``a`` to ``b``."""
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (ca != cb))
    return row[-1]


def most_similar(typed: str, commands: Iterable[str]) -> list[str]:
    """The commands most like ``typed`` (at most 3), or none if none is close."""
    distances = {}
    for command in set(commands):
        distance = _distance(command, typed)
        if distance and command.startswith(typed):
            distance = 0 if len(typed) >= 5 else distance - 1
        if distance <= 3 and command != typed:  # farther is not shown
            distances[command] = distance
    if not distances:
        return []
    best = min(distances.values())
    return sorted(command for command, distance in distances.items() if distance == best)[:3]


def not_a_command(prog: str, typed: str, commands: Iterable[str]) -> int:
    """Say ``typed`` is no command of ``prog`` (and name the likeliest); exit code 1."""
    from pflux.cli.printable import printable

    lines = [f"`{printable(typed)}' is not a {prog} command.  See '{prog} --help'"]
    similar = most_similar(typed, commands)
    if similar:
        lines.append("The most similar command" + (" is" if len(similar) == 1 else "s are"))
        lines += [f"\t{command}" for command in similar]
    sys.stderr.write("".join(f"{prog}: {line}\n" for line in lines))
    return 1
