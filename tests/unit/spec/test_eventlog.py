"""RFC 18 eventlogs: events, lines, whole logs, incremental reading, the text form."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.errors import EventlogError, UsageError
from pflux.spec.eventlog import (
    TIME_FORMATS,
    Event,
    EventlogReader,
    TextFormatter,
    _decode_whole,
    _parse_lines,
    format_text,
    parse,
)
from support.eventgen import events, json_values

# RFC 18's example, less its third line (which has an unquoted key: not JSON)
RFC18 = (
    '{"timestamp":1552593348.073045,"name":"submit","context":{"urgency":16,"userid":5588,"flags":0}}\n'
    '{"timestamp":1552593547.411336,"name":"urgency","context":{"urgency":0,"userid":5588}}\n'
    '{"timestamp":1552593348.093541,"name":"free"}\n'
    '{"timestamp":1552593348.089787,"name":"start"}\n'
    '{"timestamp":1552593348.092830,"name":"release","context":{"ranks":"all","final":true}}\n'
    '{"timestamp":1552593348.090927,"name":"finish","context":{"status":0}}\n'
    '{"timestamp":1552593348.104432,"name":"clean"}\n'
)
RFC18_BAD_LINE = (
    '{"timestamp":1552593348.088391,"name":"alloc",context:{"note":"rank0/core[0-1]"}}\n'
)


def test_parse_rfc18_example() -> None:
    events = parse(RFC18)
    assert [e.name for e in events] == [
        "submit",
        "urgency",
        "free",
        "start",
        "release",
        "finish",
        "clean",
    ]
    assert events[0] == Event(
        1552593348.073045, "submit", {"urgency": 16, "userid": 5588, "flags": 0}
    )
    assert events[2].context is None
    assert events[4].context == {"ranks": "all", "final": True}
    assert parse(RFC18.encode()) == events


def test_rfc18_example_third_line_is_rejected() -> None:
    lines = RFC18.splitlines(keepends=True)
    text = "".join([*lines[:2], RFC18_BAD_LINE, *lines[2:]])
    with pytest.raises(EventlogError) as info:
        parse(text)
    assert info.value.lineno == 3
    assert not info.value.partial
    assert str(info.value).startswith("line 3: not valid JSON")


def test_lines_round_trip_byte_for_byte() -> None:
    lines = RFC18.splitlines(keepends=True)
    # 1552593348.092830 prints as ...09283 in shortest form; every other line is already canonical
    assert [e.to_line() for e in parse(RFC18)] == [
        line.replace("092830", "09283") for line in lines
    ]


def test_to_line_key_order_and_context() -> None:
    assert Event(1.5, "a").to_line() == '{"timestamp":1.5,"name":"a"}\n'
    assert Event(1.5, "a", {}).to_line() == '{"timestamp":1.5,"name":"a","context":{}}\n'
    assert (
        Event(2, "b", {"z": 1, "a": [1, "é"]}).to_line()
        == '{"timestamp":2.0,"name":"b","context":{"z":1,"a":[1,"é"]}}\n'
    )
    assert Event(1.5, "a").to_json() == {"timestamp": 1.5, "name": "a"}
    assert Event(1.5, "a", {"k": None}).to_json() == {
        "timestamp": 1.5,
        "name": "a",
        "context": {"k": None},
    }


@pytest.mark.parametrize(
    ("context", "fragment"),
    [({1: 2}, "Dict key must be str"), ({"x": object()}, "not JSON"), ({"x": 2**70}, "64-bit")],
)
def test_to_line_unserialisable_context(context: dict[Any, Any], fragment: str) -> None:
    with pytest.raises(EventlogError, match="context is not JSON") as info:
        Event(1, "x", context).to_line()
    assert fragment in str(info.value)


def test_event_now() -> None:
    before = time.time()
    e = Event.now("submit", {"urgency": 16})
    assert before <= e.timestamp <= time.time()
    assert (e.name, e.context) == ("submit", {"urgency": 16})


def test_event_int_timestamp_becomes_float() -> None:
    e = Event(5, "x")
    assert type(e.timestamp) is float
    assert e == Event(5.0, "x")


def test_event_hash_ignores_context() -> None:
    assert hash(Event(1, "x", {"a": 1})) == hash(Event(1, "x", {"a": 2}))
    assert Event(1, "x", {"a": 1}) != Event(1, "x", {"a": 2})


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ((0, "x"), "greater than zero"),
        ((-1.0, "x"), "greater than zero"),
        ((math.nan, "x"), "greater than zero"),
        ((math.inf, "x"), "greater than zero"),
        ((10**400, "x"), "too large"),
        ((True, "x"), "must be a number, not bool"),
        (("1", "x"), "must be a number, not str"),
        ((None, "x"), "must be a number"),
        ((1, ""), "non-empty string"),
        ((1, None), "non-empty string"),
        ((1, 5), "non-empty string"),
        ((1, "a\nb"), "newline"),
        ((1, "x", []), "context must be a JSON object, not list"),
        ((1, "x", "s"), "context must be a JSON object, not str"),
    ],
)
def test_event_validation(args: tuple[Any, ...], fragment: str) -> None:
    with pytest.raises(EventlogError) as info:
        Event(*args)
    assert fragment in str(info.value)
    assert info.value.lineno is None


@pytest.mark.parametrize(
    ("obj", "fragment"),
    [
        ([], "event must be a JSON object, not list"),
        ("x", "event must be a JSON object, not str"),
        ({}, "missing key 'timestamp'"),
        ({"timestamp": 1}, "missing key 'name'"),
        ({"name": "x"}, "missing key 'timestamp'"),
        ({"timestamp": 1, "name": "x", "extra": 1}, "unknown key 'extra'"),
        ({"timestamp": 1, "name": "x", "b": 1, "a": 2}, "unknown key 'a', 'b'"),
        ({"timestamp": 1, "name": "x", "context": None}, "not null"),
        ({"timestamp": 1, "name": "x", "context": [1]}, "not list"),
        ({"timestamp": "1", "name": "x"}, "must be a number"),
        ({"timestamp": 0, "name": "x"}, "greater than zero"),
        ({"timestamp": 1, "name": ""}, "non-empty"),
    ],
)
def test_from_json_rejects(obj: Any, fragment: str) -> None:
    with pytest.raises(EventlogError) as info:
        Event.from_json(obj)
    assert fragment in str(info.value)


def test_from_line() -> None:
    expected = Event(1.25, "start", {"a": 1})
    line = '{"timestamp":1.25,"name":"start","context":{"a":1}}'
    assert Event.from_line(line) == expected
    assert Event.from_line(line + "\n") == expected
    assert Event.from_line(line.encode()) == expected
    assert Event.from_line(line.encode() + b"\n") == expected
    assert (
        Event.from_line(' { "name" : "start" , "context":{"a":1},"timestamp":1.25 } ') == expected
    )


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("", "blank line"),
        ("\n", "blank line"),
        (b"", "blank line"),
        ("{}\n\n", "one line"),
        ('{"timestamp":1,\n"name":"x"}', "one line"),
        ("nope", "not valid JSON"),
        (b"\xff", "not valid JSON"),
        ('{"timestamp":1,"name":"x"}{}', "not valid JSON"),
        ('{"timestamp":NaN,"name":"x"}', "not valid JSON"),
        ('{"timestamp":1e999,"name":"x"}', "not valid JSON"),
        ('{"timestamp":1,"name":"\\ud800"}', "not valid JSON"),
        ('{"timestamp":1,"name":"x","c":1}', "unknown key"),
        (5, "must be str or bytes"),
    ],
)
def test_from_line_rejects(line: Any, fragment: str) -> None:
    with pytest.raises(EventlogError) as info:
        Event.from_line(line)
    assert fragment in str(info.value)
    assert info.value.lineno is None


def test_parse_empty() -> None:
    assert parse("") == []
    assert parse(b"") == []


@pytest.mark.parametrize(
    ("text", "lineno", "partial", "fragment"),
    [
        ("\n", 1, False, "blank line"),
        ('{"timestamp":1,"name":"a"}\n\n', 2, False, "blank line"),
        ('{"timestamp":1,"name":"a"}\n{"timestamp":1,"name":""}\n', 2, False, "non-empty"),
        ('{"timestamp":1,"name":"a"}', 1, True, "no newline"),
        ('{"timestamp":1,"name":"a"}\n{"timestamp":1', 2, True, "no newline"),
        ('{"timestamp":1,"name":"a"}\n{"timestamp":1,"name":"b"}', 2, True, "no newline"),
        # an earlier bad line wins over a partial last one
        ('x\n{"timestamp":1', 1, False, "not valid JSON"),
        ("   \n", 1, False, "not valid JSON"),
    ],
)
def test_parse_errors(text: str, lineno: int, partial: bool, fragment: str) -> None:
    for data in (text, text.encode()):
        with pytest.raises(EventlogError) as info:
            parse(data)
        assert info.value.lineno == lineno
        assert info.value.partial is partial
        assert str(info.value).startswith(f"line {lineno}: ")
        assert fragment in str(info.value)


def test_parse_rejects_other_types() -> None:
    with pytest.raises(EventlogError, match="str or bytes"):
        parse(None)  # type: ignore[arg-type]


def test_reader_every_split_matches_parse() -> None:
    data = (RFC18 + '{"timestamp":2,"name":"ünïcødé","context":{"s":"ƒ"}}\n').encode()
    expected = parse(data)
    for cut in range(len(data) + 1):
        reader = EventlogReader()
        got = reader.feed(data[:cut]) + reader.feed(data[cut:])
        assert got == expected
        assert reader.pending == b""
        reader.finish()


def test_reader_bytewise_and_str() -> None:
    reader = EventlogReader()
    events = [e for i in range(len(RFC18)) for e in reader.feed(RFC18[i])]
    assert events == parse(RFC18)


def test_reader_holds_partial_line() -> None:
    reader = EventlogReader()
    assert reader.feed('{"timestamp":1,"na') == []
    assert reader.pending == b'{"timestamp":1,"na'
    with pytest.raises(EventlogError) as info:
        reader.finish()
    assert (info.value.lineno, info.value.partial) == (1, True)
    assert reader.feed('me":"a"}\n{"timestamp":2,') == [Event(1, "a")]
    with pytest.raises(EventlogError) as info:
        reader.finish()
    assert (info.value.lineno, info.value.partial) == (2, True)


def test_reader_error_names_line_and_consumes_nothing() -> None:
    reader = EventlogReader()
    assert len(reader.feed('{"timestamp":1,"name":"a"}\n')) == 1
    with pytest.raises(EventlogError) as info:
        reader.feed('{"timestamp":2,"name":"b"}\n{"timestamp":0,"name":"c"}\n')
    assert info.value.lineno == 3
    assert not info.value.partial
    assert reader.pending == b""
    assert reader.feed('{"timestamp":2,"name":"b"}\n') == [Event(2, "b")]


def test_reader_rejects_other_types() -> None:
    with pytest.raises(EventlogError, match="str or bytes"):
        EventlogReader().feed(bytearray(b"{}\n"))  # type: ignore[arg-type]


# -- text form -----------------------------------------------------------------------------

RELEASE = Event(1738774194.185372, "release", {"ranks": "all", "final": True})


def test_format_text_raw() -> None:
    assert format_text(RELEASE) == '1738774194.185372 release ranks="all" final=true'
    assert format_text(Event(1, "clean")) == "1.000000 clean"
    assert format_text(Event(1, "clean", {})) == "1.000000 clean"
    assert format_text(Event(1.0000004, "x")) == "1.000000 x"
    assert format_text(Event(1.0000006, "x")) == "1.000001 x"


def test_format_text_values_are_compact_json() -> None:
    e = Event(
        1,
        "x",
        {"s": 'a "q"\n', "n": None, "f": 1.5, "o": {"k": [1, 2]}, "u": "ƒ", "i": -3},
    )
    assert format_text(e) == ('1.000000 x s="a \\"q\\"\\n" n=null f=1.5 o={"k":[1,2]} u="ƒ" i=-3')


@pytest.fixture
def zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """Set the local time zone (``TZ``) for one test."""

    def set_zone(tz: str) -> None:
        monkeypatch.setenv("TZ", tz)
        time.tzset()

    yield set_zone
    monkeypatch.undo()
    time.tzset()


def test_format_text_iso_is_local_time_with_its_offset(zone: Callable[[str], None]) -> None:
    zone("PST+8")  # POSIX: 8 hours behind UTC, no daylight time
    assert format_text(RELEASE, time_format="iso").startswith("2025-02-05T08:49:54.185372-08:00 ")
    zone("IST-5:30")
    assert format_text(RELEASE, time_format="iso").startswith("2025-02-05T22:19:54.185372+05:30 ")


def test_format_text_iso(zone: Callable[[str], None]) -> None:
    zone("UTC")  # flux-core writes Z, not +00:00, where local time is UTC
    assert (
        format_text(RELEASE, time_format="iso")
        == '2025-02-05T16:49:54.185372Z release ranks="all" final=true'
    )
    # microseconds are truncated, as flux-core does
    assert format_text(Event(0.9999999, "x"), time_format="iso") == "1970-01-01T00:00:00.999999Z x"


def test_format_text_offset() -> None:
    assert format_text(RELEASE, time_format="offset", t0=1738774190.0).startswith("4.185372 ")
    assert format_text(RELEASE, time_format="offset").startswith("0.000000 ")


def test_format_text_unknown_format() -> None:
    with pytest.raises(UsageError, match="'human'"):
        format_text(RELEASE, time_format="human")
    with pytest.raises(UsageError, match="'bogus'"):
        TextFormatter("bogus")


def test_format_text_unserialisable_value() -> None:
    with pytest.raises(EventlogError, match="context is not JSON"):
        format_text(Event(1, "x", {"a": object()}))


def test_text_formatter_offset_counts_from_first_event() -> None:
    fmt = TextFormatter("offset")
    assert [fmt.format(e) for e in parse(RFC18)][:3] == [
        "0.000000 submit urgency=16 userid=5588 flags=0",
        "199.338291 urgency urgency=0 userid=5588",
        "0.020496 free",
    ]


def test_text_formatter_raw_and_iso_match_format_text() -> None:
    for tf in ("raw", "iso"):
        fmt = TextFormatter(tf)
        assert fmt.format(RELEASE) == format_text(RELEASE, time_format=tf)
    assert set(TIME_FORMATS) == {"raw", "iso", "offset", "human"}


@pytest.fixture
def utc() -> Iterator[None]:
    mp = pytest.MonkeyPatch()
    mp.setenv("TZ", "UTC")
    time.tzset()
    yield
    mp.undo()
    time.tzset()


@pytest.mark.usefixtures("utc")
def test_text_formatter_human() -> None:
    fmt = TextFormatter("human")
    t = 1738774194.185372  # 2025-02-05 16:49:54 UTC
    got = [
        fmt.format(Event(t, "submit")),
        fmt.format(Event(t + 0.5, "alloc", {"n": 1})),
        fmt.format(Event(t + 5.25, "start")),
        fmt.format(Event(t + 60, "finish")),
        fmt.format(Event(t + 61, "clean")),
    ]
    assert got == [
        "[Feb05 16:49] submit",
        "[  +0.500000] alloc n=1",
        "[  +5.250000] start",
        "[Feb05 16:50] finish",
        "[  +1.000000] clean",
    ]


# -- properties ----------------------------------------------------------------------------


@settings(max_examples=200)
@given(events)
def test_event_line_round_trip(event: Event) -> None:
    line = event.to_line()
    assert line.endswith("\n")
    assert line.count("\n") == 1
    assert Event.from_line(line) == event
    assert Event.from_json(orjson.loads(line)) == event
    assert format_text(event).startswith(f"{event.timestamp:.6f} {event.name}")


@settings(max_examples=100)
@given(st.lists(events, max_size=8), st.integers(min_value=0, max_value=10_000))
def test_eventlog_round_trip(log: list[Event], cut: int) -> None:
    text = "".join(e.to_line() for e in log)
    assert parse(text) == log
    data = text.encode()
    reader = EventlogReader()
    assert reader.feed(data[:cut]) + reader.feed(data[cut:]) == log


def _outcome(fn: Any, *args: Any) -> object:
    """What fn returns, or the EventlogError it raises; anything else escapes and fails."""
    try:
        return fn(*args)
    except EventlogError as exc:
        return exc


@settings(max_examples=300)
@given(st.text() | st.binary())
def test_fuzz_text_and_bytes(data: str | bytes) -> None:
    assert isinstance(_outcome(parse, data), list | EventlogError)
    assert isinstance(_outcome(Event.from_line, data), Event | EventlogError)
    assert isinstance(_outcome(EventlogReader().feed, data), list | EventlogError)


json_lines = st.dictionaries(
    st.sampled_from(["timestamp", "name", "context", "x"]),
    json_values,
    max_size=4,
).map(lambda d: orjson.dumps(d).decode())


@settings(max_examples=150)
@given(st.lists(json_lines | st.text(max_size=20), max_size=5), st.booleans())
def test_fuzz_structured_lines(lines: list[str], terminated: bool) -> None:
    text = "\n".join(lines) + ("\n" if terminated else "")
    assert isinstance(_outcome(parse, text), list | EventlogError)
    for line in lines:
        assert isinstance(_outcome(Event.from_line, line), Event | EventlogError)


@settings(max_examples=150)
@given(json_values)
def test_fuzz_from_json(obj: Any) -> None:
    assert isinstance(_outcome(Event.from_json, obj), Event | EventlogError)


event_objects = st.fixed_dictionaries(
    {
        "timestamp": st.floats(allow_nan=True) | st.integers() | st.text(max_size=3),
        "name": st.text(max_size=6) | st.integers(),
    },
    optional={"context": st.none() | st.dictionaries(st.text(max_size=3), st.integers())},
)


@given(event_objects)
def test_from_json_builds_what_the_constructor_builds(obj: dict[str, Any]) -> None:
    """from_json's quick construction accepts and builds exactly what Event() would."""
    direct = _outcome(lambda o: Event(o["timestamp"], o["name"], o.get("context")), obj)
    decoded = _outcome(Event.from_json, obj)
    if "context" in obj and obj["context"] is None:
        assert isinstance(decoded, EventlogError)  # null context: from_json is stricter
    elif isinstance(direct, Event):
        assert decoded == direct
        assert isinstance(decoded, Event)
        assert (decoded.timestamp, decoded.context) == (direct.timestamp, direct.context)
    else:
        assert isinstance(decoded, EventlogError)


