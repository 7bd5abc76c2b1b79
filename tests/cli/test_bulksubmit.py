"""``pflux bulksubmit``'s inputs and templates, shown by ``--dry-run`` as flux-core's
t2713 expects them (the command runs in-process; no instance is needed)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from pflux.cli import bulkinputs, main
from pflux.errors import SpecError


def dry(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    *args: str,
    stdin: str = "",
) -> list[str]:
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    rc = main(["bulksubmit", "--dry-run", *args])
    out = capsys.readouterr()
    assert rc == 0, out.err
    return [line.removeprefix("bulksubmit: submit ") for line in out.out.splitlines()]


def refused(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["bulksubmit", *args]) == 1
    err = capsys.readouterr().err
    assert err.startswith("pflux-bulksubmit: ERROR: ")
    return err.removeprefix("pflux-bulksubmit: ERROR: ").rstrip("\n")


@pytest.mark.parametrize(
    ("args", "stdin", "expected"),
    [
        (["echo", "{}"], "1\n2\n3\n", ["echo 1", "echo 2", "echo 3"]),
        ([":::", "foo", "bar"], "", ["foo", "bar"]),  # the default command is {}
        (["echo", "{1}", "{0}", ":::", "1", "2", ":::", "3", "4"], "",
         ["echo 3 1", "echo 4 1", "echo 3 2", "echo 4 2"]),
        (["{0}:{1}", ":::", "0", "1", "2", "3", "4", "4", ":::+", "a", "b", "c"], "",
         ["0:a", "1:b", "2:c", "3:a", "4:b", "4:c"]),
        (["echo", "{}", "--job-name=foo", ":::", "a"], "", ["echo a --job-name=foo"]),
        (["echo", "{{tmpdir}}", ":::", "0"], "", ["echo {{tmpdir}}"]),
        (["--output=flux-{}.{{id}}.out", "hostname", ":::", "0", "1"], "",
         ["--output=flux-0.{{id}}.out hostname", "--output=flux-1.{{id}}.out hostname"]),
        (["-n", "{}", "-N", "{}", "-c", "{}", "-g", "{}", "hostname", ":::", "1", "2"], "",
         ["-n1 -N1 -c1 -g1 hostname", "-n2 -N2 -c2 -g2 hostname"]),
        (["--env=-*", "--env=SEQ={seq}", ":::", "a", "b"], "",
         ["--env=['-*', 'SEQ=0'] a", "--env=['-*', 'SEQ=1'] b"]),
        (["--define=p2=2**int(x)", "--job-name={}", "-n", "{.p2}", "hostname", ":::", "1", "3"],
         "", ["-n2 --job-name=1 hostname", "-n8 --job-name=3 hostname"]),
        (["--define=w=x.split('-')", "echo", "{.w}", ":::", "a-b"], "", ["echo a b"]),
        (["--cc=1-2", "echo", "{cc}={}", ":::", "1"], "", ["--cc=1-2 echo {cc}=1"]),
        (["echo", "[{cc}]", ":::", "1"], "", ["echo []"]),  # no --cc: {cc} is empty
        (["--sep=none", "{seq}", "{seq1}", "{}", "{.%}", "{./}", "{.//}", "{./%}"],
         "/a/b/c/d.txt /a/b/c/d c.txt\n",
         ["0 1 /a/b/c/d.txt /a/b/c/d d.txt /a/b/c d", "1 2 /a/b/c/d /a/b/c/d d /a/b/c d",
          "2 3 c.txt c c.txt  c"]),
        (["--sep=,", "echo", "{}"], "a,b,,c", ["echo a", "echo b", "echo c"]),
        (["--sep=\\t", "echo", "{}"], "a b\tc", ["echo a b", "echo c"]),
    ],
)  # fmt: skip
def test_templates_and_inputs_as_flux_t2713(
    args: list[str],
    stdin: str,
    expected: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert dry(capsys, monkeypatch, *args, stdin=stdin) == expected


def test_files_stdin_and_linked_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "lines").write_text("this is a line\nanother line\n")
    (tmp_path / "tags").write_text("x\ny\n")
    lines, tags = str(tmp_path / "lines"), str(tmp_path / "tags")
    assert dry(capsys, monkeypatch, "echo", "{}", "::::", lines) == [
        "echo this is a line",
        "echo another line",
    ]
    assert dry(capsys, monkeypatch, "{}{}", "::::", "-", ":::", "1", stdin="a\nb\n") == [
        "a1",
        "b1",
    ]
    assert dry(capsys, monkeypatch, "{}{}", ":::", "1", "2", "3", "::::+", tags) == [
        "1x",
        "2y",
        "3x",
    ]


def test_progress_and_shuffle(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = dry(capsys, monkeypatch, "--progress", "--cc=0-1", "echo", "{}", ":::", "a", "b")
    assert lines == [
        "bulksubmit: submitting a total of 4 jobs",
        "--cc=0-1 echo a",
        "--cc=0-1 echo b",
    ]
    inputs = [str(n) for n in range(40)]
    shuffled = dry(capsys, monkeypatch, "--shuffle", ":::", *inputs)
    assert sorted(shuffled, key=int) == inputs
    assert shuffled != inputs  # 1 chance in 40! of failing


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["{1}", ":::", "0"], "Invalid replacement string in command: '{1}'"),
        (["-n", "{1}", "{}", ":::", "0"], "Invalid replacement index in -n: '{1}'"),
        (["-n", "{f}", "true", ":::", "0"], "Replacement key 'f' not found in -n: '{f}'"),
        (["echo", "{.nope}", ":::", "0"],
         "Invalid replacement string in command: '{.nope}': Unknown input string method '.nope'"),
        (["--define=bad", "echo", ":::", "0"],
         "--define=bad: must be NAME=CODE, NAME an identifier"),
        (["--define=b=1+", "echo", ":::", "0"], "--define=b=1+: invalid syntax"),
        (["--define=b=1/0", "echo", "{.b}", ":::", "0"],
         "Invalid replacement string in command: '{.b}': --define=b on '0':"
         " ZeroDivisionError: division by zero"),
        (["--define=w=x.split()", "--job-name={.w}", "true", ":::", "a b"],
         "Invalid replacement string in --job-name=: '{.w}': a list fits only the command"),
        (["echo", ":::x", "0"],
         "unknown input separator ':::x' (expected :::, :::+, ::::, ::::+)"),
        (["echo", "::::", "a", "b"], ":::: takes one file name, got 2"),
        (["echo", "::::", "/nonexistent/x"], ":::: /nonexistent/x: No such file or directory"),
        (["echo", ":::", "a", ":::+"], ":::+: a linked input list must not be empty"),
        (["echo", ":::"], "no jobs provided for bulk submission"),
        (["--sep=", "echo", ":::", "a"], "--sep: must not be empty"),
        (["-n", "{}", "true", ":::", "x"], "--ntasks=x: must be an integer >= 1"),
    ],
)  # fmt: skip
def test_bad_templates_and_inputs(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert refused(capsys, *args) == message


def test_format_is_not_an_option_of_bulksubmit(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["bulksubmit", "--format=yaml", "echo", ":::", "a"])
    assert exc.value.code == 2
    assert "unrecognized arguments: --format=yaml" in capsys.readouterr().err


@given(
    lists=st.lists(st.lists(st.text(min_size=1), min_size=1, max_size=4), max_size=3),
    links=st.lists(st.lists(st.text(min_size=1), min_size=1, max_size=4), max_size=2),
)
def test_combine_is_the_product_with_links_cycled(
    lists: list[list[str]], links: list[list[str]]
) -> None:
    linked = [bulkinputs.Linked(len(lists) + n, items) for n, items in enumerate(links)]
    combos = bulkinputs.combine(lists, linked)
    count = 1
    for items in lists:
        count *= len(items)
    assert len(combos) == count
    for n, combo in enumerate(combos):
        assert len(combo) == len(lists) + len(links)
        assert all(combo[i] in items for i, items in enumerate(lists))
        for link in linked:
            assert combo[link.at] == link.items[n % len(link.items)]


@given(st.lists(st.sampled_from(["a", "b c", ":::", ":::+", ":a", "x:::"]), max_size=8))
def test_split_inputs_keeps_every_argument_once(argv: list[str]) -> None:
    """Every argument is the template, a separator or an input: none lost, none invented."""
    groups = " ".join(argv).split(":::+")[1:]
    assume(all(group.strip() and not group.lstrip().startswith(":::") for group in groups))
    template, lists, links = bulkinputs.split_inputs(argv, "\n", io.StringIO(""))
    separators = [arg for arg in argv if arg in bulkinputs.SEPARATORS]
    assert template == argv[: len(template)]
    assert len(lists) + len(links) == len(separators)
    inputs = sum(map(len, lists)) + sum(len(link.items) for link in links)
    assert len(template) + len(separators) + inputs == len(argv)


def test_split_inputs_refuses_an_empty_link_and_an_unknown_separator() -> None:
    with pytest.raises(SpecError, match="linked input list must not be empty"):
        bulkinputs.split_inputs(["a", ":::+", ":::", "b"], "\n", io.StringIO(""))
    with pytest.raises(SpecError, match="unknown input separator ':::-'"):
        bulkinputs.split_inputs(["a", ":::-"], "\n", io.StringIO(""))
