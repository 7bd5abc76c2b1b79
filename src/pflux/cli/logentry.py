"""How the instance's log entries (``log.dmesg``, see ``pflux.broker.logbuf``) print.

As flux's: ``NAME.SEVERITY[RANK]: MESSAGE``, after a timestamp in ``pflux dmesg``.
"""

from __future__ import annotations

import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

SEVERITIES = ("emerg", "alert", "crit", "err", "warning", "notice", "info", "debug")
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def body(entry: dict[str, Any]) -> str:
    """``broker.info[0]: shutdown started``."""
    severity = entry.get("severity", 6)
    name = SEVERITIES[severity] if isinstance(severity, int) and 0 <= severity < 8 else "info"
    return f"{entry.get('name', '')}.{name}[{entry.get('rank', 0)}]: {entry.get('message', '')}"


def iso(timestamp: float) -> str:
    """Local time with microseconds and the UTC offset: ``2026-11-26T14:39:05.123456-08:00``."""
    from pflux.spec.eventlog import iso_local

    return iso_local(timestamp)


class Human:
    """``-H``: ``[Nov26 14:39]`` when the minute changes, else seconds since that line."""

    def __init__(self, delta: bool = False) -> None:
        self.delta = delta
        self.last_minute: tuple[int, ...] | None = None
        self.last = 0.0

    def stamp(self, timestamp: float) -> str:
        tm = time.localtime(timestamp)
        minute = (tm.tm_year, tm.tm_mon, tm.tm_mday, tm.tm_hour, tm.tm_min)
        if minute == self.last_minute:
            shown = f"[{timestamp - self.last:+11.6f}]"
            if self.delta:
                self.last = timestamp
            return shown
        self.last_minute = minute
        self.last = timestamp
        return f"[{MONTHS[tm.tm_mon - 1]}{tm.tm_mday:02d} {tm.tm_hour:02d}:{tm.tm_min:02d}]"
