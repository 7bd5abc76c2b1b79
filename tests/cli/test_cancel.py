"""``pflux cancel`` end to end against one live instance, as flux-core's t2715 tests flux cancel.

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
from pflux.cli import main
from pflux.spec.fluid import JobID

PFLUX = Path(sys.executable).with_name("pflux")
UID = os.getuid()
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


def held(client: Client) -> JobID:
    """A job that stays pending (urgency 0) until it is canceled."""
    jobid = client.submit(jobspec(), urgency="hold")
    client.wait_event(jobid, "priority")
    return jobid


def quiesce(client: Client) -> None:
    """Cancel whatever earlier tests left active and wait until nothing is."""
    client.raise_all("cancel", note="test cleanup")
    client.drain()


def cancel_note(client: Client, jobid: JobID) -> str:
    """The note of the job's (first) cancel exception, once it is inactive."""
    event = client.wait_event(jobid, "exception", match={"type": "cancel", "severity": 0})
    assert event.context is not None
    client.wait(jobid)
    note: str = event.context["note"]
    return note


# ------------------------------------------------------------------ argument errors


def test_argument_errors(uri: str) -> None:
    assert fails(uri, "cancel", script=True) == (
        "pflux-cancel: ERROR: No target jobs were provided\n"
    )
    assert "'xyz' is not a valid job id" in fails(uri, "cancel", "xyz")
    assert fails(uri, "cancel", "--all", "ƒ2") == (
        "pflux-cancel: ERROR: Do not specify a list of jobids with --all,--user,--states options\n"
    )
    assert fails(uri, "cancel", "--states=FOO") == (
        "pflux-cancel: ERROR: Invalid state FOO specified\n"
    )
    assert fails(uri, "cancel", "--user=1badusername12345") == (
        "pflux-cancel: ERROR: Invalid user 1badusername12345 specified\n"
    )
    assert fails(uri, "cancel", "--meep", "ƒ2", rc=2).startswith("usage: pflux cancel")


def test_unknown_jobs_are_each_reported(uri: str) -> None:
    err = fails(uri, "cancel", "0", "f23")
    assert err.splitlines() == [
        "pflux-cancel: ERROR: job ƒ1 not found",
        "pflux-cancel: ERROR: job ƒ23 not found",
    ]


def test_no_instance(tmp_path: Path) -> None:
    err = fails(f"local://{tmp_path}/nothing", "cancel", "ƒ2")
    assert err.startswith("pflux-cancel: ERROR: cannot connect to the instance")


# ------------------------------------------------------------------ by job id


def test_cancel_jobid_with_message(uri: str, client: Client) -> None:
    plain, noted = held(client), held(client)
    assert ok(uri, "cancel", str(plain), script=True) == ""
    assert cancel_note(client, plain) == ""
    ok(uri, "cancel", "--message=meepmessage", noted.words)
    assert cancel_note(client, noted) == "meepmessage"


def test_cancel_many_with_one_error(uri: str, client: Client) -> None:
    inactive = held(client)
    client.cancel(inactive)
    client.wait(inactive)
    jobids = [held(client) for _ in range(3)]
    proc = pflux(uri, "cancel", "-m", "cancel multiple jobids", *map(str, jobids), str(inactive))
    assert proc.returncode == 1
    assert proc.stderr == f"pflux-cancel: ERROR: job {inactive} is inactive\n"
    assert [cancel_note(client, jobid) for jobid in jobids] == ["cancel multiple jobids"] * 3


def test_dry_run_with_jobids(uri: str) -> None:
    proc = pflux(uri, "cancel", "-n", "f1", "f2", "f3")
    assert (proc.returncode, proc.stderr) == (0, "pflux-cancel: Would cancel 3 jobs\n")
    assert pflux(uri, "cancel", "--dry-run", "f1").stderr == "pflux-cancel: Would cancel 1 job\n"


# ------------------------------------------------------------------ --all, --states, --user


def test_cancel_all(uri: str, client: Client) -> None:
    quiesce(client)
    jobids = [held(client) for _ in range(4)]
    proc = pflux(uri, "cancel", "--all", "--dry-run", script=True)
    assert (proc.returncode, proc.stderr) == (0, "pflux-cancel: Would cancel 4 jobs\n")
    proc = pflux(uri, "cancel", "--all", "--message=cancel all")
    assert (proc.returncode, proc.stderr) == (0, "pflux-cancel: Canceled 4 jobs (0 errors)\n")
    assert [cancel_note(client, jobid) for jobid in jobids] == ["cancel all"] * 4
    assert pflux(uri, "cancel", "--all").stderr == "pflux-cancel: Matched 0 jobs\n"
    assert pflux(uri, "cancel", "--all", "-q").stderr == ""


def test_cancel_by_state_and_user(uri: str, client: Client) -> None:
    import pwd

    quiesce(client)
    running = client.submit(jobspec("0"))  # runs until canceled
    client.wait_event(running, "start")
    pending = [held(client) for _ in range(2)]
    assert pflux(uri, "cancel", "--states=pending", "-n").stderr == (
        "pflux-cancel: Would cancel 2 jobs\n"
    )
    assert pflux(uri, "cancel", "-S", "run", "-n").stderr == "pflux-cancel: Would cancel 1 job\n"
    assert pflux(uri, "cancel", "-S", "depend,RUN").stderr == (
        "pflux-cancel: Canceled 1 job (0 errors)\n"
    )
    assert cancel_note(client, running) == ""
    name = pwd.getpwuid(UID).pw_name
    assert pflux(uri, "cancel", f"--user={name}", "-n").stderr == (
        "pflux-cancel: Would cancel 2 jobs\n"
    )
    assert pflux(uri, "cancel", "--user=all", "-S", "sched").stderr == (
        "pflux-cancel: Canceled 2 jobs (0 errors)\n"
    )
    assert [cancel_note(client, jobid) for jobid in pending] == ["", ""]
