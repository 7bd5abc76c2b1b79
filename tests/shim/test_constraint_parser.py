"""flux.constraint.parser: flux-core's own cases (t/python/t0027), its errors, and, with
hypothesis, any query read as pflux's ``--requires`` reads it: the same object, or the
same error."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.errors import SpecError
from pflux.spec import constraint
from support.shim import SHIM_PYTHON

T = {"t": ["a"]}
VALID = [
    ("a", T),
    ("(a)", T),
    ("( a )", T),
    ("'a'", T),
    ("('a')", T),
    ("a|b", {"or": [T, {"t": ["b"]}]}),
    ("a or b", {"or": [T, {"t": ["b"]}]}),
    ("a || b", {"or": [T, {"t": ["b"]}]}),
    ("a b c", {"and": [T, {"t": ["b"]}, {"t": ["c"]}]}),
    ("a&b&c", {"and": [T, {"t": ["b"]}, {"t": ["c"]}]}),
    ("a and b && c", {"and": [T, {"t": ["b"]}, {"t": ["c"]}]}),
    ("a&b|c", {"or": [{"and": [T, {"t": ["b"]}]}, {"t": ["c"]}]}),
    ("a&(b|-c)", {"and": [T, {"or": [{"t": ["b"]}, {"not": [{"t": ["c"]}]}]}]}),
    ("a or -host:foo", {"or": [T, {"not": [{"host": ["foo"]}]}]}),
    ("a or time:11:00am", {"or": [T, {"time": ["11:00am"]}]}),
    ("a or test:'a quoted string'", {"or": [T, {"test": ["a quoted string"]}]}),
    ("name:'/foo|(bar)|baz.*/'", {"name": ["/foo|(bar)|baz.*/"]}),
    ("a:x", {"op-a": ["x"]}),
    # juxtaposition binds as AND, but a term after an OR closes the OR first
    ("a | b c", {"and": [{"or": [T, {"t": ["b"]}]}, {"t": ["c"]}]}),
    ("not a b", {"and": [{"not": [T]}, {"t": ["b"]}]}),
    ("not a not b", {"not": [{"and": [T, {"not": [{"t": ["b"]}]}]}]}),
    ("x: (y)", {"x": ["y"]}),
]
INVALID = [
    ("a|", "Unexpected end of input in 'a|'"),
    ("a:' ", 'Unclosed quote "\'" at position 3'),
    ('a:"b', "Unclosed quote '\"' at position 3"),
    ("(a", "Unclosed parenthesis in position 0"),
    ("(a))", "Mismatched parentheses starting at position 3."),
    ("-(a|b)", "Invalid token '(' at position 1"),
    ("4g,host:foo", "invalid character ',' in operator '4g,host:'"),
    ("foo and a:", "Missing argument to token 'a:'"),
    ("", "Unexpected end of input in ''"),
    ("| a", "Invalid token '|' at position 0"),
    ("a \u2003b", "Illegal character '\u2003' at position 2"),
    ("'):a", 'Unclosed quote "\'" at position 1'),
]


@pytest.fixture(scope="module")
def parser() -> Iterator[Any]:
    sys.path.insert(0, str(SHIM_PYTHON))
    try:
        yield importlib.import_module("flux.constraint.parser")
    finally:
        sys.path.remove(str(SHIM_PYTHON))
        for name in [m for m in sys.modules if m == "flux" or m.startswith("flux.")]:
            del sys.modules[name]


def subclass(parser: Any, **attrs: Any) -> Any:
    """A parser as flux-core's users make one: a subclass setting the class attributes."""
    return type("TestParser", (parser.ConstraintParser,), attrs)()


MINI = {
    "operator_map": {None: "properties", "host": "hostlist", "hosts": "hostlist", "rank": "ranks"},
    "split_values": {"properties": ","},
    "combined_terms": {"properties"},
}


def test_flux_cores_cases_parse_to_its_objects(parser: Any) -> None:
    for query, expected in VALID:
        assert subclass(parser, operator_map={None: "t", "a": "op-a"}).parse(query) == expected


def test_invalid_queries_raise_flux_cores_errors(parser: Any) -> None:
    for query, message in INVALID:
        with pytest.raises(parser.ConstraintSyntaxError) as info:
            subclass(parser, operator_map={None: "t"}).parse(query)
        assert str(info.value) == message, query
    with pytest.raises(parser.ConstraintSyntaxError, match='Missing required operator in "foo"'):
        parser.ConstraintParser().parse("foo")


def test_split_values_and_combined_terms(parser: Any) -> None:
    split = subclass(parser, operator_map={None: "t"}, split_values={"t": ","})
    combine = subclass(parser, operator_map={None: "t"}, combined_terms={"t"})
    assert split.parse("xx,yy") == {"t": ["xx", "yy"]}
    assert split.parse("t:xx,yy") == {"t": ["xx", "yy"]}
    assert combine.parse("a:xx b:yy") == {"and": [{"a": ["xx"]}, {"b": ["yy"]}]}
    assert combine.parse("xx and yy") == {"t": ["xx", "yy"]}
    assert combine.parse("not (xx and yy)") == {"not": [{"t": ["xx", "yy"]}]}
    assert combine.parse("xx|yy") == {"or": [{"t": ["xx"]}, {"t": ["yy"]}]}


def test_the_lexer_gives_ply_style_tokens(parser: Any) -> None:
    lexer = parser.ConstraintLexer()
    lexer.input("a:'b c' && -(d)")
    assert [(t.type, t.value, t.lexpos) for t in lexer] == [
        ("TOKEN", "a:b c", 3),
        ("AND", "&&", 8),
        ("NEGATE", "-", 11),
        ("LPAREN", "(", 12),
        ("TOKEN", "d", 13),
        ("RPAREN", ")", 14),
    ]


#  Any mix of terms, operators, parentheses and quotes, as --requires may be given
TERMS = ["a", "b", "c,d", "^e", "host:h1", "hosts:h[0-1]", "rank:1", "rank:0-2", "x:", ":"]
OPERATORS = ["-", "not", "and", "or", "&", "&&", "|", "||", "(", ")", " ", "'", '"', "'q r'"]
pieces = st.sampled_from(TERMS + OPERATORS)
queries = st.one_of(
    st.lists(pieces, max_size=12).map(" ".join),
    st.lists(pieces, max_size=12).map("".join),
    st.text(alphabet="ab-()|&' \":n^,", max_size=16),
)


@settings(max_examples=1000)
@given(query=queries)
def test_queries_read_as_pflux_reads_them_or_fail_alike(parser: Any, query: str) -> None:
    try:
        ours: Any = subclass(parser, **MINI).parse(query)
    except parser.ConstraintSyntaxError as exc:
        ours = f"error: {exc}"
    try:
        theirs: Any = constraint.parse(query)
    except SpecError as exc:
        theirs = f"error: {exc}"
    assert ours == theirs
