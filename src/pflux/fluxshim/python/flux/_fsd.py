"""RFC 23 Flux Standard Durations as a jobspec reads them: its ``duration``, and
``flux submit``'s ``--time-limit`` and ``--signal`` times.

A leaf ``flux.job.Jobspec`` and the translation of the submit options
(``flux.job._submitopts``) both use, so neither imports the other for it, nor
``flux.util`` (argparse, logging and more) for a duration.
"""

from __future__ import annotations

__all__ = ["parse_fsd"]


def parse_fsd(fsd_string: str) -> float:
    """Seconds in an RFC 23 Flux Standard Duration (``30``, ``1.5m``, ``2h``, ``inf``)."""
    if fsd_string in ("inf", "infinity", "INF", "INFINITY"):
        return float("inf")
    # a unit ends the string (before one newline, as a regular expression's ``$``)
    body = fsd_string[:-1] if fsd_string.endswith("\n") else fsd_string
    unit = None
    if "\n" not in body:
        unit = next((u for u in ("ms", "s", "m", "h", "d") if body.endswith(u)), None)
    number = body[: -len(unit)] if unit is not None else fsd_string
    try:
        value = float(number)
    except ValueError:
        raise ValueError("invalid Flux standard duration") from None
    if unit is None or unit == "s":
        seconds = value
    else:  # as timedelta counts them, in whole microseconds
        import datetime

        name = {"ms": "milliseconds", "m": "minutes", "h": "hours", "d": "days"}[unit]
        seconds = datetime.timedelta(**{name: value}).total_seconds()
    if not 0 <= seconds < float("inf"):  # also NaN
        raise ValueError("invalid Flux standard duration")
    return seconds
