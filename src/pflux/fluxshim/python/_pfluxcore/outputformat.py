"""The pieces of ``flux jobs``' format language both faces format values with.

pflux's ``jobs`` (``pflux.cli.jobformat``) and the flux package's ``OutputFormat``
(``flux.util``) each parse formats and fields their own way; the conversions
``!d`` (a time, as ``STRFTIME::SPEC``), ``!D``, ``!H`` and ``!P``, and the spec
suffixes ``h`` (an unset value as ``-``) and ``+`` (a cut value ends in ``+``)
behave as these functions do.
"""

from __future__ import annotations

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing (several ms)
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any

ISO = "%Y-%m-%dT%H:%M:%S"
_empty: list[tuple[str, ...]] = []


def empty_outputs() -> tuple[str, ...]:
    """The texts a value shows when it is unset (the ``h`` suffix shows them as ``-``),
    worked out once."""
    if not _empty:
        import time  # as datetime's strftime of it, without importing datetime

        localepoch = time.strftime(ISO, time.localtime(0.0))
        _empty.append(("", "0s", "0.0", "0:00:00", "1970-01-01T00:00:00", localepoch))
    return _empty[0]


def format_time(when: datetime | None, fmt: str) -> str:
    """``!d``'s format ``STRFTIME::SPEC``: ``when`` by the strftime format (ISO 8601 by
    default), then by the Python spec; an unset time (None) shows as "" (``-`` with
    the ``h`` suffix)."""
    timefmt, _, spec = fmt.partition("::")
    text = "" if when is None else when.strftime(timefmt or ISO)
    if spec.endswith("h"):
        text = text or "-"
        spec = spec[:-1] + "s"
    return format(text, spec) if spec else text


def iso(timestamp: float) -> str:
    """``!D``: a timestamp in ISO 8601, "" for none (0)."""
    from datetime import datetime

    return datetime.fromtimestamp(timestamp).strftime(ISO) if timestamp else ""


def hms(seconds: float) -> str:
    """``!H``: seconds as H:MM:SS, a fraction of a second as one."""
    from datetime import timedelta

    return str(timedelta(seconds=1 if 0 < seconds < 1 else round(seconds)))


def percent(fraction: float) -> str:
    """``!P``: a fraction as a percentage (two decimals below 1%, else three digits)."""
    value = fraction * 100
    return f"{value:.2f}%" if 0 < value < 1 else f"{value:.3g}%"


def hyphenated(value: Any, spec: str) -> tuple[Any, str]:
    """The value and spec to format for a spec ending in ``h``: an unset value's text
    as ``-``, formatted as a string; any other spec as it is."""
    if not spec.endswith("h"):
        return value, spec
    text = str(value)
    return ("-" if text in empty_outputs() else text), spec[:-1] + "s"


def mark_cut(out: str, value: Any) -> str:
    """``out`` with its last character ``+`` if formatting cut ``value`` short."""
    return out[:-1] + "+" if len(out) < len(str(value)) else out


def terminal_width(width: int) -> int:
    """The width to fit lines to: ``width``, or for 0 the terminal's (-1: no limit
    where stdout is no terminal)."""
    if width != 0:
        return width
    import os

    try:
        return os.get_terminal_size().columns
    except OSError:
        return -1
