"""``pflux alloc``: a nested instance over the slots asked for, running a command
(whose exit status is alloc's) or, on a terminal, an interactive shell on the
job's pty, as ``flux alloc``."""

from __future__ import annotations

from support.instance import fails, pflux
from support.terminal import Terminal


def test_alloc_runs_a_command_in_a_nested_instance(uri: str) -> None:
    script = (
        "flux resource list -n -s free -o '{ncores}'; flux getattr instance-level;"
        " flux run --job-name=inner-alloc-job true; flux jobs -a -n -o '{name}'; exit 4"
    )
    proc = pflux(uri, "alloc", "-n2", "sh", "-c", script, script=True)
    assert proc.returncode == 4, proc.stderr
    assert proc.stdout.splitlines() == ["2", "1", "inner-alloc-job"]
    listed = pflux(uri, "jobs", "-a", "-n", "-o", "{name}").stdout
    assert "inner-alloc-job" not in listed


def test_alloc_without_a_command_needs_a_terminal(uri: str) -> None:
    proc = pflux(uri, "alloc", "-n1", script=True)
    assert proc.returncode == 1
    assert proc.stderr == "pflux-alloc: ERROR: stdin is not a tty - can't run interactive shell\n"


def test_alloc_refuses_output_options(uri: str) -> None:
    err = fails(uri, "alloc", "-n1", "--output=x", "true", rc=2)
    assert err == "pflux-alloc: ERROR: --output: not an alloc option (its I/O is this terminal's)\n"


def test_alloc_on_a_terminal_runs_a_shell_on_the_jobs_pty(uri: str) -> None:
    with Terminal(uri, "alloc", "-n1", SHELL="/bin/sh") as term:
        term.send(b"echo level=$(flux getattr instance-level) tty=$(tty)\n")
        term.expect(r"level=1 tty=/dev/pts/\d+")
        term.send(b"exit 6\n")
        assert term.wait() == 6
