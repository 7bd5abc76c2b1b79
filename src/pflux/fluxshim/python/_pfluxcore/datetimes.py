"""Dates and times as people write them, for ``--begin-time`` and the flux package's
``flux.util.parse_datetime``: the forms flux-core's parser (parsedatetime) reads that
job submission meets, worked out from a given ``now``.

``calendar_date`` reads a day and a time of day (a date, ``tomorrow``, ``next fri``,
``noon``...) as a naive local datetime; ``offset`` reads ``in N UNIT``, ``N UNIT ago``
and ``N UNIT from now`` as signed seconds. Each returns None for what it does not
read, and each face words its own error.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    import re
    from datetime import datetime

_DAYS = {"today": 0, "tomorrow": 1, "yesterday": -1}
_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
_WEEKDAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
_NAMED_CLOCK = {"noon": (12, 0, 0), "midnight": (0, 0, 0)}
_UNIT_SECONDS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_UNIT = r"(s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?|w|wks?|weeks?)"

#: the patterns, compiled on first use (every command imports this package: no ``re``)
_PATTERNS: dict[str, re.Pattern[str]] = {}


def _pattern(name: str) -> re.Pattern[str]:
    if not _PATTERNS:
        import re

        _PATTERNS.update(
            date_us=re.compile(r"(\d{1,2})/(\d{1,2})/(\d{4})$"),
            clock=re.compile(r"(\d{1,2})(?::(\d{2}))?(?::(\d{2}))?\s*([ap]m)?$"),
            meridiem=re.compile(r"\s+([ap]m)\b"),
            # a month by name with its day, the year (else now's) after or the day before
            month_date=re.compile(
                r"\b([a-z]{3})[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?\b(?:,?\s+(\d{4})\b)?(?!:)"
            ),
            date_month=re.compile(
                r"\b(\d{1,2})(?:st|nd|rd|th)?\s+([a-z]{3})[a-z]*\.?,?\s+(\d{4})\b"
            ),
            weekday=re.compile(
                r"\b(?:(last|next|this)\s+)?(mon|tue|wed|thu|fri|sat|sun)"
                r"(?:day|s|sday|nesday|r|rs|rsday|urday)?\b"
            ),
            period=re.compile(r"\b(last|next)\s+(week|month|year)\b"),
            within=re.compile(r"in\s+(\d+(?:\.\d+)?|an?)\s*" + _UNIT + "$"),
            ago=re.compile(r"(\d+(?:\.\d+)?|an?)\s*" + _UNIT + r"\s+(ago|from\s+now)$"),
        )
    return _PATTERNS[name]


def calendar_date(string: str, now: datetime) -> datetime | None:
    """At most one day (``today``, a date, a weekday) and one time of day, in either
    order."""
    text = " ".join(word for word in string.strip().lower().split() if word != "at")
    text = _pattern("date_month").sub(lambda found: _iso_date(found, 2, 1, found.group(3)), text)
    year = str(now.year)
    text = _pattern("month_date").sub(
        lambda found: _iso_date(found, 1, 2, found.group(3) or year), text
    )
    text = _pattern("weekday").sub(lambda found: _weekday(found, now), text)
    text = _pattern("period").sub(lambda found: _period(found, now), text)
    words = _pattern("meridiem").sub(r"\1", text).split()
    if not words or len(words) > 2:
        return None
    day: datetime | None = None
    clock: tuple[int, int, int] | None = None
    midnight = now.replace(tzinfo=None, hour=0, minute=0, second=0, microsecond=0)
    for word in words:
        found_day = _day(word, midnight)
        found_clock = None if found_day else _clock(word)
        if found_day and day is None:
            day = found_day
        elif found_clock and clock is None:
            clock = found_clock
        else:
            return None
    hour, minute, second = clock or (0, 0, 0)
    try:
        return (day or midnight).replace(hour=hour, minute=minute, second=second)
    except ValueError:
        return None


def _iso_date(found: re.Match[str], month: int, mday: int, year: str) -> str:
    """A date with its month by name (groups ``month`` and ``mday`` of ``found``) as
    ``2021-06-10``; left as it is when the month is no month's name."""
    name = found.group(month)
    if name not in _MONTHS:
        return found.group()
    return f"{year}-{_MONTHS.index(name) + 1:02d}-{int(found.group(mday)):02d}"


def _weekday(found: re.Match[str], now: datetime) -> str:
    """A weekday as an ISO date, as flux-core's parser (parsedatetime) reads it: alone,
    the first after today; ``this``, this (Monday-based) week's; ``next``, next week's;
    ``last``, the latest before today."""
    from datetime import timedelta

    base = _WEEKDAYS.index(found.group(2)) - now.weekday()
    modifier = found.group(1)
    if modifier == "next":
        offset = base + 7
    elif modifier == "last":
        offset = base if base < 0 else base - 7
    elif modifier == "this":
        offset = base
    else:
        offset = base if base > 0 else base + 7
    return (now + timedelta(days=offset)).strftime("%Y-%m-%d")


def _period(found: re.Match[str], now: datetime) -> str:
    """``next week`` (``last month``, ``next year``...): that day a period away, as an ISO
    date."""
    from datetime import datetime, timedelta

    step = 1 if found.group(1) == "next" else -1
    if found.group(2) == "week":
        return (now + timedelta(weeks=step)).strftime("%Y-%m-%d")
    year, month = now.year, now.month
    if found.group(2) == "year":
        year += step
    else:
        year, month = divmod(year * 12 + month - 1 + step, 12)
        month += 1
    following = datetime(year + month // 12, month % 12 + 1, 1)
    last = (following - timedelta(days=1)).day
    return f"{year:04d}-{month:02d}-{min(now.day, last):02d}"


def _day(word: str, midnight: datetime) -> datetime | None:
    from datetime import datetime, timedelta

    if word in _DAYS:
        return midnight + timedelta(days=_DAYS[word])
    found = _pattern("date_us").match(word)
    try:
        if found:
            month, mday, year = (int(part) for part in found.groups())
            return datetime(year, month, mday)
        return datetime.strptime(word, "%Y-%m-%d")
    except ValueError:
        return None


def _clock(word: str) -> tuple[int, int, int] | None:
    if word in _NAMED_CLOCK:
        return _NAMED_CLOCK[word]
    found = _pattern("clock").match(word)
    if not found or (found.group(2) is None and found.group(4) is None):
        return None
    hour, minute, second = (int(part or 0) for part in found.groups()[:3])
    if found.group(4):
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if found.group(4) == "pm" else 0)
    if hour > 23 or minute > 59 or second > 59:
        return None
    return hour, minute, second


def offset(string: str) -> float | None:
    """``in N UNIT`` (``in 10 min``, ``in a week``), ``N UNIT ago`` or ``N UNIT from
    now`` as seconds from now (negative: before); None for anything else."""
    text = " ".join(string.lower().split())
    ago = _pattern("ago")
    found = _pattern("within").match(text) or ago.match(text)
    if not found:
        return None
    count = 1.0 if found.group(1) in ("a", "an") else float(found.group(1))
    seconds = count * _UNIT_SECONDS[found.group(2)[0]]
    return -seconds if found.re is ago and found.group(3) == "ago" else seconds
