"""Sizes in bytes: flux-core's parse_size grammar, what it refuses, and round trips."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pflux.errors import SizeError
from pflux.spec.size import SIZE_RULE, parse_size

SUFFIXES = {"": 0, "k": 10, "K": 10, "M": 20, "G": 30, "T": 40, "P": 50, "E": 60}
MAX = (1 << 64) - 1


def assert_size(text: str, expected: int) -> None:
    """``text`` reads as ``expected`` bytes, or is refused past MAX."""
    if expected <= MAX:
        assert parse_size(text) == expected
    else:
        with pytest.raises(SizeError, match="must be at most"):
            parse_size(text)


@pytest.mark.parametrize(
    ("value", "size"),
    [
        (0, 0),
        (5, 5),
        ("0", 0),
        ("1024", 1024),
        ("010", 10),
        ("1k", 1024),
        ("1K", 1024),
        ("8M", 8 << 20),
        ("1G", 1 << 30),
        ("2T", 2 << 40),
        ("1P", 1 << 50),
        ("15E", 15 << 60),
        ("1.5K", 1536),
        ("0.5M", 1 << 19),
        ("1.", 1),
        ("1.9", 1),
        ("0.001K", 1),
        ("0.0001K", 0),
        (str(MAX), MAX),
    ],
)
def test_sizes_read_as_flux_core_reads_them(value: object, size: int) -> None:
    assert parse_size(value) == size


@pytest.mark.parametrize(
    "value",
    ["", "K", "m", "1m", "1g", "1KB", "1MiB", "1 K", " 1", "1 ", "-1", "+1", "0x10", "1e3",
     ".5K", "1.5.K", "inf", "nan", "1K1", True, False, None, 1.5, [], -1],
)  # fmt: skip
def test_anything_else_is_refused_naming_the_rule(value: object) -> None:
    with pytest.raises(SizeError) as info:
        parse_size(value)
    assert str(info.value) == f"must be {SIZE_RULE}, not {value!r}"


@pytest.mark.parametrize("value", ["16E", str(1 << 64), 1 << 64, "18446744073709551616"])
def test_past_sixteen_exbibytes_is_refused(value: object) -> None:
    with pytest.raises(SizeError) as info:
        parse_size(value)
    assert str(info.value) == f"must be at most {MAX} bytes (16E), not {value!r}"


@given(st.integers(min_value=0, max_value=1 << 20), st.sampled_from(sorted(SUFFIXES)))
def test_a_whole_number_scales_by_its_suffix(number: int, suffix: str) -> None:
    assert_size(f"{number}{suffix}", number << SUFFIXES[suffix])


@given(
    st.integers(min_value=0, max_value=1 << 20),
    st.text("0123456789", min_size=1, max_size=12),
    st.sampled_from(sorted(SUFFIXES)),
)
def test_a_fraction_is_rounded_down_exactly(whole: int, digits: str, suffix: str) -> None:
    scale = 1 << SUFFIXES[suffix]
    expected = (int(f"{whole}{digits}") * scale) // 10 ** len(digits)
    assert_size(f"{whole}.{digits}{suffix}", expected)


@given(st.integers(min_value=0, max_value=MAX))
def test_an_integer_is_its_own_size_as_number_or_text(size: int) -> None:
    assert parse_size(size) == size
    assert parse_size(str(size)) == size


@given(st.one_of(st.text(max_size=12), st.floats(), st.none(), st.booleans(), st.integers()))
def test_anything_is_a_size_or_a_size_error(value: object) -> None:
    try:
        size = parse_size(value)
    except SizeError as exc:
        text = str(exc)
    else:
        text = "must be "
        assert isinstance(size, int)
        assert 0 <= size < 1 << 64
    assert text.startswith("must be ")
