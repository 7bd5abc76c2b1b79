"""RFC 36 directives: which lines are directives, how they split, and the errors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pflux.errors import SpecError
from pflux.spec.directives import Directive, parse_directives


def test_directives_before_the_first_command_as_flux_reads_them() -> None:
    script = [
        "#!/bin/bash",
        "",
        "# FLUX: -N2 --job-name='my job'  # a comment",
        "# FLUX:",
        '# FLUX: --setattr=user.x="a b" -o a\\ b',
        "# an ordinary comment",
        "hostname",
        "# FLUX is mentioned here: no directive",
    ]
    assert parse_directives(script) == [
        Directive(3, ["-N2", "--job-name=my job"]),
        Directive(5, ["--setattr=user.x=a b", "-o", "a b"]),
    ]


def test_no_directives() -> None:
    assert parse_directives(["#!/bin/sh", "echo flux: -n2"]) == []


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["#flux: -n1", "true", "#flux: -n2"], "line 3: orphan 'flux:' detected"),
        (["#flux: -n1", "# FLUX: -n2"], "line 2: sentinel changed from '#flux:' to '# FLUX:'"),
        (["#flux: hello"], "line 1: Unknown directive: hello"),
        (["#flux: -n 'open"], "line 1: -n 'open: No closing quotation"),
        (['#flux: --x="""'], "line 1: triple-quoted directive values are not supported"),
    ],
)
def test_bad_directives_name_their_line(lines: list[str], message: str) -> None:
    with pytest.raises(SpecError, match=message.replace("'", ".").replace('"', ".")):
        parse_directives(lines)


TRIPLE_SINGLE = "'" * 3
TRIPLE_DOUBLE = '"' * 3
# any word but one holding a triple quote, which is refused
_WORD = st.text(
    st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=12
).filter(lambda word: TRIPLE_SINGLE not in word and TRIPLE_DOUBLE not in word)


def _quote(word: str) -> str:
    """``word`` double-quoted: a backslash escapes a quote or itself in either kind of
    quotes (flux's reading, where POSIX shells keep backslashes in single quotes)."""
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'


@given(st.lists(st.lists(_WORD, min_size=1, max_size=4), max_size=5))
def test_quoted_options_come_back_as_they_were(options: list[list[str]]) -> None:
    lines = ["#!/bin/sh"]
    expected = []
    for number, words in enumerate(options, 2):
        args = ["-" + words[0], *words[1:]]
        lines.append("#flux: " + " ".join(_quote(arg) for arg in args))
        expected.append(Directive(number, args))
    lines.append("exec true")
    assert parse_directives(lines) == expected


def test_a_backslash_escapes_a_quote_in_single_quotes_too() -> None:
    assert parse_directives(["#flux: -S 'it\\'s'"]) == [Directive(1, ["-S", "it's"])]
