"""RFC 18 eventlogs: events, their one-line JSON form, and the text form users read.

An eventlog is one compact JSON object per line, each ending in a newline, with
``timestamp`` (seconds since the Unix epoch, > 0), ``name`` and an optional
``context`` object. Every job state change is an event, so writing and reading
lines is on the job manager's hot path: JSON goes through ``pflux.spec.jsontext``
(orjson in the services), and parsing
checks each rule once with plain type tests.

Strictness: pflux reads only eventlogs it wrote, so it rejects what flux-core
would tolerate on read: keys other than the three above, an empty name or one
with a newline (it would break the text form), ``context: null``, and blank lines.
"""

from __future__ import annotations

import time

from pflux.errors import EventlogError, UsageError
from pflux.spec import jsontext

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = [
    "TIME_FORMATS",
    "Event",
    "EventlogReader",
    "TextFormatter",
    "format_text",
    "parse",
]

#: ``-T`` choices of ``flux job eventlog``, plus ``human`` (its ``-H``).
TIME_FORMATS = ("raw", "iso", "offset", "human")

_KEYS = frozenset(("timestamp", "name", "context"))
_INF = float("inf")
_new = object.__new__
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


class Event:
    """One eventlog entry. ``context`` None means the event has no context key.

    Construction validates the RFC 18 rules; the context dict is kept, not
    copied, so do not mutate it afterwards. Immutable, equal by value and
    hashable by timestamp and name (a plain class, not a dataclass: importing
    dataclasses costs a short command more than its own work).
    """

    __slots__ = ("context", "name", "timestamp")
    __match_args__ = ("timestamp", "name", "context")

    timestamp: float
    name: str
    context: dict[str, Any] | None

    def __init__(self, timestamp: float, name: str, context: dict[str, Any] | None = None) -> None:
        ts: Any = timestamp
        if type(ts) is not float:
            if type(ts) is not int:
                raise EventlogError(f"timestamp must be a number, not {type(ts).__name__}")
            try:
                ts = float(ts)
            except OverflowError:
                raise EventlogError("timestamp is too large") from None
        if not 0.0 < ts < _INF:
            raise EventlogError(f"timestamp must be finite and greater than zero, not {ts!r}")
        if type(name) is not str or not name:
            raise EventlogError(f"name must be a non-empty string, not {name!r}")
        if "\n" in name:
            raise EventlogError(f"name must not contain a newline: {name!r}")
        if context is not None and not isinstance(context, dict):
            raise EventlogError(f"context must be a JSON object, not {type(context).__name__}")
        _set_timestamp(self, ts)
        _set_name(self, name)
        _set_context(self, context)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: an Event is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: an Event is immutable")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Event:
            return NotImplemented
        assert isinstance(other, Event)
        return (
            self.timestamp == other.timestamp
            and self.name == other.name
            and self.context == other.context
        )

    def __hash__(self) -> int:
        return hash((self.timestamp, self.name))

    def __repr__(self) -> str:
        return f"Event(timestamp={self.timestamp!r}, name={self.name!r}, context={self.context!r})"

    def __reduce__(self) -> tuple[type[Event], tuple[float, str, dict[str, Any] | None]]:
        return Event, (self.timestamp, self.name, self.context)

    @classmethod
    def now(cls, name: str, context: dict[str, Any] | None = None) -> Event:
        """An event stamped with the current wall-clock time."""
        return cls._make(time.time(), name, context)

    @classmethod
    def _make(cls, timestamp: Any, name: Any, context: Any) -> Event:
        """What ``__init__`` accepts, built without its checks' call overhead.

        A restart builds an Event for every line of every eventlog, and the job
        manager posts ten a job. Anything else goes through ``__init__``,
        which says what is wrong.
        """
        if (
            type(timestamp) is float
            and 0.0 < timestamp < _INF
            and type(name) is str
            and name
            and "\n" not in name
            and (context is None or isinstance(context, dict))
        ):
            event = _new(cls)
            _set_timestamp(event, timestamp)
            _set_name(event, name)
            _set_context(event, context)
            return event
        return cls(timestamp, name, context)

    def to_json(self) -> dict[str, Any]:
        """The RFC 18 object, keys in the order timestamp, name, context."""
        if self.context is None:
            return {"timestamp": self.timestamp, "name": self.name}
        return {"timestamp": self.timestamp, "name": self.name, "context": self.context}

    def to_line(self) -> str:
        """The compact JSON line, newline included, ready to append to an eventlog."""
        try:
            return jsontext.dumps(self.to_json(), newline=True).decode()
        except jsontext.EncodeError as exc:
            raise EventlogError(f"event {self.name!r}: context is not JSON: {exc}") from None

    @classmethod
    def from_json(cls, obj: Any) -> Event:
        """Validate a decoded RFC 18 object and build the event."""
        if type(obj) is not dict:
            raise EventlogError(f"event must be a JSON object, not {type(obj).__name__}")
        try:
            timestamp = obj["timestamp"]
            name = obj["name"]
        except KeyError as exc:
            raise EventlogError(f"missing key {exc.args[0]!r}") from None
        context = obj.get("context")
        if context is None:
            if "context" in obj:
                raise EventlogError("context must be a JSON object, not null")
            if len(obj) != 2:
                raise _unknown_keys(obj)
        elif len(obj) != 3:
            raise _unknown_keys(obj)
        return cls._make(timestamp, name, context)

    @classmethod
    def from_line(cls, line: str | bytes) -> Event:
        """Parse one eventlog line; its trailing newline is optional."""
        if isinstance(line, str):
            body: str | bytes = line[:-1] if line.endswith("\n") else line
            embedded = "\n" in body
        elif isinstance(line, bytes):
            body = line[:-1] if line.endswith(b"\n") else line
            embedded = b"\n" in body
        else:
            raise EventlogError(f"an eventlog line must be str or bytes, not {type(line).__name__}")
        if embedded:
            raise EventlogError("an event must be on one line")
        try:
            return cls.from_json(jsontext.loads(body))
        except (jsontext.DecodeError, EventlogError) as exc:
            raise _line_error(body, None, exc) from None


