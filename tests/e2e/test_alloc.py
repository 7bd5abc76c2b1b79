"""``pflux alloc``: a nested instance over the slots asked for, running a command
(whose exit status is alloc's) or, on a terminal, an interactive shell on the
job's pty, as ``flux alloc``."""

from __future__ import annotations

from support.instance import console, fails, pflux
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


def test_alloc_bg_prints_the_job_id_once_the_instance_answers_and_shutdown_stops_it(
    uri: str,
) -> None:
    proc = pflux(uri, "alloc", "--bg", "-v", "-n1", script=True)
    assert proc.returncode == 0, proc.stderr
    jobid = proc.stdout.strip()
    said = [line.split(": ", 2)[2] for line in proc.stderr.splitlines()]
    assert said == ["waiting for resources", "resources allocated", "waiting for instance", "ready"]
    nested = pflux(uri, "uri", jobid, script=True).stdout.strip()
    inside = console("run", "echo", "inside", PFLUX_URI=nested)
    assert inside.stdout == "inside\n", inside.stderr
    listed = pflux(uri, "jobs", "-n", "-o", "{id.f58} {state}", script=True).stdout
    assert f"{jobid} R" in listed  # running, with no initial program, until stopped
    stopped = pflux(uri, "shutdown", "--quiet", jobid, script=True)
    assert stopped.returncode == 0, stopped.stderr
    pflux(uri, "job", "wait-event", "-t", "60", jobid, "clean", script=True)
    assert pflux(uri, "job", "status", jobid, script=True).returncode == 0


def test_alloc_bg_of_an_instance_that_ends_first_says_so(uri: str) -> None:
    proc = pflux(uri, "alloc", "--bg", "-n1", "--conf=nosuch.key=1", script=True)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.endswith(": unexpectedly exited\n"), proc.stderr
    assert "nosuch" in proc.stderr  # what the instance said when it refused the config


def test_shutdown_takes_a_target_or_uri_not_both(uri: str) -> None:
    err = fails(uri, "shutdown", "--uri", uri, "f1", rc=2)
    assert (
        err
        == "pflux-shutdown: ERROR: --uri and TARGET: choose one (TARGET is found from $PFLUX_URI)\n"
    )
