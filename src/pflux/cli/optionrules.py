"""What ``--env`` and ``--rlimit`` rules share: name patterns, and the error for a bad value."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NoReturn

from pflux.errors import JobspecError


def bad(option: str, value: str, why: str) -> NoReturn:
    """Refuse ``--OPTION=VALUE``, saying why, as flux-core words it."""
    raise JobspecError([("", f"{option}={value}: {why}")])


def matcher(option: str, rule: str, pattern: str) -> Callable[[str], bool]:
    """A name test: ``/regex/`` (matched at the start, as flux-core does) or a shell glob."""
    if pattern.startswith("/"):
        try:
            regex = re.compile(pattern[1:].rstrip("/"))
        except re.error as exc:
            bad(option, rule, f"bad regular expression: {exc}")
        return lambda name: regex.match(name) is not None
    from fnmatch import fnmatchcase

    return lambda name: fnmatchcase(name, pattern)
