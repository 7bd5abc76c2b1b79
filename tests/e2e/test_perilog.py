"""Prolog and epilog end to end: real commands run by a live instance, as flux-core's perilog.

One instance serves the module. Its prolog and epilog record their
environment and then run whatever the test left for the job in
``marks/<id>.prolog`` (``.epilog``), so each test gives its job its own
behaviour: a job is submitted held, its script written, then released. A
script that must be running before the test acts writes to a FIFO, which the
test reads: an event awaited, not a sleep.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pflux.api import Client
from pflux.spec.eventlog import Event
from pflux.spec.fluid import JobID
from support.instance import LiveInstance, read_fifo, start_with_config

TIMEOUT = "2s"  # the prolog's timeout here: long enough for the quick ones on a busy machine
KILL_TIMEOUT = 0.5
HOST = socket.gethostname()


def _action(kind: str, marks: Path) -> list[str]:
    script = f'f={marks}/"$FLUX_JOB_ID"; env > "$f.{kind}.env"; id -u >> "$f.{kind}.env"; '
    script += f'if [ -e "$f.{kind}" ]; then . "$f.{kind}"; fi'
    return ["sh", "-c", script]


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveInstance]:
    base = tmp_path_factory.mktemp("perilog")
    marks = base / "marks"
    marks.mkdir()
    config = base / "config.toml"
    config.write_text(
        "[job-manager.prolog]\n"
        f"command = {json.dumps(_action('prolog', marks))}\n"
        f'timeout = "{TIMEOUT}"\n'
        f"kill-timeout = {KILL_TIMEOUT}\n"
        "[job-manager.epilog]\n"
        f"command = {json.dumps(_action('epilog', marks))}\n"
    )
    # -v: the commands' stdout is logged at INFO, as flux-core logs it
    with LiveInstance(base / "state", "--config", str(config), "-v") as live:
        live.marks = marks  # type: ignore[attr-defined]
        yield live


@pytest.fixture
def marks(instance: LiveInstance) -> Path:
    path: Path = instance.marks  # type: ignore[attr-defined]
    return path


def real(*command: str) -> dict[str, Any]:
    from pflux.api import jobspec_of

    return jobspec_of(list(command), environment={"PATH": "/usr/bin:/bin"})


def run_with(
    client: Client, marks: Path, *, prolog: str = "", epilog: str = "", command: str = "true"
) -> JobID:
    """A job whose prolog and epilog run the given shell text (after recording their env)."""
    jobid = client.submit(real("sh", "-c", command), urgency="hold")
    if prolog:
        (marks / f"{jobid}.prolog").write_text(prolog)
    if epilog:
        (marks / f"{jobid}.epilog").write_text(epilog)
    client.urgency(jobid, "default")
    return jobid


def log_of(client: Client, jobid: int) -> list[Event]:
    client.wait(jobid)
    return list(client.events(jobid, follow=False))


def named(log: list[Event], name: str) -> list[Event]:
    return [e for e in log if e.name == name]


def fifo(marks: Path, jobid: int) -> Path:
    path = marks / f"{jobid}.ready"
    os.mkfifo(path)
    return path


def canceled_in_prolog(client: Client, marks: Path, prolog: str) -> tuple[int, list[Event]]:
    """Run a job whose prolog is ``prolog`` (``{ready}``: a FIFO it says "up" on), cancel
    it once the prolog is up, and return its id and whole eventlog."""
    jobid = client.submit(real("true"), urgency="hold")
    ready = fifo(marks, jobid)
    (marks / f"{jobid}.prolog").write_text(prolog.format(ready=ready))
    client.urgency(jobid, "default")
    assert read_fifo(ready) == "up"
    client.cancel(jobid)
    return jobid, log_of(client, jobid)


def test_events_bracket_both_and_the_epilog_runs_before_the_free(
    client: Client, marks: Path
) -> None:
    jobid = run_with(client, marks)
    log = log_of(client, jobid)
    order = [e.name for e in log]
    assert order.index("prolog-start") < order.index("prolog-finish") < order.index("start")
    assert order.index("finish") < order.index("epilog-start") < order.index("epilog-finish")
    assert order.index("epilog-finish") < order.index("free")
    assert named(log, "prolog-start")[0].context == {"description": "job-manager.prolog"}
    assert named(log, "prolog-finish")[0].context == {
        "description": "job-manager.prolog",
        "status": 0,
    }
    assert named(log, "epilog-finish")[0].context == {
        "description": "job-manager.epilog",
        "status": 0,
    }
    assert not named(log, "exception")
    assert client.wait(jobid).success


def test_both_run_as_the_instance_owner_with_the_job_in_their_environment(
    client: Client, marks: Path
) -> None:
    jobid = run_with(client, marks)
    client.wait(jobid)
    for kind in ("prolog", "epilog"):
        lines = (marks / f"{jobid}.{kind}.env").read_text().splitlines()
        env = dict(line.split("=", 1) for line in lines if "=" in line)
        assert env["FLUX_JOB_ID"] == str(jobid)
        assert env["FLUX_JOB_USERID"] == str(os.getuid())
        assert env["FLUX_JOB_RANKS"] == "0"
        assert lines[-1] == str(os.getuid())  # id -u


def test_a_failing_prolog_raises_an_exception_and_the_job_never_starts(
    client: Client, marks: Path
) -> None:
    jobid = run_with(client, marks, prolog="exit 3")
    log = log_of(client, jobid)
    order = [e.name for e in log]
    assert "start" not in order
    assert "finish" not in order
    [exception] = named(log, "exception")
    assert exception.context == {
        "type": "prolog",
        "severity": 0,
        "note": f"prolog exited with code=3 on {HOST} (rank 0)",
    }
    # raised before prolog-finish, as flux-core does; the epilog still runs (a prolog ran)
    assert order.index("exception") < order.index("prolog-finish") < order.index("epilog-start")
    assert named(log, "prolog-finish")[0].context == {
        "description": "job-manager.prolog",
        "status": 3 << 8,  # a wait status
    }
    result = client.wait(jobid)
    assert not result.success
    assert (
        result.errstr == f"Fatal exception type=prolog prolog exited with code=3 on {HOST} (rank 0)"
    )


def test_a_prolog_killed_by_a_signal_says_so(client: Client, marks: Path) -> None:
    jobid = run_with(client, marks, prolog="kill $$")
    [exception] = named(log_of(client, jobid), "exception")
    assert (exception.context or {})["note"] == f"prolog killed by signal 15 on {HOST} (rank 0)"


def test_a_prolog_past_its_timeout_is_terminated(client: Client, marks: Path) -> None:
    jobid = run_with(client, marks, prolog="exec sleep 60")
    log = log_of(client, jobid)
    [exception] = named(log, "exception")
    assert exception.context == {
        "type": "prolog",
        "severity": 0,
        "note": f"prolog timed out on {HOST} (rank 0)",
    }
    start, finish = named(log, "prolog-start")[0], named(log, "prolog-finish")[0]
    assert (finish.context or {})["status"] == 15  # SIGTERM ended it
    assert 2.0 <= finish.timestamp - start.timestamp < 10
    assert "start" not in [e.name for e in log]


def test_a_cancel_during_the_prolog_terminates_it_and_the_epilog_still_runs(
    client: Client, marks: Path
) -> None:
    jobid, log = canceled_in_prolog(client, marks, "echo up > {ready}; exec sleep 60")
    order = [e.name for e in log]
    # canceled, not failed: the only exception is the cancel, as in flux-core
    assert [(e.context or {})["type"] for e in named(log, "exception")] == ["cancel"]
    assert (named(log, "prolog-finish")[0].context or {})["status"] == 15
    assert "start" not in order
    assert order.index("prolog-finish") < order.index("epilog-start") < order.index("free")
    assert client.wait(jobid).errstr.startswith("Fatal exception type=cancel")


def test_a_prolog_that_ignores_sigterm_is_killed_after_the_kill_timeout(
    client: Client, marks: Path
) -> None:
    _, log = canceled_in_prolog(client, marks, "trap '' TERM; echo up > {ready}; sleep 60")
    cancel, prolog = named(log, "exception")
    assert (cancel.context or {})["type"] == "cancel"
    assert prolog.context == {
        "type": "prolog",
        "severity": 0,
        "note": f"prolog canceled then timed out on {HOST} (rank 0)",
    }
    finish = named(log, "prolog-finish")[0]
    assert (finish.context or {})["status"] == 9  # SIGKILL
    assert KILL_TIMEOUT <= finish.timestamp - cancel.timestamp < 5


def test_a_failing_epilog_is_a_non_fatal_exception(client: Client, marks: Path) -> None:
    jobid = run_with(client, marks, epilog="echo oops >&2; exit 2")
    log = log_of(client, jobid)
    [exception] = named(log, "exception")
    assert exception.context == {
        "type": "epilog",
        "severity": 2,
        "note": f"epilog exited with code=2 on {HOST} (rank 0)",
    }
    order = [e.name for e in log]
    assert order.index("exception") < order.index("epilog-finish") < order.index("free")
    assert client.wait(jobid).success  # the job's result is its tasks'


def test_what_they_print_goes_to_the_instance_log(
    instance: LiveInstance, client: Client, marks: Path
) -> None:
    jobid = run_with(client, marks, prolog="echo prolog-said-hello", epilog="echo bye >&2")
    client.wait(jobid)
    text = instance.log.read_text()
    assert f"{jobid}: prolog: {HOST} (rank 0): stdout: prolog-said-hello" in text
    assert f"{jobid}: epilog: {HOST} (rank 0): stderr: bye" in text


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        (
            '[job-manager.prolog]\ncommand = "foo"\n',
            "[job-manager.prolog] command: must be an array",
        ),
        (
            "[job-manager.prolog]\ncommand = [1, 2]\n",
            "[job-manager.prolog] command: malformed prolog command",
        ),
        ("[job-manager.epilog]\ntimeout = 5\n", "[job-manager.epilog]: no command specified"),
        (
            '[job-manager.prolog]\ncommand = ["true"]\ntimeout = "5x"\n',
            "[job-manager.prolog] timeout: invalid prolog timeout",
        ),
        (
            '[job-manager.epilog]\ncommand = ["true"]\nfoo = 1\n',
            "[job-manager.epilog] foo: unknown key (known: cancel-on-exception, command,",
        ),
        (
            '[job-manager.perilog]\nlog-ignore = ["["]\n',
            "[job-manager.perilog] log-ignore: Failed to compile regex",
        ),
    ],
)
def test_bad_configuration_is_refused_naming_the_key(
    tmp_path: Path, toml: str, message: str
) -> None:
    proc = start_with_config(tmp_path, toml)
    config = tmp_path / "instance.toml"
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"pflux-start: ERROR: {config}: {message}"), proc.stderr
