"""``pflux cancel`` end to end against one live instance, as flux-core's t2715 tests flux cancel.

Commands run in this process through the ``pflux`` dispatcher, a few through
the real console script; the instance is the suite's module-scoped one (tests/conftest.py).
"""

from __future__ import annotations

import os
from pathlib import Path

from pflux.api import Client
from pflux.spec.fluid import JobID
from support.instance import fails, held, jobspec, ok, pflux, quiesce

UID = os.getuid()


# ------------------------------------------------------------------ helpers


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
