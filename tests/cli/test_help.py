"""``help [COMMAND]`` and a mistyped command: the list of commands, a command's help, and
flux's "not a command" message naming the likeliest commands (flux.c's rule)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pflux.cli import COMMANDS
from pflux.cli.similar import _distance, most_similar
from support.instance import console


def test_help_alone_lists_the_commands_as_help_does() -> None:
    proc = console("help")
    assert proc.returncode == 0
    assert proc.stdout == console("--help").stdout
    assert "  help       list the commands, or show one command's help\n" in proc.stdout


def test_help_command_shows_that_commands_help() -> None:
    for topic in ("submit", "flux-submit", "pflux-submit"):
        proc = console("help", topic)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == console("submit", "--help").stdout
    assert console("help", "job").stdout.startswith("usage: pflux job SUBCOMMAND")


def test_a_mistyped_command_names_the_likeliest() -> None:
    proc = console("subnit")
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == (
        "pflux: `subnit' is not a pflux command.  See 'pflux --help'\n"
        "pflux: The most similar command is\npflux: \tsubmit\n"
    )
    proc = console("help", "sub")
    assert proc.returncode == 1
    assert proc.stderr.endswith(
        "pflux: The most similar commands are\npflux: \tjob\npflux: \trun\npflux: \tsubmit\n"
    )
    proc = console("zzzzzzzz\033[2J")
    assert proc.stderr == "pflux: `zzzzzzzz\\x1b[2J' is not a pflux command.  See 'pflux --help'\n"


def test_likeness_follows_flux() -> None:
    assert most_similar("resourcccce", COMMANDS) == ["resource"]
    assert most_similar("resourccccce", COMMANDS) == []  # 4 edits away
    assert most_similar("shutd", COMMANDS) == ["shutdown"]  # a 5-letter start: distance 0
    assert most_similar("submit", COMMANDS) == []  # a command is not like itself


@given(a=st.text(max_size=8), b=st.text(max_size=8), c=st.text(max_size=8))
def test_edit_distance_is_a_metric(a: str, b: str, c: str) -> None:
    assert _distance(a, b) == _distance(b, a)
    assert (_distance(a, b) == 0) == (a == b)
    assert _distance(a, c) <= _distance(a, b) + _distance(b, c)
    assert abs(len(a) - len(b)) <= _distance(a, b) <= max(len(a), len(b))
