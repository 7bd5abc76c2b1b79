"""``pflux queue`` end to end against one live instance, as flux-core's t2240 tests flux queue.

Commands run in this process through the ``pflux`` dispatcher, a few through
the real console script; the instance is the suite's module-scoped one (tests/conftest.py).
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from pflux.api import Client
from pflux.errors import RPCError
from support.instance import LiveInstance, fails, jobspec, ok

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


# ------------------------------------------------------------------ named queues, restart


def test_a_queue_that_is_not_configured_is_refused(uri: str) -> None:
    err = fails(uri, "submit", "-q", "batch", "true")
    assert err == "pflux-submit: ERROR: 'batch' is not a valid queue\n"
    err = fails(uri, "run", "--queue=debug", "true")
    assert err == "pflux-run: ERROR: 'debug' is not a valid queue\n"
    assert "'batch'" not in ok(uri, "jobs", "-a", "-n", "-o", "{queue}")


def test_the_queues_state_survives_a_restart(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with LiveInstance(state) as live:
        ok(live.uri, "queue", "disable", "-m", "maintenance until noon")
        ok(live.uri, "queue", "stop", "-m", "draining the nodes")
        assert live.stop() == 0
    expected = (
        "Job submission is disabled: maintenance until noon\n"
        "Scheduling is stopped: draining the nodes\n"
    )
    with LiveInstance(state) as live:
        assert ok(live.uri, "queue", "status") == expected
        ok(live.uri, "queue", "enable")
        live.kill()  # the change is stored when it is made, not at shutdown
    with LiveInstance(state) as live:
        assert ok(live.uri, "queue", "status") == (
            "Job submission is enabled\nScheduling is stopped: draining the nodes\n"
        )
        ok(live.uri, "queue", "start")
        with Client(live.uri) as client:
            assert client.wait(client.submit(jobspec())).success


def test_a_stop_not_stored_and_a_shutdown_leave_the_stored_state(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with LiveInstance(state) as live:
        ok(live.uri, "queue", "stop", "--nocheckpoint", "-m", "for now")
        assert ok(live.uri, "queue", "status") == (
            "Job submission is enabled\nScheduling is stopped: for now\n"
        )
        ok(live.uri, "queue", "disable", "-m", "closed")  # stored, with scheduling as stored
        assert live.stop() == 0  # the shutdown stops the queue too, unstored
    with LiveInstance(state) as live:
        assert ok(live.uri, "queue", "status") == (
            "Job submission is disabled: closed\nScheduling is started\n"
        )
        ok(live.uri, "queue", "enable")
        with Client(live.uri) as client:
            assert client.wait(client.submit(jobspec())).success
        assert live.stop() == 0


def test_nocheckpoint_must_be_a_boolean(uri: str) -> None:
    message = r"^job-manager\.queue-start: nocheckpoint: expected bool, got int$"
    with Client(uri) as client, pytest.raises(RPCError, match=message) as info:
        client.handle.call("job-manager.queue-start", {"start": False, "nocheckpoint": 1})
    assert info.value.errnum == errno.EPROTO
