"""The lean option parser agrees with argparse wherever it does not hand over.

Over generated command lines for the real commands' declarations: where the lean
parser answers, argparse gives the same namespace; where argparse refuses the
line (an error, help), the lean parser hands it over.
"""

from __future__ import annotations

import contextlib
import functools
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.cli import alloc, batch, bulksubmit, jobs, options, run, submit

PARSERS = {
    "run": run._parser,
    "submit": submit._parser,
    "jobs": jobs._parser,
    "batch": batch._parser,
    "bulksubmit": bulksubmit._parser,
    "alloc": alloc._parser,
}

#: values that argparse reads in more than one way, or refuses
VALUES = [
    "",
    "-",
    "--",
    "-5",
    "-x",
    "5",
    "0",
    "12",
    " 5",
    "json",
    "yaml",
    "never",
    "always",
    "a=b",
    "-*",
    "x y",
    "-a b",
    "{cc}",
    "ƒ1",
]


def _argparse(parser: options.OptionParser, argv: list[str]) -> options.Args | None:
    """argparse's namespace for ``argv``, or None where it exits (help, an error)."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            parsed: options.Args = parser.argparse().parse_args(argv, namespace=options.Args())
        except SystemExit:
            return None
    return parsed


def _lean(parser: options.OptionParser, argv: list[str]) -> options.Args | None:
    """The lean parser's namespace, or None where it hands over."""
    try:
        return parser.parse_lean(argv)
    except options._HandOver:
        return None


@functools.cache
def _tokens(name: str) -> st.SearchStrategy[str]:
    """The words of a command line for the command ``name`` (built once: building a
    strategy costs more than drawing from it)."""
    parser = PARSERS[name]()
    strings = sorted(s for item in parser._declared for s in item.strings)
    longs = [s for s in strings if s.startswith("--")]
    shorts = [s[1] for s in strings if not s.startswith("--")]
    value = st.sampled_from(VALUES) | st.text(max_size=4)
    return st.one_of(
        st.sampled_from(strings),
        st.sampled_from(["-h", "--help", "--ur", "--stat", "-Z", "--nosuch"]),
        st.builds(lambda opt, text: f"{opt}={text}", st.sampled_from(longs), value),
        st.builds(
            lambda chars, text: "-" + "".join(chars) + text,
            st.lists(st.sampled_from(shorts), min_size=1, max_size=3),
            value,
        ),
        value,
        st.sampled_from(["true", "sleep", "ƒ2", "123"]),
    )


@st.composite
def command_lines(draw: st.DrawFn) -> tuple[str, list[str]]:
    name = draw(st.sampled_from(sorted(PARSERS)))
    return name, draw(st.lists(_tokens(name), max_size=8))


@settings(max_examples=600, deadline=None)
@given(command_lines())
def test_lean_parse_is_argparses_or_hands_over(case: tuple[str, list[str]]) -> None:
    name, argv = case
    parser = PARSERS[name]()
    lean = _lean(parser, argv)
    if lean is None:
        return
    expected = _argparse(PARSERS[name](), argv)
    assert expected is not None, f"argparse refuses {argv}, the lean parser took it: {lean}"
    assert vars(lean) == vars(expected)


@pytest.mark.parametrize(
    ("name", "argv"),
    [
        ("run", ["true"]),
        ("run", ["-n4", "-N", "2", "--env=-*", "-o", "cpu-affinity=off", "cmd", "-x", "--y"]),
        ("run", ["-vvlx", "--dry-run", "--format", "yaml", "--env", "A", "--env-remove=B", "c"]),
        ("submit", ["true"]),
        ("submit", ["--cc=1-2", "--quiet", "-t5", "--dependency=afterok:1", "--begin-time=1", "a"]),
        ("jobs", []),
        ("jobs", ["-a"]),
        ("jobs", ["--stats", "-c", "5", "-w", "-f", "running", "ƒ1", "ƒ2"]),
        ("jobs", ["--color", "-no", "{id}", "--json", "123"]),
        ("bulksubmit", ["--define=a=x", "echo", "{}", ":::", "1", "2"]),
        ("batch", ["-N1", "--wrap", "hostname"]),
        ("alloc", ["-n1", "-v", "--bg"]),
    ],
)
def test_the_common_lines_are_parsed_lean(name: str, argv: list[str]) -> None:
    """What users type most never loads argparse, and means what argparse says."""
    lean = _lean(PARSERS[name](), argv)
    assert lean is not None
    assert lean == _argparse(PARSERS[name](), argv)


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["-h"], ["-n"], ["--ntasks"], ["--urgency=1", "--nosuch"], ["--dry", "-Z"]],
)
def test_help_and_errors_are_argparses(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    parser = run._parser()
    assert _lean(parser, argv) is None
    with pytest.raises(SystemExit) as lean_exit:
        parser.parse_args(argv)
    lean_out = capsys.readouterr()
    with pytest.raises(SystemExit) as real_exit:
        parser.argparse().parse_args(argv)
    assert lean_exit.value.code == real_exit.value.code
    assert lean_out == capsys.readouterr()
    assert lean_out.out.startswith("usage: pflux run [OPTIONS...]") or "error:" in lean_out.err


def test_jobs_count_is_an_int_and_a_bad_one_is_argparses_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert jobs._parser().parse_args(["-c7"]).count == 7
    with pytest.raises(SystemExit):
        jobs._parser().parse_args(["-c", "seven"])
    assert "argument -c/--count: invalid int value: 'seven'" in capsys.readouterr().err
