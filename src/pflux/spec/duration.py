"""Flux Standard Duration (RFC 23): a time span as text, e.g. ``30s``, ``1.5m``, ``2h``.

The grammar is a non-negative decimal number with an optional unit, ``ms``,
``s``, ``m``, ``h`` or ``d`` (seconds when absent), or ``inf``/``infinity``.
Parsing is strict, so a typo such as ``5min`` or ``00:30`` is an error rather
than a surprise.  Formatting follows flux-core's ``fsd_format_duration``
(``libutil/fsd.c``): the largest unit that keeps the number at or above one,
milliseconds below 0.1 s, and six significant digits.
"""

from __future__ import annotations

import math

from _pfluxcore.duration import UNITS, in_unit, short

from pflux.errors import DurationError

__all__ = ["Unit", "format", "format_short", "parse"]

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Final, Literal

    Unit = Literal["ms", "s", "m", "h", "d"]
else:
    Unit = str  # the type checker's Literal: a command loads no typing

_SECONDS: Final = UNITS
# ASCII digits only: float() would also take other scripts' digits and "1_000"
_FSD: Final = r"\+?((?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)(ms|s|m|h|d)?"
_INFINITE: Final = frozenset({"inf", "infinity"})


def parse(text: str, *, default_unit: Unit = "s") -> float:
    """Seconds in ``text``; a bare number is in ``default_unit`` (flux's ``-t`` uses minutes)."""
    import re  # here, as printing a duration (``pflux jobs``) does without it

    match = re.fullmatch(_FSD, text)
    if match is None:
        if text.lower() in _INFINITE:
            return math.inf
        raise DurationError(f'invalid Flux standard duration "{text}": {_why(text)}')
    seconds = float(match[1]) * _SECONDS[match[2] or default_unit]
    if seconds == math.inf:
        raise DurationError(f'invalid Flux standard duration "{text}": too large')
    return seconds


def _why(text: str) -> str:
    if not text:
        return "empty"
    if text.lstrip().startswith("-"):
        return "must not be negative"
    return "expected a number with an optional unit ms, s, m, h or d, or infinity"


def format(seconds: float, *, precision: int = 6) -> str:
    """Render ``seconds`` as flux-core's ``fsd_format_duration`` does (``infinity`` for inf)."""
    if seconds == math.inf:
        return "infinity"
    if not seconds >= 0.0:  # also catches NaN
        raise DurationError(f"cannot format {seconds!r} as a duration: must be a number >= 0")
    if 0.0 < seconds < 0.1:
        return f"{seconds * 1000.0:.{precision}g}ms"
    return in_unit(seconds, precision)


def format_short(seconds: float) -> str:
    """A duration as ``flux jobs`` prints it: 4 significant digits, ``0s`` under 1 ms."""
    return short(seconds)
