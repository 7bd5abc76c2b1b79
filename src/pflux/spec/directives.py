"""RFC 36 submission directives: the ``#flux:`` lines at the top of a batch script.

A directive is a line made of a prefix of non-word characters (``#``, ``# ``),
the sentinel ``flux:`` (or ``FLUX:``) and options, split as a shell splits a
command line (quotes, backslashes, ``#`` comments), except that a backslash
escapes a quote inside single quotes too, as flux reads them. Directives come before the
script's first line that is neither blank nor a comment (the ``#!`` line is
one); every directive uses the same prefix and sentinel. A directive found
later, or with another sentinel, is an error that names its line, as is one
that is not options. Triple-quoted (multi-line) values are refused: pflux does
not read them.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from typing import NamedTuple

from pflux.errors import SpecError

__all__ = ["Directive", "parse_directives"]

_SENTINEL = re.compile(r"^(\W*)(flux:|FLUX:)(.*)$")


class Directive(NamedTuple):
    """One directive: its line number (from 1) and its options."""

    lineno: int
    args: list[str]


def parse_directives(lines: Iterable[str]) -> list[Directive]:
    """The directives of a script's ``lines``; SpecError ``line N: why`` on a bad one."""
    directives: list[Directive] = []
    sentinel: str | None = None
    comment = "#"
    ended = 0  # the line after which directives end; 0 while they may still come
    for lineno, line in enumerate(lines, 1):
        match = _SENTINEL.match(line)
        if match is None:
            text = line.strip()
            if not ended and text and not text.startswith(comment):
                ended = lineno
            continue
        prefix, tag, value = match.groups()
        if ended:
            raise SpecError(
                f"line {lineno}: orphan '{tag}' detected: directives end at line {ended},"
                " the script's first line that is not a comment"
            )
        if sentinel is None:
            sentinel, comment = prefix + tag, prefix.strip() or "#"
        elif prefix + tag != sentinel:
            raise SpecError(
                f"line {lineno}: sentinel changed from '{sentinel}' to '{prefix + tag}':"
                " all directives of a script use the same one"
            )
        if "'''" in value or '"""' in value:
            raise SpecError(f"line {lineno}: triple-quoted directive values are not supported")
        args = _split(lineno, value)
        if not args:
            continue
        if not args[0].startswith("-"):
            raise SpecError(f"line {lineno}: Unknown directive: {value.strip()}")
        directives.append(Directive(lineno, args))
    return directives


def _split(lineno: int, value: str) -> list[str]:
    """``value`` split as a shell would, ``#`` starting a comment."""
    lexer = shlex.shlex(value, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.escapedquotes = "\"'"
    try:
        return list(lexer)
    except ValueError as exc:
        raise SpecError(f"line {lineno}: {value.strip()}: {exc}") from None
