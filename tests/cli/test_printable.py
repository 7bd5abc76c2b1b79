"""User-chosen text shown on a terminal: non-printing characters escaped, printable
text unchanged, and JSON text the same JSON."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from pflux.api.replies import JobListing
from pflux.cli.printable import printable, printable_json, printable_value
from pflux.cli.topview import job_line
from pflux.spec.fluid import JobID

# every code point, surrogates aside (no str of UTF-8 text holds one)
ANY_TEXT = st.text(st.characters(exclude_categories=("Cs",)))


@given(ANY_TEXT)
def test_the_output_has_no_non_printing_character(text: str) -> None:
    shown = printable(text)
    assert shown.isprintable()
    assert all(char in shown for char in text if char.isprintable())


@given(st.text(st.characters(exclude_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"))))
def test_printable_text_is_unchanged(text: str) -> None:
    if text.isprintable():  # a separator other than the space is not printable
        assert printable(text) == text
        assert printable_json(text) == text


@given(st.recursive(ANY_TEXT | st.integers(), lambda inner: st.dictionaries(ANY_TEXT, inner)))
def test_json_text_stays_the_same_json_with_nothing_raw(value: object) -> None:
    text = json.dumps(value, ensure_ascii=False) + "\n" + json.dumps(value, ensure_ascii=False)
    shown = printable_json(text)
    assert all(line.isprintable() for line in shown.split("\n"))
    assert [json.loads(line) for line in shown.split("\n")] == [value, value]


def test_terminal_controls_show_as_their_escapes() -> None:
    evil = "a\nb\tc\r\x1b[2J\x1b]0;owned\x07\x9b\x7f\u202e\u00a0é日本🙂"
    assert printable(evil) == "a\\nb\\tc\\r\\x1b[2J\\x1b]0;owned\\x07\\x9b\\x7f\\u202e\\xa0é日本🙂"
    assert printable_value(3) == 3
    assert printable_value("x\ny") == "x\\ny"


def test_pflux_top_shows_a_job_name_escaped() -> None:
    job = JobListing(id=JobID(1), name="top\n\x1b[2Jx", ntasks=1, nnodes=1)
    assert job_line(job, 0.0).endswith(" top\\n\\x1b[2Jx")