# the slots' own setters: a third of the cost of object.__setattr__ by name
_set_timestamp = Event.__dict__["timestamp"].__set__
_set_name = Event.__dict__["name"].__set__
_set_context = Event.__dict__["context"].__set__


def _unknown_keys(obj: dict[Any, Any]) -> EventlogError:
    unknown = ", ".join(sorted(repr(k) for k in obj if k not in _KEYS))
    return EventlogError(f"unknown key {unknown}: an event has timestamp, name, context")


def _line_error(line: str | bytes, lineno: int | None, exc: Exception) -> EventlogError:
    """The error to report for a line that failed to parse with ``exc``."""
    if not line:
        return EventlogError("blank line: every line must hold one event", lineno=lineno)
    if isinstance(exc, jsontext.DecodeError):
        return EventlogError(f"not valid JSON: {exc}", lineno=lineno)
    return EventlogError(str(exc), lineno=lineno)


def _parse_lines(text: str | bytes, first_lineno: int) -> tuple[list[Event], str | bytes]:
    """Events of the complete lines of ``text``, and what follows the last newline."""
    lines: Sequence[str | bytes]
    tail: str | bytes
    if isinstance(text, str):
        body, newline, tail = text.rpartition("\n")
        lines = body.split("\n") if newline else []
    else:
        bbody, bnewline, tail = text.rpartition(b"\n")
        lines = bbody.split(b"\n") if bnewline else []
    loads = jsontext.loads
    from_json = Event.from_json
    events: list[Event] = []
    for lineno, line in enumerate(lines, first_lineno):
        try:
            events.append(from_json(loads(line)))
        except (jsontext.DecodeError, EventlogError) as exc:
            raise _line_error(line, lineno, exc) from None
    return events, tail


def _decode_whole(text: str | bytes) -> list[Any] | None:
    """Every line's JSON value, decoded in one call; None if any line is not one value.

    The lines become the elements of one JSON array, with an empty string
    between each two: ``[L1\n,"",L2\n,"",...]``. When the text holds no ``""``
    of its own, every ``""`` element is one of those separators, so an array of
    the expected shape means each line was exactly one JSON value, as decoding
    line by line would find; anything else (a blank line, a line with two
    values, a value spread over two lines) answers None, and the caller decodes
    line by line to name the line at fault. A restart reads every eventlog:
    this is half the cost of one call per line.
    """
    if isinstance(text, str):
        if not text.endswith("\n") or '""' in text:
            return None
        count = text.count("\n")
        joined: str | bytes = "[" + text.replace("\n", '\n,"",')[:-4] + "]"
    else:
        if not text.endswith(b"\n") or b'""' in text:
            return None
        count = text.count(b"\n")
        joined = b"[" + text.replace(b"\n", b'\n,"",')[:-4] + b"]"
    try:
        values = jsontext.loads(joined)
    except jsontext.DecodeError:
        return None
    if len(values) != 2 * count - 1 or values[1::2].count("") != count - 1:
        return None
    decoded: list[Any] = values[::2]
    return decoded


def parse(text: str | bytes) -> list[Event]:
    """Parse a whole eventlog strictly.

    Raises EventlogError naming the 1-based line; an unterminated last line
    raises with ``partial=True``, since a follower may simply wait for more.
    """
    if not isinstance(text, str | bytes):
        raise EventlogError(f"an eventlog must be str or bytes, not {type(text).__name__}")
    if not text:
        return []
    values = _decode_whole(text)
    if values is not None:
        from_json = Event.from_json
        try:
            return [from_json(value) for value in values]
        except EventlogError:
            pass  # found again below, with its line number
    events, tail = _parse_lines(text, 1)
    if tail:
        raise EventlogError(
            "last line has no newline (incomplete event)", lineno=len(events) + 1, partial=True
        )
    return events


