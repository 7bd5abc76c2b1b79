"""RFC 35 queries read into RFC 31 objects as flux-core reads them (its t0027 cases,
with ``--requires``'s operators), and RFC 31 objects matched against R's targets."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pflux.errors import SpecError
from pflux.spec.constraint import matching_ranks, parse, placeable, unmet
from pflux.spec.idset import IdSet
from pflux.spec.resource import ResourceSet, Target


def props(*names: str) -> dict[str, list[str]]:
    return {"properties": list(names)}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("a", props("a")),
        ("( a )", props("a")),
        ("'a'", props("a")),
        ("a b c", props("a", "b", "c")),
        ("a&b&c", props("a", "b", "c")),
        ("a,b,c", props("a", "b", "c")),
        ("a and b && c", props("a", "b", "c")),
        ("a|b", {"or": [props("a"), props("b")]}),
        ("a or b || c", {"or": [props("a"), props("b"), props("c")]}),
        ("a&b|c", {"or": [props("a", "b"), props("c")]}),
        ("a&(b|c)", {"and": [props("a"), {"or": [props("b"), props("c")]}]}),
        ("(a&(b|-c))", {"and": [props("a"), {"or": [props("b"), {"not": [props("c")]}]}]}),
        ("b or not c", {"or": [props("b"), {"not": [props("c")]}]}),
        ("not (a and b)", {"not": [props("a", "b")]}),
        ("not a b", {"and": [{"not": [props("a")]}, props("b")]}),
        ("host:fluke[1-5]", {"hostlist": ["fluke[1-5]"]}),
        ("hosts:x -host:y", {"and": [{"hostlist": ["x"]}, {"not": [{"hostlist": ["y"]}]}]}),
        ("a host:x b", {"and": [props("a"), {"hostlist": ["x"]}, props("b")]}),
        ("rank:0", {"ranks": ["0"]}),
        ("a or time:11:00am", {"or": [props("a"), {"time": ["11:00am"]}]}),
        ("a or test:'a quoted string'", {"or": [props("a"), {"test": ["a quoted string"]}]}),
        ('name:"/foo|(bar)/"', {"name": ["/foo|(bar)/"]}),
        ("^gpu", props("^gpu")),
        # flux-core's precedences: a term after an OR closes it; NOT binds a term, and a
        # NOT after a term or NOT nests
        ("a | b c", {"and": [{"or": [props("a"), props("b")]}, props("c")]}),
        ("a | b & c", {"or": [props("a"), props("b", "c")]}),
        ("a b -c", {"and": [props("a"), {"and": [props("b"), {"not": [props("c")]}]}]}),
        ("not a not b", {"not": [{"and": [props("a"), {"not": [props("b")]}]}]}),
        ("x: (y)", {"x": ["y"]}),
    ],
)  # fmt: skip
def test_queries_read_as_flux_reads_them(query: str, expected: dict[str, Any]) -> None:
    assert parse(query) == expected


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("a|", "Unexpected end of input in 'a|'"),
        ("a:' ", 'Unclosed quote "\'" at position 3'),
        ("(a", "Unclosed parenthesis in position 0"),
        ("(a))", "Mismatched parentheses starting at position 3."),
        ("-(a|b)", "Invalid token '(' at position 1"),
        ("4g,host:foo", "invalid character ',' in operator '4g,host:'"),
        ("foo and a:", "Missing argument to token 'a:'"),
        ("", "Unexpected end of input in ''"),
        ("'):a", 'Unclosed quote "\'" at position 1'),  # the lexer's error before the term's
        ("& a", "Invalid token '&' at position 0"),
    ],
)
def test_bad_queries_say_where(query: str, message: str) -> None:
    with pytest.raises(SpecError) as exc:
        parse(query)
    assert str(exc.value) == message


WORDS = st.sampled_from(["a", "b", "host:n[0-1]", "rank:1", "-c", "^d", "'e f'"])


@given(st.lists(WORDS, min_size=1, max_size=6), st.lists(st.sampled_from([" ", "&", "|"])))
def test_any_query_of_terms_and_operators_parses(words: list[str], joins: list[str]) -> None:
    query = words[0] + "".join(
        f" {join} {word}" for join, word in zip(joins + [" "] * len(words), words[1:], strict=False)
    )
    result = parse(query)
    assert isinstance(result, dict)
    assert len(result) == 1
    assert parse(f"({query})") == result


TWO = ResourceSet(
    {0: Target("node0", IdSet([0]), IdSet()), 1: Target("node1", IdSet([0]), IdSet())},
    properties={"big": IdSet([1])},
)


@pytest.mark.parametrize(
    ("query", "ranks"),
    [
        ("host:node[0-1]", "0-1"),
        ("host:node1", "1"),
        ("-host:node1", "0"),
        ("rank:0", "0"),
        ("big", "1"),
        ("^big", "0"),
        ("big | rank:0", "0-1"),
        ("not big and rank:0-1", "0"),
        ("small", ""),
    ],
)
def test_matching_ranks(query: str, ranks: str) -> None:
    assert matching_ranks(parse(query), TWO) == IdSet.decode(ranks)


def test_unmet_says_why_unless_some_rank_meets_it() -> None:
    assert unmet(parse("host:node[0-1]"), TWO) is None
    assert unmet(parse("rank:5"), TWO) == (
        'unsatisfiable constraints {"ranks":["5"]}: no rank of this instance meets them'
    )
    assert unmet(parse("rank:0"), TWO) is None
    assert unmet(parse("big"), TWO) is None


def test_placeable_names_the_ranks_that_meet_it_or_none_for_all() -> None:
    assert placeable(parse("host:node[0-1]"), TWO) is None
    assert placeable(parse("rank:0"), TWO) == IdSet.decode("0")
    assert placeable(parse("big"), TWO) == IdSet.decode("1")
    with pytest.raises(SpecError, match="no rank of this instance meets them"):
        placeable(parse("^big rank:1"), TWO)
    assert unmet({"color": ["red"]}, TWO) == (
        'constraints: unknown constraint operator \'color\' (in {"color":["red"]})'
    )
    assert unmet({"not": [props("a"), props("b")]}, TWO) == (
        'constraints.not: must be an array of one (in {"not":[{"properties":["a"]},'
        '{"properties":["b"]}]})'
    )
    assert unmet({"hostlist": ["n[1"]}, TWO) is not None
    assert unmet({"ranks": [""]}, TWO) is not None
    assert unmet([], TWO) is not None
