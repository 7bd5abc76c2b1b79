"""Test mode: simulated runs from jobspec attributes, as flux-core's testexec."""

from __future__ import annotations

import errno
import queue
import time
from typing import Any

import pytest

from pflux.errors import PfluxError, RPCError
from pflux.exec.testexec import SimulationConfig, simulation_config


def test_config_defaults_to_the_jobspec_duration(live: Any) -> None:
    assert simulation_config(live.mock_job(duration=7)) == SimulationConfig(7.0)
    assert simulation_config(
        live.mock_job(run_duration="10ms", wait_status=256)
    ) == SimulationConfig(0.01, 256)
    assert simulation_config({"attributes": {"system": {}}}) is None


def test_a_test_of_run_duration_alone_is_read_once(live: Any) -> None:
    """The usual test job's settings are shared, not rebuilt for each of thousands of jobs;
    any other key, or a value of the wrong kind, still takes the checked path."""
    first = simulation_config(live.mock_job(run_duration="1ms"))
    assert first == SimulationConfig(0.001)
    assert simulation_config(live.mock_job(run_duration="1ms")) is first
    assert simulation_config(live.mock_job(run_duration="1ms", wait_status=1)) == SimulationConfig(
        0.001, 1
    )
    with pytest.raises(PfluxError, match="run_duration must be a duration string"):
        simulation_config(live.mock_job(run_duration=["1ms"]))


@pytest.mark.parametrize(
    ("test", "message"),
    [
        ({"run_duration": 3}, "run_duration must be a duration string"),
        ({"run_duration": "3 parsecs"}, "run_duration: invalid Flux standard duration"),
        ({"wait_status": "1"}, "wait_status must be an integer"),
        ({"mock_exception": 1}, "mock_exception must be a string"),
        ({"override": True}, "override must be an integer"),
    ],
)
def test_bad_settings_name_the_key(live: Any, test: dict[str, object], message: str) -> None:
    with pytest.raises(PfluxError, match=message):
        simulation_config(live.mock_job(**test))


def test_a_run_takes_its_duration_and_reports_its_status(live: Any) -> None:
    began = time.monotonic()
    stream = live.start(live.mock_job(run_duration="0.2s", wait_status=512))
    assert stream.next() == ("start", {})
    assert stream.next() == ("finish", {"status": 512})
    assert time.monotonic() - began >= 0.2
    assert stream.next() == ("release", {"ranks": "all", "final": True})


def test_mock_init_exception_neither_starts_nor_finishes(live: Any) -> None:
    stream = live.start(live.mock_job(run_duration="1s", mock_exception="init"))
    assert stream.all() == [
        (
            "exception",
            {"severity": 0, "type": "exec", "note": "mock initialization exception generated"},
        ),
        ("release", {"ranks": "all", "final": True}),
    ]


def test_mock_run_exception_kills_the_job_with_sigterm(live: Any) -> None:
    stream = live.start(live.mock_job(run_duration="100s", mock_exception="run"))
    assert stream.all() == [
        ("start", {}),
        ("exception", {"severity": 0, "type": "exec", "note": "mock run exception generated"}),
        ("finish", {"status": 15}),
        ("release", {"ranks": "all", "final": True}),
    ]


def test_cancel_finishes_with_sigterm(live: Any) -> None:
    stream = live.start(live.mock_job(run_duration="100s"))
    assert stream.next() == ("start", {})
    live.send("job-exec.exception", {"id": stream.id, "type": "cancel", "severity": 0, "note": ""})
    assert stream.kinds() == ["finish", "release"]
    assert stream.status() == 15


def test_a_non_fatal_exception_changes_nothing(live: Any) -> None:
    stream = live.start(live.mock_job(run_duration="0.1s"))
    live.send("job-exec.exception", {"id": stream.id, "type": "x", "severity": 3, "note": ""})
    assert stream.kinds() == ["start", "finish", "release"]
    assert stream.status() == 0


def test_a_signal_ends_a_test_job_with_that_status(live: Any) -> None:
    stream = live.start(live.mock_job(run_duration="100s"))
    stream.next()
    assert live.call("job-exec.kill", {"id": stream.id, "signum": 10}) == {}
    assert stream.kinds() == ["finish", "release"]
    assert stream.status() == 10


def test_time_limit_raises_timelimit_and_finishes_with_sigalrm(live: Any) -> None:
    now = time.time()
    R = live.make_R(starttime=now, expiration=now + 0.2)  # noqa: N806
    stream = live.start(live.mock_job(run_duration="100s"), R)
    assert stream.all() == [
        ("start", {}),
        (
            "exception",
            {"severity": 0, "type": "timelimit", "note": "resource allocation expired"},
        ),
        ("finish", {"status": 14}),
        ("release", {"ranks": "all", "final": True}),
    ]


def test_no_duration_runs_until_killed(live: Any) -> None:
    stream = live.start(live.mock_job())
    assert stream.next() == ("start", {})
    with pytest.raises(queue.Empty):  # nothing more until it is killed
        stream.next(timeout=0.1)
    live.call("job-exec.kill", {"id": stream.id, "signum": 9})
    assert stream.kinds() == ["finish", "release"]


def test_override_waits_for_start_and_finish_requests(live: Any) -> None:
    stream = live.start(live.mock_job(override=1))
    with pytest.raises(RPCError, match="Job not running"):
        live.call("job-exec.override", {"jobid": stream.id, "event": "finish"})
    live.call("job-exec.override", {"jobid": stream.id, "event": "start"})
    assert stream.next() == ("start", {})
    with pytest.raises(RPCError, match="Job already running"):
        live.call("job-exec.override", {"jobid": stream.id, "event": "start"})
    with pytest.raises(RPCError, match="Invalid event"):
        live.call("job-exec.override", {"jobid": stream.id, "event": "bogus"})
    with pytest.raises(RPCError) as malformed:
        live.call("job-exec.override", {"jobid": stream.id, "event": "finish", "status": "9"})
    assert malformed.value.errnum == errno.EPROTO
    assert malformed.value.errstr == "job-exec.override: status: expected int, got str"
    live.call("job-exec.override", {"jobid": stream.id, "event": "finish", "status": 9})
    assert stream.kinds() == ["finish", "release"]
    assert stream.status() == 9


def test_override_is_refused_for_a_job_not_in_override_mode(live: Any) -> None:
    stream = live.start(live.mock_job(run_duration="100s"))
    stream.next()
    with pytest.raises(RPCError, match="not in exec override mode"):
        live.call("job-exec.override", {"jobid": stream.id, "event": "finish"})
    live.call("job-exec.kill", {"id": stream.id, "signum": 9})
    assert stream.kinds() == ["finish", "release"]


def test_bad_test_settings_fail_the_job(live: Any) -> None:
    stream = live.start(live.mock_job(wait_status="x"))
    [(kind, data), _release] = stream.all()
    assert (kind, data["type"]) == ("exception", "exec")
    assert "wait_status must be an integer" in data["note"]
