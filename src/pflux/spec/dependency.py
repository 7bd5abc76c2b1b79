"""RFC 26 dependencies as typed on a command line, turned into their object form.

``scheme:value[?key=val[&key=val...]]`` becomes ``{"scheme": ..., "value": ...,
key: val, ...}``, as flux-core's ``URIArg`` (``flux/job/_utils.py``) makes it:
the scheme is case-folded (it is a URI scheme), the value is kept verbatim,
option keys and values are percent-decoded with ``+`` as a space, option values
that read as numbers become numbers, and a key given twice gathers a list.
Where flux-core is looser, pflux is strict and says why: an empty value, an
option without ``=``, and options named ``scheme`` or ``value`` are errors, and
``;`` separates options as RFC 26 says (Python's ``parse_qs`` no longer does).

``begin_time`` turns ``--begin-time`` arguments into a ``begin-time``
dependency whose value is the epoch timestamp as text, as flux-core's CLI does.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from pflux.errors import DependencyError, DurationError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from datetime import tzinfo
    from typing import Any, Final

__all__ = ["begin_time", "format_uri", "parse_uri"]

_SCHEME: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
_INT: Final = re.compile(r"[+-]?[0-9]+")
_FLOAT: Final = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_OPTION_SEPARATOR: Final = re.compile(r"[&;]")
_RESERVED: Final = frozenset({"scheme", "value"})


def parse_uri(text: str) -> dict[str, Any]:
    """The RFC 26 object form of a command-line dependency URI."""
    scheme, colon, rest = text.partition(":")
    if not colon and _SCHEME.fullmatch(text):
        return {"scheme": text.lower(), "value": ""}  # a scheme alone (flux's "singleton")
    if not colon:
        raise DependencyError(f'invalid dependency URI "{text}": expected SCHEME:VALUE')
    if not scheme:
        raise DependencyError(f'invalid dependency URI "{text}": missing scheme')
    if _SCHEME.fullmatch(scheme) is None:
        raise DependencyError(
            f'invalid dependency URI "{text}": scheme "{scheme}" must start with a letter'
            ' and hold only letters, digits, "+", "-" and "."'
        )
    value, question, query = rest.partition("?")
    if not value:
        raise DependencyError(f'invalid dependency URI "{text}": missing value')
    dependency: dict[str, Any] = {"scheme": scheme.lower(), "value": value}
    if question:
        _add_options(dependency, query, text)
    return dependency


def _add_options(dependency: dict[str, Any], query: str, text: str) -> None:
    for item in _OPTION_SEPARATOR.split(query):
        if not item:
            continue  # "a=1&&b=2" or a trailing "&", as URI query parsers allow
        raw_key, equals, raw_val = item.partition("=")
        key = _unquote(raw_key)
        if not equals or not key:
            raise DependencyError(
                f'invalid dependency URI "{text}": option "{item}" is not KEY=VALUE'
            )
        if key in _RESERVED:
            raise DependencyError(
                f'invalid dependency URI "{text}": option "{key}" would replace the {key}'
            )
        val = _number(_unquote(raw_val))
        if key not in dependency:
            dependency[key] = val
        elif isinstance(dependency[key], list):
            dependency[key].append(val)
        else:
            dependency[key] = [dependency[key], val]


def _unquote(text: str) -> str:
    if "%" not in text and "+" not in text:
        return text
    from urllib.parse import unquote_plus  # ~10 ms to import: only when needed

    return unquote_plus(text)


def _number(text: str) -> int | float | str:
    """A number when ``text`` reads as one (flux-core's rule), keeping JSON finite."""
    if _INT.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        number = float(text)
        if math.isfinite(number):
            return number
    return text


def format_uri(dependency: Mapping[str, Any]) -> str:
    """The command-line URI of an RFC 26 object: the inverse of ``parse_uri``.

    Option values must be strings, numbers or lists of them (a list writes the
    key once per item); a value holding ``?`` has no URI form.
    """
    scheme = dependency.get("scheme")
    value = dependency.get("value")
    if not isinstance(scheme, str) or _SCHEME.fullmatch(scheme) is None or scheme != scheme.lower():
        # parse_uri case-folds the scheme, so only a lower-case one survives the round trip
        raise DependencyError(f"dependency scheme {scheme!r} cannot be written as a URI scheme")
    for key in dependency:
        if not isinstance(key, str) or not key:
            raise DependencyError(f"dependency option name {key!r} must be a non-empty string")
    if not isinstance(value, str) or not value or "?" in value:
        raise DependencyError(f"dependency value {value!r} must be a non-empty string without '?'")
    options = [
        f"{_quote(key)}={_quote(_option_text(key, item))}"
        for key, val in dependency.items()
        if key not in _RESERVED
        for item in (val if isinstance(val, list) else [val])
    ]
    query = "?" + "&".join(options) if options else ""
    return f"{scheme}:{value}{query}"


def _option_text(key: str, value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise DependencyError(f"dependency option {key!r}: {value!r} has no URI form")
    return value if isinstance(value, str) else repr(value)


def _quote(text: str) -> str:
    from urllib.parse import quote_plus

    try:
        return quote_plus(text, safe="")
    except UnicodeEncodeError:  # lone surrogates
        raise DependencyError(f"dependency option {text!r} cannot be encoded as UTF-8") from None


# -------------------------------------------------------------------- begin-time


def begin_time(text: str, *, now: float, tz: tzinfo | None = None) -> dict[str, Any]:
    """The ``begin-time`` dependency for a ``--begin-time`` argument.

    Accepted, as flux-core's ``flux.util.parse_datetime`` reads them: ``now``;
    ``+FSD`` or ``-FSD`` from now; an ISO 8601 date or date-time; and the English
    of ``_pfluxcore.datetimes`` (``M/D/YYYY``, ``Jun 10, 2021 8am``, ``17:30``,
    ``noon tomorrow``, ``last wed``, ``next week``, ``in 10 min``, ``3 days ago``...).
    A time of day alone means today, even when it has passed (the job is then
    released at once), and a day alone means its midnight.  ``now`` is epoch
    seconds; ``tz`` is the zone of times given without one (the local zone when
    None).
    """
    try:
        when = _timestamp(text.strip(), now, tz)
    except DependencyError:
        raise
    except (OverflowError, ValueError):  # beyond what datetime or the platform can represent
        when = None
    if when is None:
        raise DependencyError(f'invalid datetime "{text}"')
    return {"scheme": "begin-time", "value": repr(when)}


def _timestamp(text: str, now: float, tz: tzinfo | None) -> float | None:
    if text.lower() == "now":
        return now
    if text[:1] in ("+", "-"):
        return _offset(text, now)
    from datetime import datetime

    from _pfluxcore import datetimes

    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        found = datetimes.calendar_date(text, datetime.fromtimestamp(now, tz))
        if found is None:
            seconds = datetimes.offset(text)
            return None if seconds is None else now + seconds
        when = found.replace(tzinfo=None)
    if when.tzinfo is None and tz is not None:
        when = when.replace(tzinfo=tz)
    return when.timestamp()


def _offset(text: str, now: float) -> float:
    from pflux.spec import duration

    try:
        seconds = duration.parse(text[1:])
    except DurationError as exc:
        raise DependencyError(f'invalid datetime "{text}": {exc}') from None
    if seconds == math.inf:
        raise DependencyError(f'invalid datetime "{text}": the offset must be finite')
    return now + seconds if text[0] == "+" else now - seconds