class EventlogReader:
    """Parses an eventlog as it arrives in pieces, holding back an incomplete last line.

    On error nothing is consumed, so the reader stays where it was.
    """

    __slots__ = ("_buffer", "_lineno")

    def __init__(self) -> None:
        self._buffer = b""
        self._lineno = 0  # complete lines consumed so far

    @property
    def pending(self) -> bytes:
        """Bytes after the last newline, waiting for the rest of their line."""
        return self._buffer

    def feed(self, data: str | bytes) -> list[Event]:
        """Add ``data`` and return the events its complete lines finish."""
        if isinstance(data, str):
            # surrogatepass lets a lone surrogate through, for the decoder to reject as bad UTF-8
            data = data.encode("utf-8", "surrogatepass")
        elif not isinstance(data, bytes):
            raise EventlogError(f"eventlog data must be str or bytes, not {type(data).__name__}")
        buffer = self._buffer + data if self._buffer else data
        end = buffer.rfind(b"\n")
        if end < 0:
            self._buffer = buffer
            return []
        events, _ = _parse_lines(buffer[: end + 1], self._lineno + 1)
        self._buffer = buffer[end + 1 :]
        self._lineno += len(events)
        return events

    def finish(self) -> None:
        """Declare the eventlog complete: an incomplete last line is then an error."""
        if self._buffer:
            raise EventlogError(
                "last line has no newline (incomplete event)",
                lineno=self._lineno + 1,
                partial=True,
            )


def iso_local(ts: float) -> str:
    """ISO 8601 in local time with its offset, as flux-core prints it: microseconds
    truncated (not rounded), then ``-08:00``, or ``Z`` where local time is UTC."""
    sec = int(ts)
    usec = int((ts - sec) * 1e6)
    tm = time.localtime(sec)
    offset = time.strftime("%z", tm)
    if offset == "+0000":
        offset = "Z"
    elif len(offset) == 5:
        offset = f"{offset[:3]}:{offset[3:]}"
    return f"{time.strftime('%Y-%m-%dT%H:%M:%S', tm)}.{usec:06d}{offset}"


def _with_context(stamp: str, event: Event) -> str:
    context = event.context
    if not context:
        return f"{stamp} {event.name}"
    dumps = jsontext.dumps
    try:
        pairs = "".join([f" {k}={dumps(v).decode()}" for k, v in context.items()])
    except jsontext.EncodeError as exc:
        raise EventlogError(f"event {event.name!r}: context is not JSON: {exc}") from None
    return f"{stamp} {event.name}{pairs}"


def format_text(event: Event, *, time_format: str = "raw", t0: float | None = None) -> str:
    """The ``flux job eventlog`` text form of one event, without a newline.

    ``<timestamp> <name>`` then `` key=value`` per context key, values as compact
    JSON. ``raw`` prints the timestamp with six decimals (C's ``%lf``), ``iso``
    as ISO 8601 local time with microseconds and its offset (``iso_local``),
    ``offset`` as seconds since ``t0`` (the
    first event; the event's own time when None). ``human`` needs the previous
    events, so it is only available through TextFormatter.
    """
    ts = event.timestamp
    if time_format == "raw":
        stamp = f"{ts:.6f}"
    elif time_format == "iso":
        stamp = iso_local(ts)
    elif time_format == "offset":
        stamp = f"{ts - (ts if t0 is None else t0):.6f}"
    else:
        raise UsageError(f"unknown time format {time_format!r}: expected raw, iso or offset")
    return _with_context(stamp, event)


class TextFormatter:
    """Formats a stream of events in the text form, remembering what later lines need.

    ``offset`` counts from the first event formatted. ``human`` (flux's ``-H``)
    prints ``[Mon DD HH:MM]`` in local time when the minute changes and
    ``[ +S.SSSSSS]`` seconds since that line otherwise.
    """

    __slots__ = ("_minute", "_minute_ts", "_t0", "_time_format")

    def __init__(self, time_format: str = "raw") -> None:
        if time_format not in TIME_FORMATS:
            raise UsageError(
                f"unknown time format {time_format!r}: expected {', '.join(TIME_FORMATS)}"
            )
        self._time_format = time_format
        self._t0: float | None = None
        self._minute: tuple[int, int, int, int, int] | None = None
        self._minute_ts = 0.0

    def format(self, event: Event) -> str:
        """The event's text line, without a newline."""
        if self._t0 is None:
            self._t0 = event.timestamp
        if self._time_format != "human":
            return format_text(event, time_format=self._time_format, t0=self._t0)
        return _with_context(self._human(event.timestamp), event)

    def _human(self, ts: float) -> str:
        tm = time.localtime(int(ts))
        minute = (tm.tm_year, tm.tm_mon, tm.tm_mday, tm.tm_hour, tm.tm_min)
        if minute == self._minute:
            return f"[{ts - self._minute_ts:+11.6f}]"
        self._minute = minute
        self._minute_ts = ts
        return f"[{_MONTHS[tm.tm_mon - 1]}{tm.tm_mday:02d} {tm.tm_hour:02d}:{tm.tm_min:02d}]"
