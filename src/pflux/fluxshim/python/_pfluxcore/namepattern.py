"""The name patterns of ``--env`` and ``--rlimit`` rules, as flux-core reads them."""

from __future__ import annotations

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing (several ms)
if TYPE_CHECKING:
    from typing import Callable


def bad(option: str, value: str, why: str) -> ValueError:
    """The error refusing ``--OPTION=VALUE``, saying why, as flux-core words it."""
    return ValueError(f"{option}={value}: {why}")


def matcher(option: str, rule: str, pattern: str) -> Callable[[str], bool]:
    """A name test: ``/regex/`` (matched at the start, as flux-core does) or a shell glob."""
    if pattern.startswith("/"):
        import re

        try:
            regex = re.compile(pattern[1:].rstrip("/"))
        except re.error as exc:
            raise bad(option, rule, f"bad regular expression: {exc}") from None
        return lambda name: regex.match(name) is not None
    # a glob of literal text and ``*`` (the default --rlimit rules, ``--env=-*``) is
    # matched here: fnmatch would load re to compile it
    if "?" not in pattern and "[" not in pattern:
        parts = pattern.split("*")
        if len(parts) == 1:
            return lambda name: name == pattern
        return lambda name: _stars_match(name, parts)
    from fnmatch import fnmatchcase

    return lambda name: fnmatchcase(name, pattern)


def _stars_match(name: str, parts: list[str]) -> bool:
    """Whether ``name`` is ``parts`` joined by any text (the glob ``*`` between them)."""
    first, last = parts[0], parts[-1]
    start, end = len(first), len(name) - len(last)
    if end < start or not name.startswith(first) or not name.endswith(last):
        return False
    for part in parts[1:-1]:
        found = name.find(part, start, end)
        if found < 0:
            return False
        start = found + len(part)
    return True
