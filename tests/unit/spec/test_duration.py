"""Flux Standard Duration (RFC 23): parsing, flux-core's formatting, round trips."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.errors import DurationError
from pflux.spec import duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30", 30.0),
        ("30s", 30.0),
        ("1.5m", 90.0),
        ("2h", 7200.0),
        ("1d", 86400.0),
        ("0", 0.0),
        ("0s", 0.0),
        ("100ms", 0.1),
        ("1ms", 0.001),
        (".5s", 0.5),
        ("5.", 5.0),
        ("1e3", 1000.0),
        ("1.5E-3s", 0.0015),
        ("+5", 5.0),  # strtod and float() both take a plus sign
        ("5d", 432000.0),  # flux-core t2710: --time-limit=5d is 432000
        ("4h", 14400.0),
    ],
)
def test_parse(text: str, seconds: float) -> None:
    assert duration.parse(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["inf", "infinity", "INF", "Infinity", "INFINITY"])
def test_parse_infinity_in_any_case(text: str) -> None:
    assert duration.parse(text) == math.inf


def test_default_unit_applies_to_bare_numbers_only() -> None:
    # flux-core's -t/--time-limit: minutes when no unit is given
    assert duration.parse("5", default_unit="m") == 300.0
    assert duration.parse("1.5", default_unit="m") == 90.0
    assert duration.parse("5s", default_unit="m") == 5.0
    assert duration.parse("2", default_unit="h") == 7200.0


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ("-5", "must not be negative"),
        ("-0.5s", "must not be negative"),
        ("nan", "expected a number"),
        ("NaN", "expected a number"),
        ("5min", "expected a number"),
        ("5x", "expected a number"),
        ("1ns", "expected a number"),
        ("00:30", "expected a number"),  # flux-core t2710 rejects it too
        ("4-00:30:00", "expected a number"),
        ("infs", "expected a number"),  # no unit on infinity (libutil/fsd.c)
        ("5s ", "expected a number"),
        (" 5", "expected a number"),
        ("1_000", "expected a number"),
        ("٣", "expected a number"),  # float() would read Arabic-Indic digits
        ("s", "expected a number"),
        ("1e400", "too large"),
        ("1e307d", "too large"),
    ],
)
def test_parse_rejects(text: str, why: str) -> None:
    with pytest.raises(DurationError, match=why) as info:
        duration.parse(text)
    assert f'"{text}"' in str(info.value)  # the message names the text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.0, "0s"),
        (0.0621, "62.1ms"),
        (0.1, "0.1s"),
        (1.0, "1s"),
        (30.0, "30s"),
        (59.5, "59.5s"),
        (60.0, "1m"),
        (90.0, "1.5m"),
        (3600.0, "1h"),
        (7200.0, "2h"),
        (5400.0, "1.5h"),
        (86400.0, "1d"),
        (432000.0, "5d"),
        (1000.0, "16.6667m"),  # six significant digits, as fsd_format_duration
        (1.23e-05, "0.0123ms"),
        (math.inf, "infinity"),
    ],
)
def test_format_as_flux_core(seconds: float, text: str) -> None:
    assert duration.format(seconds) == text


def test_format_precision() -> None:
    assert duration.format(1000.0, precision=3) == "16.7m"


@pytest.mark.parametrize("seconds", [-1.0, -math.inf, math.nan])
def test_format_rejects(seconds: float) -> None:
    with pytest.raises(DurationError, match="must be a number >= 0"):
        duration.format(seconds)


@settings(max_examples=300)
@given(st.floats(min_value=0.0, max_value=1e300) | st.just(math.inf))
def test_parse_of_format_round_trips(seconds: float) -> None:
    back = duration.parse(duration.format(seconds))
    assert math.isclose(back, seconds, rel_tol=1e-5, abs_tol=1e-300)


@settings(max_examples=300)
@given(st.text(alphabet="0123456789.eE+-smhdinfINF ", max_size=12) | st.text(max_size=8))
def test_parse_raises_only_duration_error(text: str) -> None:
    try:
        seconds = duration.parse(text)
    except DurationError:
        return
    assert seconds >= 0.0
