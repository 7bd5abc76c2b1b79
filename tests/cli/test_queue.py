"""``pflux queue`` end to end against one live instance, as flux-core's t2240 tests flux queue.

Commands run in this process through the ``pflux`` dispatcher, a few through
the real console script; the instance is shared by the module (see
test_job_commands.py for the fixture, duplicated here until it moves to a conftest).
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from pflux.api import Client
from pflux.broker.message import RPCError
from pflux.cli import main

PFLUX = Path(sys.executable).with_name("pflux")
# the initial program: says the instance is ready, then keeps it up until stdin closes
WAIT_ON_STDIN = ("sh", "-c", 'echo "$PFLUX_URI"; exec cat >/dev/null')


# ------------------------------------------------------------------ the instance


@pytest.fixture(scope="module")
def uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A live instance for the module: its URI (the lead may move this to a conftest)."""
    state = tmp_path_factory.mktemp("instance")
    with (state / "log").open("w") as log:
        proc = subprocess.Popen(
            [str(PFLUX), "start", "--state-dir", str(state / "s"), "--cores", "4", *WAIT_ON_STDIN],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
    assert proc.stdin is not None
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    try:
        assert line.startswith("local://"), (state / "log").read_text()
        yield line
    finally:
        proc.stdin.close()
        proc.stdout.close()
        proc.wait(timeout=30)


@pytest.fixture
def client(uri: str) -> Iterator[Client]:
    with Client(uri) as c:
        yield c


def pflux(
    uri: str, *args: str, stdin: str | None = None, script: bool = False
) -> subprocess.CompletedProcess[str]:
    """``pflux ARGS`` in this process (fast), or with ``stdin``/``script`` the console script."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("F58_FORCE_ASCII")}
    env.update(PFLUX_URI=uri, PYTHONIOENCODING="utf-8")
    if stdin is not None or script:
        return subprocess.run(
            [str(PFLUX), *args],
            input=stdin,
            capture_output=True,
            text=True,
            encoding="utf-8",
            env=env,
            timeout=60,
            check=False,
        )
    # UTF-8 streams, as the console script has, so that ids print with ƒ
    out = io.TextIOWrapper(io.BytesIO(), "utf-8", write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), "utf-8", write_through=True)
    with (
        mock.patch.dict(os.environ, env, clear=True),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            rc = main(list(args))
        except SystemExit as exc:  # argparse's usage errors
            rc = exc.code if isinstance(exc.code, int) else 2
    texts = [stream.buffer.getvalue().decode() for stream in (out, err)]
    return subprocess.CompletedProcess(args, rc, *texts)


def ok(uri: str, *args: str, stdin: str | None = None, script: bool = False) -> str:
    proc = pflux(uri, *args, stdin=stdin, script=script)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def fails(uri: str, *args: str, rc: int = 1, script: bool = False) -> str:
    """The one-line error of a command that must fail with ``rc``."""
    proc = pflux(uri, *args, script=script)
    assert proc.returncode == rc, (proc.stdout, proc.stderr)
    return proc.stderr


def jobspec(run_duration: str = "0.01s", **test: Any) -> dict[str, Any]:
    """A test-mode jobspec: no process, it 'runs' for ``run_duration`` (0: until killed)."""
    return {
        "version": 1,
        "resources": [
            {"type": "slot", "count": 1, "label": "task", "with": [{"type": "core", "count": 1}]}
        ],
        "tasks": [{"command": ["true"], "slot": "task", "count": {"per_slot": 1}}],
        "attributes": {
            "system": {"duration": 0, "exec": {"test": {"run_duration": run_duration, **test}}}
        },
    }


# ------------------------------------------------------------------ usage


def test_usage_errors(uri: str) -> None:
    assert "usage: pflux queue" in fails(uri, "queue", rc=2)
    assert "invalid choice: 'wrongsubcmd'" in fails(uri, "queue", "wrongsubcmd", rc=2)
    assert "unrecognized arguments: xyz" in fails(uri, "queue", "drain", "xyz", rc=2)
    assert "unrecognized arguments: xyz" in fails(uri, "queue", "idle", "xyz", rc=2)


def test_no_instance(tmp_path: Path) -> None:
    for command in ("status", "enable", "disable", "start", "stop", "drain", "idle"):
        err = fails(f"local://{tmp_path}/nothing", "queue", command)
        assert err.startswith("pflux-queue: ERROR: cannot connect to the instance")


# ------------------------------------------------------------------ enable, disable


def test_status_of_a_fresh_instance(uri: str) -> None:
    out = ok(uri, "queue", "status", script=True)
    assert out == "Job submission is enabled\nScheduling is started\n"


def test_disable_and_enable(uri: str, client: Client) -> None:
    out = ok(uri, "queue", "disable", "--message=system is fubar")
    assert out == "Job submission is disabled: system is fubar\n"
    assert ok(uri, "queue", "status").splitlines()[0] == out.strip()
    try:
        with pytest.raises(RPCError, match="job submission is disabled: system is fubar"):
            client.submit(jobspec())
    finally:
        assert ok(uri, "queue", "enable") == "Job submission is enabled\n"
    assert ok(uri, "queue", "disable", "--quiet") == ""
    assert ok(uri, "queue", "status").startswith(
        "Job submission is disabled: disabled by administrator\n"
    )
    assert ok(uri, "queue", "enable", "--all", "--quiet") == ""
    assert client.wait(client.submit(jobspec())).success


# ------------------------------------------------------------------ start, stop, idle, drain


def test_stop_and_start(uri: str, client: Client) -> None:
    out = ok(uri, "queue", "stop", "--message=my unique message")
    assert out == "Scheduling is stopped: my unique message\n"
    assert ok(uri, "queue", "status") == (
        "Job submission is enabled\nScheduling is stopped: my unique message\n"
    )
    assert ok(uri, "queue", "stop") == "Scheduling is stopped\n"
    jobid = client.submit(jobspec())
    client.wait_event(jobid, "priority")  # pending, and it stays so
    assert ok(uri, "queue", "idle", script=True) == "1 jobs\n"
    assert ok(uri, "queue", "idle", "--quiet") == "1 jobs\n"
    assert ok(uri, "queue", "start") == "Scheduling is started\n"
    assert ok(uri, "queue", "drain") == ""
    assert client.wait(jobid).success
    assert ok(uri, "queue", "idle", "--quiet") == ""
    assert ok(uri, "queue", "idle") == "0 jobs\n"


def test_drain_and_idle_timeouts(uri: str, client: Client) -> None:
    jobid = client.submit(jobspec("0"))  # runs until canceled
    client.wait_event(jobid, "start")
    try:
        assert fails(uri, "queue", "drain", "--timeout=0.1s") == (
            "pflux-queue: ERROR: drain: timeout\n"
        )
        assert fails(uri, "queue", "idle", "-t", "0.1") == "pflux-queue: ERROR: idle: timeout\n"
    finally:
        client.cancel(jobid)
    assert ok(uri, "queue", "drain", "-t", "1m") == ""


def test_verbose_status_shows_the_alloc_queue(uri: str) -> None:
    lines = ok(uri, "queue", "status", "-v").splitlines()
    assert lines[2:] == [
        "0 alloc requests queued",
        "0 alloc requests pending to scheduler",
        "0 running jobs",
    ]
