"""RFC 23 Flux Standard Durations as both faces print them.

Each face parses by its own rules (pflux strictly, the flux package as
flux-core's bindings do) over the one table of units here; printing a span in
the largest unit that keeps it at or above one is common to flux-core's
``fsd_format_duration``, ``flux.util.fsd`` and the ETA of ``flux jobs``.
"""

from __future__ import annotations

#: seconds in each RFC 23 unit
UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}

_INF = float("inf")


def in_unit(seconds: float, digits: int) -> str:
    """``seconds`` in s, m, h or d, whichever keeps the number at or above one (s
    below a minute), with ``digits`` significant digits."""
    if seconds < 60.0:
        return f"{seconds:.{digits}g}s"
    if seconds < 3600.0:
        return f"{seconds / 60.0:.{digits}g}m"
    if seconds < 86400.0:
        return f"{seconds / 3600.0:.{digits}g}h"
    return f"{seconds / 86400.0:.{digits}g}d"


def short(seconds: float) -> str:
    """A duration as ``flux jobs`` prints it (``flux.util.fsd``): ``0s`` under 1 ms,
    milliseconds shown below 10 s, else four significant digits; ``inf``."""
    if seconds == _INF:
        return "inf"
    if seconds < 1.0e-3:
        return "0s"
    if seconds < 10.0:
        return f"{seconds:.3f}s"
    return in_unit(seconds, 4)
