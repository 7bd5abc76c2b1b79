"""``-o pty``: tasks on a pseudo-terminal, their output captured as the rank's stdout.

The jobs run through the real ``pflux run``; what reaches the output eventlog
is the terminal's output, carriage returns included, as flux-core captures it.
"""

from __future__ import annotations

import sys

import pytest

from support.instance import ok, pflux
from support.policy import UNDER_OTHER

SH = ("--env=PATH=/usr/bin:/bin", "sh", "-c")
WHICH_TTY = "test -t 0 && echo in; test -t 1 && echo out; test -t 2 && echo err >&2; echo done"


def test_a_task_on_a_pty_has_it_as_stdin_stdout_stderr_and_controlling_terminal(
    uri: str,
) -> None:
    proc = pflux(uri, "run", "-o", "pty", *SH, f"{WHICH_TTY}; ps -o tty= -p $$")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split("\r\n")
    assert lines[:4] == ["in", "out", "err", "done"]
    assert lines[4].startswith("pts/")  # the session's controlling terminal
    assert proc.stderr == ""  # the terminal has one stream: stdout


@UNDER_OTHER
def test_a_task_on_a_pty_runs_under_the_usual_policy_its_shell_does_not(uri: str) -> None:
    """The shell gives way to the broker (SCHED_BATCH); its task on a pty starts under
    SCHED_OTHER, as one on pipes does."""
    script = (
        "import os; print(os.sched_getscheduler(0) == os.SCHED_OTHER,"
        " os.sched_getscheduler(os.getppid()) == os.SCHED_BATCH)"
    )
    out = ok(uri, "run", "-o", "pty", sys.executable, "-c", script)
    assert out.split() == ["True", "True"]


def test_a_shell_reused_after_a_pty_job_gives_the_next_job_pipes(uri: str) -> None:
    for _ in range(3):
        assert "out\r\n" in ok(uri, "run", "-o", "pty", *SH, WHICH_TTY)
        assert ok(uri, "run", *SH, WHICH_TTY) == "done\n"


def test_pty_ranks_names_the_tasks_on_a_pty(uri: str) -> None:
    out = ok(uri, "run", "-n2", "-l", "-o", "pty.ranks=1", *SH, "test -t 1 && echo tty || echo no")
    assert sorted(out.split("\n")) == ["", "0: no", "1: tty\r"]


def test_input_is_typed_on_the_terminal_and_its_end_ends_the_reader(uri: str) -> None:
    # (read as text: the terminal's \r\n reads as \n) the terminal echoes what is typed
    for _ in range(3):  # a task ending just after its input is never hung up
        proc = pflux(uri, "run", "-o", "pty", "cat", stdin="hello\n")
        assert (proc.returncode, proc.stdout) == (0, "hello\nhello\n"), proc.stderr
    proc = pflux(uri, "run", "-o", "pty", "cat", stdin="no newline")
    assert (proc.returncode, proc.stdout) == (0, "no newlineno newline"), proc.stderr


def test_input_from_a_file_is_the_task_stdin_and_output_still_the_terminal(
    uri: str, tmp_path: pytest.TempPathFactory
) -> None:
    path = f"{tmp_path}/in.txt"
    with open(path, "w") as file:
        file.write("from file\n")
    out = ok(uri, "run", "-o", "pty", f"--input={path}", *SH, f"cat; {WHICH_TTY}")
    assert out == "from file\r\nout\r\nerr\r\ndone\r\n"


def test_a_pty_option_that_cannot_work_is_refused_at_submission(uri: str) -> None:
    proc = pflux(uri, "submit", "--dry-run", "-o", "pty.capture=0", "true")
    assert proc.returncode == 1
    assert "attributes.system.shell.options.pty: capture: must be true" in proc.stderr


def test_pty_ranks_that_are_no_idset_are_refused_at_submission_naming_them(uri: str) -> None:
    proc = pflux(uri, "run", "-o", "pty.ranks=x", "true")
    assert proc.returncode == 1
    assert 'attributes.system.shell.options.pty: ranks: idset "x": ' in proc.stderr
    assert "invalid job" not in proc.stderr  # no job was made to fail
