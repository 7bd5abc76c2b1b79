"""RFC 26 dependency URIs, their object form, and ``--begin-time``."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.errors import DependencyError
from pflux.spec.dependency import begin_time, format_uri, parse_uri

# ------------------------------------------------------------------ parse_uri


@pytest.mark.parametrize(
    ("uri", "obj"),
    [
        # RFC 26's command-line examples
        ("afterany:ƒ2oLkTLb", {"scheme": "afterany", "value": "ƒ2oLkTLb"}),
        ("string:foo?type=out", {"scheme": "string", "value": "foo", "type": "out"}),
        (
            "fluid:hungry-hippos-white-elephant",
            {"scheme": "fluid", "value": "hungry-hippos-white-elephant"},
        ),
        # flux-core t2270: values stay strings, option values become numbers,
        # a repeated key gathers a list
        ("foo:1234", {"scheme": "foo", "value": "1234"}),
        ("foo:3.1415", {"scheme": "foo", "value": "3.1415"}),
        ("foo:f1?val=bar", {"scheme": "foo", "value": "f1", "val": "bar"}),
        ("foo:f1?val=a&val=b", {"scheme": "foo", "value": "f1", "val": ["a", "b"]}),
        ("begin-time:1234.5", {"scheme": "begin-time", "value": "1234.5"}),
    ],
)
def test_parse_examples(uri: str, obj: dict[str, Any]) -> None:
    assert parse_uri(uri) == obj


def test_several_options_with_both_separators() -> None:
    dep = parse_uri("string:A?type=in&scope=user;n=3;x=1.5&big=-12e3")
    assert dep == {
        "scheme": "string",
        "value": "A",
        "type": "in",
        "scope": "user",
        "n": 3,
        "x": 1.5,
        "big": -12000.0,
    }
    assert list(dep) == ["scheme", "value", "type", "scope", "n", "x", "big"]


def test_option_values_that_are_numbers() -> None:
    dep = parse_uri("x:y?i=007&neg=-3&f=.5&e=1E2&s=1_000&n=nan&inf=inf&sp=+1")
    assert dep["i"] == 7
    assert isinstance(dep["i"], int)
    assert dep["neg"] == -3
    assert dep["f"] == 0.5
    assert dep["e"] == 100.0
    assert isinstance(dep["e"], float)
    # flux-core's float() would take these; JSON cannot carry nan or inf
    assert dep["s"] == "1_000"
    assert dep["n"] == "nan"
    assert dep["inf"] == "inf"
    assert dep["sp"] == " 1"  # + is a space in a query


def test_list_of_three_and_mixed_numbers() -> None:
    assert parse_uri("x:y?k=1&k=b&k=2.5")["k"] == [1, "b", 2.5]


def test_query_is_percent_decoded_and_value_is_not() -> None:
    dep = parse_uri("x:a%20b?k%3D=v%26w+x&e=")
    assert dep == {"scheme": "x", "value": "a%20b", "k=": "v&w x", "e": ""}


def test_value_keeps_everything_up_to_the_query() -> None:
    assert parse_uri("x:a:b/c#d")["value"] == "a:b/c#d"
    assert parse_uri("x://host/path")["value"] == "//host/path"


def test_scheme_is_case_folded_like_a_uri_scheme() -> None:
    assert parse_uri("AfterOK:ƒ2")["scheme"] == "afterok"


def test_a_scheme_alone_has_an_empty_value() -> None:
    # flux-core's CLI reads "singleton" as "singleton:" (a scheme whose value is unused)
    assert parse_uri("Singleton") == {"scheme": "singleton", "value": ""}


def test_empty_options_are_skipped() -> None:
    assert parse_uri("x:y?&a=1&&b=2;") == {"scheme": "x", "value": "y", "a": 1, "b": 2}
    assert parse_uri("x:y?") == {"scheme": "x", "value": "y"}


@pytest.mark.parametrize(
    ("uri", "why"),
    [
        ("", "expected SCHEME:VALUE"),
        ("after ok", "expected SCHEME:VALUE"),
        (":ƒ2", "missing scheme"),
        ("afterok:", "missing value"),
        ("afterok:?a=1", "missing value"),
        ("1after:2", 'scheme "1after" must start with a letter'),
        ("after ok:2", "must start with a letter and hold only"),
        ("x:y?flag", 'option "flag" is not KEY=VALUE'),
        ("x:y?=1", 'option "=1" is not KEY=VALUE'),
        ("x:y?value=2", 'option "value" would replace the value'),
        ("x:y?scheme=z", 'option "scheme" would replace the scheme'),
    ],
)
def test_parse_errors(uri: str, why: str) -> None:
    with pytest.raises(DependencyError, match=re.escape(why)) as info:
        parse_uri(uri)
    assert str(info.value).startswith(f'invalid dependency URI "{uri}"')


# ----------------------------------------------------------------- format_uri


@pytest.mark.parametrize(
    ("obj", "uri"),
    [
        ({"scheme": "afterany", "value": "ƒ2oLkTLb"}, "afterany:ƒ2oLkTLb"),
        ({"scheme": "string", "value": "foo", "type": "out"}, "string:foo?type=out"),
        (
            {"scheme": "string", "value": "A", "type": "in", "scope": "user"},
            "string:A?type=in&scope=user",
        ),
        ({"scheme": "x", "value": "y", "k": [1, "a b"]}, "x:y?k=1&k=a+b"),
        ({"scheme": "x", "value": "y", "k&=": "1.5%"}, "x:y?k%26%3D=1.5%25"),
        ({"scheme": "x", "value": "y", "f": 1e16}, "x:y?f=1e%2B16"),
    ],
)
def test_format_examples(obj: dict[str, Any], uri: str) -> None:
    assert format_uri(obj) == uri
    assert parse_uri(uri) == obj


@pytest.mark.parametrize(
    ("obj", "why"),
    [
        ({"value": "y"}, "scheme None"),
        ({"scheme": "1x", "value": "y"}, "scheme '1x'"),
        ({"scheme": "x"}, "value None"),
        ({"scheme": "x", "value": ""}, "non-empty string without '?'"),
        ({"scheme": "x", "value": "a?b"}, "non-empty string without '?'"),
        ({"scheme": "x", "value": "y", "k": True}, "'k': True has no URI form"),
        ({"scheme": "x", "value": "y", "k": None}, "'k': None has no URI form"),
        ({"scheme": "x", "value": "y", "k": {"a": 1}}, "has no URI form"),
        ({"scheme": "x", "value": "y", "k": [[1]]}, "has no URI form"),
        ({"scheme": "x", "value": "y", "k": "\udc80"}, "cannot be encoded"),
    ],
)
def test_format_errors(obj: dict[str, Any], why: str) -> None:
    with pytest.raises(DependencyError, match=re.escape(why)):
        format_uri(obj)


_NUMBER_LIKE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
schemes = st.from_regex(r"[a-z][a-z0-9+.-]{0,11}", fullmatch=True)
values = st.text(min_size=1, max_size=20).filter(lambda v: "?" not in v)
keys = st.text(min_size=1, max_size=8).filter(lambda k: k not in ("scheme", "value"))
scalars = (
    st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12).filter(lambda s: _NUMBER_LIKE.fullmatch(s) is None)
)
option_values = scalars | st.lists(scalars, min_size=2, max_size=4)


@st.composite
def dependencies(draw: st.DrawFn) -> dict[str, Any]:
    dep: dict[str, Any] = {"scheme": draw(schemes), "value": draw(values)}
    dep.update(draw(st.dictionaries(keys, option_values, max_size=4)))
    return dep


@settings(max_examples=300)
@given(dependencies())
def test_parse_of_format_round_trips(dep: dict[str, Any]) -> None:
    assert parse_uri(format_uri(dep)) == dep


uri_text = st.text(alphabet="ab1:?&;=%+.-_ƒ/#", max_size=24) | st.text(max_size=16)


@settings(max_examples=500)
@given(uri_text)
def test_parse_raises_only_dependency_error(text: str) -> None:
    try:
        dep = parse_uri(text)
    except DependencyError:
        return
    assert isinstance(dep["scheme"], str)
    assert isinstance(dep["value"], str)
    assert dep["scheme"]
    assert dep["value"] or ":" not in text  # only a scheme alone has an empty value


json_like = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=6)
    | st.lists(st.integers() | st.text(max_size=3) | st.none(), max_size=3)
    | st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)
)


@settings(max_examples=200)
@given(st.dictionaries(st.sampled_from(["scheme", "value", "k", "n"]) | st.text(), json_like))
def test_format_raises_only_dependency_error(obj: dict[str, Any]) -> None:
    try:
        uri = format_uri(obj)
    except DependencyError:
        return
    assert parse_uri(uri)["scheme"] == obj["scheme"]


# ----------------------------------------------------------------- begin-time

TZ = timezone(timedelta(hours=-7))
NOW = datetime(2021, 6, 10, 14, 0, 0, tzinfo=TZ).timestamp()


def at(*fields: int) -> float:
    """Epoch seconds of a date and time (year, month, day[, hour, minute, second]) in TZ."""
    year, month, day, hour, minute, second = (*fields, 0, 0, 0)[:6]
    return datetime(year, month, day, hour, minute, second, tzinfo=TZ).timestamp()


def stamp(text: str) -> float:
    dep = begin_time(text, now=NOW, tz=TZ)
    assert dep["scheme"] == "begin-time"
    assert isinstance(dep["value"], str)  # RFC 26: the value is a string
    return float(dep["value"])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("now", NOW),
        ("NOW", NOW),
        # flux-core's t0024-util.py offsets
        ("+1", NOW + 1),
        ("-1", NOW - 1),
        ("+1m", NOW + 60),
        ("+1.5m", NOW + 90),
        ("+1h", NOW + 3600),
        ("+100ms", NOW + 0.1),
        ("+1ms", NOW + 0.001),
        ("+2h", NOW + 7200),
        # dates and times, in the zone given
        ("2021-06-10 08:00:00", at(2021, 6, 10, 8)),
        ("6/10/2021 08:00", at(2021, 6, 10, 8)),
        ("2021-06-12", at(2021, 6, 12)),
        ("2021-06-12T10:30", at(2021, 6, 12, 10, 30)),
        ("2021-06-12 10:30", at(2021, 6, 12, 10, 30)),
        ("2021-06-12T10:30:00+00:00", at(2021, 6, 12, 3, 30)),
        ("2021-06-21 8am", at(2021, 6, 21, 8)),
        ("8am 2021-06-21", at(2021, 6, 21, 8)),
        # times of day: today, even when passed (as flux-core's parser does)
        ("8:00", at(2021, 6, 10, 8)),
        ("20:00", at(2021, 6, 10, 20)),
        ("17:30:15", at(2021, 6, 10, 17, 30, 15)),
        ("8pm", at(2021, 6, 10, 20)),
        ("8 PM", at(2021, 6, 10, 20)),
        ("8:30pm", at(2021, 6, 10, 20, 30)),
        ("12am", at(2021, 6, 10, 0)),
        ("12pm", at(2021, 6, 10, 12)),
        ("noon", at(2021, 6, 10, 12)),
        ("midnight", at(2021, 6, 10)),
        # days: midnight, or with a time in either order (flux-core t2272)
        ("today", at(2021, 6, 10)),
        ("tomorrow", at(2021, 6, 11)),
        ("noon tomorrow", at(2021, 6, 11, 12)),
        ("8pm tomorrow", at(2021, 6, 11, 20)),
        ("tomorrow 8pm", at(2021, 6, 11, 20)),
        ("8:00:21 tomorrow", at(2021, 6, 11, 8, 0, 21)),
        ("10:30 today", at(2021, 6, 10, 10, 30)),
        ("  Tomorrow   8 pm ", at(2021, 6, 11, 20)),
        # the English of flux-core's parser (parsedatetime), NOW a Thursday
        ("in 10 min", at(2021, 6, 10, 14, 10)),
        ("3 days ago", at(2021, 6, 7, 14)),
        ("in a week", at(2021, 6, 17, 14)),
        ("last friday", at(2021, 6, 4)),
        ("friday", at(2021, 6, 11)),
        ("thursday", at(2021, 6, 17)),
        ("this monday", at(2021, 6, 7)),
        ("next friday 8am", at(2021, 6, 18, 8)),
        ("tomorrow at noon", at(2021, 6, 11, 12)),
        ("next week", at(2021, 6, 17)),
        ("next month", at(2021, 7, 10)),
        ("last year", at(2020, 6, 10)),
        ("Jun 12", at(2021, 6, 12)),
        ("12 June 2021 5pm", at(2021, 6, 12, 17)),
    ],
)
def test_begin_time(text: str, expected: float) -> None:
    assert stamp(text) == pytest.approx(expected)


def test_begin_time_value_is_the_timestamp_as_flux_writes_it() -> None:
    # flux-core: "begin-time:" + str(datetime.timestamp()), e.g. 1623358800.0
    assert begin_time("+1h", now=NOW, tz=TZ)["value"] == repr(NOW + 3600)


def test_begin_time_tomorrow_across_month_end() -> None:
    now = datetime(2021, 6, 30, 23, 0, tzinfo=TZ).timestamp()
    dep = begin_time("tomorrow 1am", now=now, tz=TZ)
    assert float(dep["value"]) == at(2021, 7, 1, 1)


def test_begin_time_local_zone_by_default() -> None:
    now = datetime(2021, 6, 10, 14, 0).timestamp()  # naive: local time
    assert float(begin_time("noon", now=now)["value"]) == datetime(2021, 6, 10, 12).timestamp()


@pytest.mark.parametrize(
    "text",
    [
        "",
        "blursday",
        "6/45/2021",
        "2/30/2024",
        "25:00",
        "8:61",
        "13pm",
        "0am",
        "8",
        "tomorrow tomorrow",
        "8am 9am",
        "+1ns",
        "+1x",
        "+x",
        "-",
        "+inf",
    ],
)
def test_begin_time_rejects(text: str) -> None:
    with pytest.raises(DependencyError, match=re.escape(f'invalid datetime "{text}')):
        begin_time(text, now=NOW, tz=TZ)


@settings(max_examples=300)
@given(st.text(alphabet="0123456789:/-+ amptodyrwnhsT.", max_size=20) | st.text(max_size=10))
def test_begin_time_raises_only_dependency_error(text: str) -> None:
    try:
        dep = begin_time(text, now=NOW, tz=TZ)
    except DependencyError:
        return
    assert float(dep["value"]) == float(dep["value"])  # a number, not NaN