# pieces that can fool a decoder which joins lines: separators, brackets, split strings
crafted_lines = st.lists(
    st.sampled_from(["{", "}", "[", "]", ",", '""', '"', ":", "1", " ", '{"a":', '"x"', "\\"]),
    max_size=10,
).map("".join)
any_lines = (
    events.map(lambda e: e.to_line()[:-1]) | json_lines | crafted_lines | st.text(max_size=12)
)


def _line_by_line(text: str) -> list[Any] | None:
    """What decoding each line of a terminated text on its own gives (None: a line fails)."""
    try:
        return [orjson.loads(line) for line in text[:-1].split("\n")]
    except orjson.JSONDecodeError:
        return None


@settings(max_examples=400)
@given(st.lists(any_lines, min_size=1, max_size=6), st.booleans())
def test_whole_decode_agrees_with_line_by_line(lines: list[str], terminated: bool) -> None:
    """The one-call decode of a whole eventlog accepts only what decoding each line
    accepts, with the same values, and parse gives what it gives line by line."""
    text = "\n".join(lines) + ("\n" if terminated else "")
    terminated = text.endswith("\n")
    whole = _decode_whole(text)
    if whole is not None:
        assert terminated
        assert whole == _line_by_line(text)
        assert _decode_whole(text.encode()) == whole
    if terminated and '""' not in text and _line_by_line(text) is not None:
        assert whole is not None  # the quick path is taken whenever it can be
    strict = _outcome(lambda t: _parse_lines(t, 1), text)
    parsed = _outcome(parse, text)
    if isinstance(strict, tuple) and not strict[1]:
        assert parsed == strict[0]
    else:
        assert isinstance(parsed, EventlogError)
        if isinstance(strict, EventlogError):
            assert str(parsed) == str(strict)


@pytest.mark.parametrize(
    "text",
    [
        # a value spread over two lines, made up for by a line holding two values
        '{"timestamp":1.0,"name":"a","context":{"x":[[1\n2]]}}\n'
        '{"timestamp":1.0,"name":"b"},{"timestamp":1.0,"name":"c"}\n',
        '{"timestamp":1.0,"name":"a","context":{"x":"\n"}}\n{"timestamp":1.0,"name":"b"}\n',
        '{"timestamp":1.0,"name":"a"}\n\n{"timestamp":1.0,"name":"b"}\n',
        '{"timestamp":1.0,"name":"a"}\n"",{"timestamp":1.0,"name":"b"}\n',
    ],
)
def test_whole_decode_refuses_what_lines_refuse(text: str) -> None:
    assert _decode_whole(text) is None
    with pytest.raises(EventlogError):
        parse(text)
