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
    from fnmatch import fnmatchcase

    return lambda name: fnmatchcase(name, pattern)
