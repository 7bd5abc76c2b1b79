"""RFC 22 idsets: decoding rules, encoding, set algebra, and properties against Python sets."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.errors import IdsetError
from pflux.spec import idset
from pflux.spec.idset import MAX_ID, IdSet

# decoding


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ("", []),
        ("[]", []),
        ("0", [0]),
        ("[7]", [7]),
        ("0-3", [0, 1, 2, 3]),
        ("1,2,3,5,6,42", [1, 2, 3, 5, 6, 42]),  # RFC 22 examples
        ("1-3,5-6,42", [1, 2, 3, 5, 6, 42]),
        ("[1-3,5-6,42]", [1, 2, 3, 5, 6, 42]),
        ("0,2,4-7", [0, 2, 4, 5, 6, 7]),
        ("9,10", [9, 10]),
        ("2147483647", [MAX_ID]),
    ],
)
def test_decode_valid(text: str, ids: list[int]) -> None:
    assert list(IdSet.decode(text)) == ids
    assert len(IdSet.decode(text)) == len(ids)


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("01", 'leading zero in "01"'),
        ("1,007", 'leading zero in "007"'),
        ("3,2", "ids must be in ascending order"),
        ("5,0-7", "ids must be in ascending order"),
        ("3-0", 'range "3-0" must ascend from a lower to a higher id'),
        ("3-3", 'range "3-3" must ascend from a lower to a higher id'),
        ("2,2", "id 2 is repeated"),
        ("0-3,2-5", "id 2 is repeated"),
        ("0-3,3", "id 3 is repeated"),
        ("0-", 'malformed range "0-"'),
        ("-5", 'malformed range "-5"'),
        ("1-2-3", 'malformed range "1-2-3"'),
        ("1,,2", "empty element"),
        (",1", "empty element"),
        ("1,", "empty element"),
        ("[", "unbalanced or misplaced brackets"),
        ("[1", "unbalanced or misplaced brackets"),
        ("1]", "unbalanced or misplaced brackets"),
        ("[[1]]", "unbalanced or misplaced brackets"),
        ("1,[2]", "unbalanced or misplaced brackets"),
        (" 1", "invalid character ' '"),
        ("1 ", "invalid character ' '"),
        ("1\n", "invalid character '\\n'"),
        ("1a", "invalid character 'a'"),
        ("+1", "invalid character '+'"),
        ("1_000", "invalid character '_'"),
        ("\u0663", "invalid character '\u0663'"),  # a non-ASCII digit
        ("2147483648", "id 2147483648 exceeds the maximum 2147483647"),
        ("0-4294967295", "id 4294967295 exceeds the maximum 2147483647"),
    ],
)
def test_decode_invalid_names_text_and_rule(text: str, rule: str) -> None:
    with pytest.raises(IdsetError) as info:
        IdSet.decode(text)
    assert str(info.value).endswith(rule)
    assert str(info.value).startswith("idset ")


def test_decode_error_message_shape() -> None:
    with pytest.raises(IdsetError, match=re.escape('idset "3,2": ids must be in ascending order')):
        IdSet.decode("3,2")


def test_decode_huge_number_is_an_idset_error() -> None:
    with pytest.raises(IdsetError, match="exceeds the maximum"):
        IdSet.decode("9" * 5000)  # int() alone would raise ValueError past 4300 digits
    with pytest.raises(IdsetError) as info:
        IdSet.decode("1," * 100 + "x")
    assert len(str(info.value)) < 200  # long texts are shortened in messages


@pytest.mark.parametrize("value", [None, 3, b"0-3", ["0"]])
def test_decode_non_string(value: object) -> None:
    with pytest.raises(IdsetError, match="must be a string"):
        IdSet.decode(value)  # type: ignore[arg-type]


def test_long_text_bypasses_cache_and_agrees() -> None:
    text = ",".join(str(i) for i in range(0, 400, 2))
    assert list(IdSet.decode(text)) == list(range(0, 400, 2))
    assert IdSet.decode(text).encode() == text


def test_huge_range_costs_nothing() -> None:
    ids = IdSet.decode("0-2147483647")
    assert len(ids) == 2**31
    assert ids.ranges == ((0, MAX_ID),)
    assert MAX_ID in ids
    assert ids.last() == MAX_ID


# encoding


@pytest.mark.parametrize(
    ("text", "canonical", "bracketed"),
    [
        ("", "", ""),
        ("[]", "", ""),
        ("5", "5", "5"),
        ("[5]", "5", "5"),
        ("1,2", "1-2", "[1-2]"),
        ("1,2,3,5,6,42", "1-3,5-6,42", "[1-3,5-6,42]"),
        ("0-3,4,5", "0-5", "[0-5]"),
        ("0,2,4", "0,2,4", "[0,2,4]"),
    ],
)
def test_encode(text: str, canonical: str, bracketed: str) -> None:
    ids = IdSet.decode(text)
    assert ids.encode() == canonical
    assert str(ids) == canonical
    assert ids.encode(brackets=True) == bracketed
    assert idset.encode(ids, brackets=True) == bracketed
    assert idset.encode(list(ids)) == canonical


def test_repr() -> None:
    assert repr(IdSet([3, 1, 2])) == "IdSet('1-3')"


# construction


def test_from_ids_sorts_and_merges() -> None:
    assert IdSet.from_ids([5, 1, 3, 2, 2, 1]) == IdSet.decode("1-3,5")
    assert IdSet() == IdSet.decode("")
    assert IdSet(range(10)).ranges == ((0, 9),)


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        ([-1], "id -1 is outside 0-2147483647"),
        ([MAX_ID + 1], "is outside"),
        ([True], "ids must be integers, not bool"),
        (["1"], "ids must be integers, not str"),
        ([1.0], "ids must be integers, not float"),
    ],
)
def test_from_ids_invalid(ids: list[object], message: str) -> None:
    with pytest.raises(IdsetError, match=re.escape(message)):
        IdSet.from_ids(ids)  # type: ignore[arg-type]


def test_range() -> None:
    assert IdSet.range(2, 5) == IdSet.decode("2-5")
    assert IdSet.range(4, 4) == IdSet.decode("4")
    assert IdSet.range(5, 4) == IdSet()
    assert len(IdSet.range(0, MAX_ID)) == MAX_ID + 1
    with pytest.raises(IdsetError):
        IdSet.range(-1, 3)
    with pytest.raises(IdsetError):
        IdSet.range(0, MAX_ID + 1)


# queries


def test_container_protocol() -> None:
    ids = IdSet.decode("0,2,4-7,100")
    assert list(ids) == [0, 2, 4, 5, 6, 7, 100]
    assert len(ids) == 7
    assert bool(ids)
    assert not IdSet()
    assert [i for i in range(-2, 110) if i in ids] == list(ids)
    assert "2" not in ids
    assert None not in ids
    assert ids.first() == 0
    assert ids.last() == 100


def test_first_last_of_empty() -> None:
    with pytest.raises(IdsetError, match="no first id"):
        IdSet().first()
    with pytest.raises(IdsetError, match="no last id"):
        IdSet().last()


def test_equality_and_hash() -> None:
    a = IdSet.decode("0-3")
    b = IdSet.from_ids([3, 2, 1, 0])
    assert a == b
    assert hash(a) == hash(b)
    assert {a: 1}[b] == 1
    assert a != IdSet.decode("0-2")
    assert a != "0-3"
    assert a != {0, 1, 2, 3}


def test_take() -> None:
    ids = IdSet.decode("1-3,7,9-12")
    assert ids.take(0) == IdSet()
    assert ids.take(2) == IdSet.decode("1-2")
    assert ids.take(3) == IdSet.decode("1-3")
    assert ids.take(5) == IdSet.decode("1-3,7,9")
    assert ids.take(len(ids)) == ids
    assert len(ids.take(5)) == 5
    with pytest.raises(IdsetError, match="cannot take 9 ids from a set of 8"):
        ids.take(9)
    with pytest.raises(IdsetError, match="non-negative integer"):
        ids.take(-1)


def test_algebra_examples() -> None:
    a = IdSet.decode("0-7")
    b = IdSet.decode("2-3,6,9")
    assert a | b == IdSet.decode("0-7,9")
    assert a & b == IdSet.decode("2-3,6")
    assert a - b == IdSet.decode("0-1,4-5,7")
    assert b - a == IdSet.decode("9")
    assert (a - b).issubset(a)
    assert not b.issubset(a)
    assert IdSet().issubset(b)
    assert a.isdisjoint(IdSet.decode("8-10"))
    assert not a.isdisjoint(b)
    assert IdSet.decode("0-2") | IdSet.decode("3-5") == IdSet.decode("0-5")
    assert a.union(IdSet()) is a
    assert a.__or__(3) is NotImplemented
    assert a.__and__(3) is NotImplemented
    assert a.__sub__(3) is NotImplemented


def test_module_decode() -> None:
    assert idset.decode("[0-1]") == IdSet([0, 1])


# properties

small_ids = st.sets(st.integers(0, 80), max_size=40)


@st.composite
def id_sets(draw: st.DrawFn) -> set[int]:
    """Sets mixing scattered ids and runs, some near MAX_ID."""
    ids = draw(small_ids)
    for lo, length in draw(st.lists(st.tuples(st.integers(0, 300), st.integers(1, 40)))):
        ids.update(range(lo, lo + length))
    if draw(st.booleans()):
        ids.update(draw(st.sets(st.integers(MAX_ID - 50, MAX_ID), max_size=5)))
    return ids


@settings(max_examples=300)
@given(id_sets())
def test_round_trip_from_ids(ids: set[int]) -> None:
    s = IdSet(ids)
    assert list(s) == sorted(ids)
    assert len(s) == len(ids)
    text = s.encode()
    assert IdSet.decode(text) == s
    assert IdSet.decode(text).encode() == text
    assert IdSet.decode(s.encode(brackets=True)) == s
    # an uncompressed comma list decodes to the same set and encodes canonically
    plain = ",".join(map(str, sorted(ids)))
    assert IdSet.decode(plain) == s
    assert IdSet.decode(f"[{plain}]").encode() == text


@settings(max_examples=300)
@given(small_ids, small_ids)
def test_algebra_agrees_with_python_sets(a: set[int], b: set[int]) -> None:
    x, y = IdSet(a), IdSet(b)
    assert set(x | y) == a | b
    assert set(x & y) == a & b
    assert set(x - y) == a - b
    assert set(y - x) == b - a
    assert x.issubset(y) == (a <= b)
    assert x.isdisjoint(y) == a.isdisjoint(b)
    assert len(x | y) == len(a | b)
    assert len(x - y) == len(a - b)
    assert len(x & y) == len(a & b)
    assert (x | y) == IdSet(a | b)  # results are canonical, so equality is structural
    assert (x - y) == IdSet(a - b)
    assert (x & y) == IdSet(a & b)


@settings(max_examples=200)
@given(id_sets(), id_sets())
def test_algebra_on_runs(a: set[int], b: set[int]) -> None:
    x, y = IdSet(a), IdSet(b)
    assert (x | y) == IdSet(a | b)
    assert (x - y) == IdSet(a - b)
    assert (x & y) == IdSet(a & b)
    assert x.issubset(y) == (a <= b)
    assert x.isdisjoint(y) == a.isdisjoint(b)


@settings(max_examples=200)
@given(id_sets(), st.integers(0, 400))
def test_take_and_contains_agree(ids: set[int], n: int) -> None:
    s = IdSet(ids)
    if n <= len(ids):
        assert list(s.take(n)) == sorted(ids)[:n]
    else:
        with pytest.raises(IdsetError):
            s.take(n)
    for probe in (n, n + 1, MAX_ID):
        assert (probe in s) == (probe in ids)


_ELEMENT = re.compile(r"(0|[1-9][0-9]*)(?:-(0|[1-9][0-9]*))?")


def _oracle(text: str) -> list[tuple[int, int]] | None:
    """A slow, obviously-correct reading of RFC 22 (with flux-core's a < b and MAX_ID).

    Returns the set as coalesced inclusive ranges, or None where the text is invalid.
    """
    if text.startswith("[") and text.endswith("]") and len(text) >= 2:
        text = text[1:-1]
    if text == "":
        return []
    ranges: list[tuple[int, int]] = []
    for element in text.split(","):
        m = _ELEMENT.fullmatch(element)
        if not m:
            return None
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if (m.group(2) is not None and hi <= lo) or hi > MAX_ID:
            return None
        if ranges and lo <= ranges[-1][1]:
            return None
        if ranges and lo == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], hi)
        else:
            ranges.append((lo, hi))
    return ranges


@settings(max_examples=1000)
@given(st.text(alphabet="0123456789,-[] ", max_size=14) | st.text(max_size=10))
def test_fuzz_decode_only_raises_idset_error(text: str) -> None:
    expected = _oracle(text)
    try:
        result = IdSet.decode(text)
    except IdsetError:  # any other exception escapes and fails the test
        assert expected is None, f"{text!r} should decode to {expected}"
        return
    assert expected is not None, f"{text!r} should be rejected"
    assert list(result.ranges) == expected
    assert IdSet.decode(result.encode()) == result


@given(st.sets(st.integers(0, 5000), max_size=60))
def test_from_sorted_is_the_set_of_its_ids(ids: set[int]) -> None:
    assert IdSet.from_sorted(sorted(ids)) == IdSet(ids)
