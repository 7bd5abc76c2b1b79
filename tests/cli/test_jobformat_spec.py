"""``pflux jobs`` reads a field's format spec as Python's grammar (with pflux's ``h`` and
``+`` after it) describes it: the parser agrees with that grammar written as a regex."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.cli.jobformat import spec_parts

GRAMMAR = re.compile(
    r"(?:(?P<fill>.)?(?P<align>[<>=^]))?(?P<sign>[-+ ])?(?P<z>z)?(?P<alt>#)?(?P<zero>0)?"
    r"(?P<width>\d+)?(?P<grouping>[_,])?(?:\.(?P<precision>\d+))?"
    r"(?P<type>[bcdeEfFgGnosxX%])?(?P<hyphen>h)?(?P<truncate>\+)?",
    re.DOTALL,
)


def _grammar(spec: str) -> dict[str, str] | None:
    match = GRAMMAR.fullmatch(spec)
    return {k: v or "" for k, v in match.groupdict().items()} if match else None


@settings(max_examples=1500, deadline=None)
@given(st.text(alphabet="<>=^-+ z#0123456789_,.bdefsxX%h+\n٣a", max_size=9))
def test_spec_parts_follow_the_grammar(spec: str) -> None:
    assert spec_parts(spec) == _grammar(spec)


def test_specs() -> None:
    assert spec_parts(">12") == {
        **dict.fromkeys(_grammar("") or {}, ""),
        "align": ">",
        "width": "12",
    }
    assert spec_parts("0<+z#012_.3fh+") == _grammar("0<+z#012_.3fh+")
    assert spec_parts("12.") is None
    assert spec_parts("q") is None
