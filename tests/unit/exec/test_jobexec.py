"""job-exec's side of RFC 32: hello, the start stream's rules, reattach, configuration."""

from __future__ import annotations

import errno
import gc
import logging
import os
import subprocess
import time
import weakref
from pathlib import Path
from typing import Any

import msgspec
import pytest

from pflux.broker.router import Broker
from pflux.errors import PfluxError, RPCError
from pflux.exec import service
from pflux.exec.service import ExecService
from pflux.protocol import shelljournal as journal
from pflux.protocol.shellwire import REJOIN_TIMEOUT

EXEC_SENDS = {  # the requests job-exec of one broker sends
    "job-manager.exec-hello",
    "job-manager.running",
    "kvs.namespace-create",
    "kvs.commit",
    "kvs.namespace-remove",
    "kvs.get",
}


def test_hello_names_the_service(live: Any) -> None:
    assert live.manager.hellos == [{"service": "job-exec"}]


def test_job_exec_sends_its_requests_as_their_types(tmp_path: Path, live: Any) -> None:
    """What job-exec sends the KVS and the job manager is the type the receiver decodes,
    passed as it is within the process: a run, and a real and a test-mode reattach (each
    reads its job's keys)."""
    other = type(live)(tmp_path)
    try:
        assert other.start(other.job(["true"])).kinds() == ["start", "finish", "release"]
        assert other.start(other.job(["true"]), reattach=True).kinds() == ["exception", "release"]
        mock = other.mock_job(run_duration="1h", reattach_finish=1)
        assert other.start(mock, reattach=True).kinds() == ["finish", "release"]
        sent = [(topic, kind) for topic, kind in other.sent if topic in EXEC_SENDS]
    finally:
        other.close()
    assert {topic for topic, _ in sent} == EXEC_SENDS
    assert [(topic, kind) for topic, kind in sent if not issubclass(kind, msgspec.Struct)] == []


def test_a_refused_hello_is_logged_as_fatal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, live: Any
) -> None:
    caplog.set_level(logging.ERROR, "pflux.job-exec")
    other = type(live)(tmp_path, refuse_hello=True)
    try:
        other.call("kvs.namespace-list", {})  # a round trip: the hello has been answered
        assert other.manager.hellos == [{"service": "job-exec"}]
    finally:
        other.close()
    assert "job-manager.exec-hello failed: exec-hello: busy" in caplog.text


@pytest.mark.parametrize(
    ("payload", "errnum"),
    [
        ([], errno.EPROTO),
        ({"id": "12", "userid": 0, "jobspec": {}, "reattach": False, "R": {}}, errno.EPROTO),
        ({"id": 1 << 64, "userid": 0, "jobspec": {}, "reattach": False, "R": {}}, errno.EINVAL),
        ({"id": 12, "jobspec": {}, "reattach": False, "R": {}}, errno.EPROTO),
        ({"id": 12, "userid": 0, "jobspec": [], "reattach": False, "R": {}}, errno.EPROTO),
        ({"id": 12, "userid": 0, "jobspec": {}, "reattach": 0, "R": {}}, errno.EPROTO),
        ({"id": 12, "userid": 0, "jobspec": {}, "reattach": False}, errno.EPROTO),
    ],
)
def test_a_malformed_start_gets_an_error_response(live: Any, payload: Any, errnum: int) -> None:
    stream = live.start({}, payload=payload)
    with pytest.raises(RPCError) as info:
        stream.next()
    assert info.value.errnum == errnum


def test_a_second_start_for_a_running_job_is_an_error(live: Any) -> None:
    first = live.start(live.mock_job())
    assert first.next() == ("start", {})
    second = live.start(live.mock_job(), jobid=first.id)
    with pytest.raises(RPCError) as info:
        second.next()
    assert info.value.errnum == errno.EEXIST
    live.call("job-exec.kill", {"id": first.id, "signum": 9})
    assert first.kinds() == ["finish", "release"]


def test_a_bad_R_is_an_exception_not_an_error(live: Any) -> None:  # noqa: N802
    stream = live.start(live.mock_job(), {"version": 1, "execution": {"expiration": "soon"}})
    [(kind, data), (release, _)] = stream.all()
    assert (kind, data["type"], release) == ("exception", "exec", "release")
    assert data["note"] == "R: execution.expiration must be a number >= 0, not 'soon'"


def test_kill_and_override_name_the_job_they_cannot_find(live: Any) -> None:
    with pytest.raises(RPCError, match="not running") as info:
        live.call("job-exec.kill", {"id": 99, "signum": 9})
    assert info.value.errnum == errno.ENOENT
    with pytest.raises(RPCError) as info:
        live.call("job-exec.kill", {"signum": 9})
    assert (info.value.errnum, info.value.errstr) == (errno.EPROTO, "job-exec.kill: id: required")
    with pytest.raises(RPCError, match="not running"):
        live.call("job-exec.override", {"jobid": 99, "event": "start"})


def test_kill_checks_the_signal_number(live: Any) -> None:
    stream = live.start(live.mock_job())
    stream.next()
    for signum in (0, 65):
        with pytest.raises(RPCError, match="invalid signal number") as info:
            live.call("job-exec.kill", {"id": stream.id, "signum": signum})
        assert info.value.errnum == errno.EINVAL
    with pytest.raises(RPCError) as info:
        live.call("job-exec.kill", {"id": stream.id, "signum": "TERM"})
    assert info.value.errnum == errno.EPROTO
    assert info.value.errstr == "job-exec.kill: signum: expected int, got str"
    live.call("job-exec.kill", {"id": stream.id, "signum": 15})
    assert stream.kinds() == ["finish", "release"]


def test_an_exception_for_an_unknown_job_is_ignored(live: Any) -> None:
    assert live.call("job-exec.exception", {"id": 5, "type": "cancel", "severity": 0}) == {}
    with pytest.raises(RPCError) as info:
        live.call("job-exec.exception", "nonsense")
    assert info.value.errnum == errno.EPROTO
    assert info.value.errstr == "job-exec.exception: payload: expected object, got str"


def _record(path: Path, jobid: int, pid: int, delta: int = 0) -> None:
    """Journal ``pid`` as a job shell, as a shell does (``delta``: ticks off its start)."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        text = f.read()
    start = int(text[text.rfind(b")") + 2 :].split()[19]) + delta
    when = start * 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip().encode()
    path.parent.mkdir(exist_ok=True)
    with path.open("ab") as f:
        f.write(journal.start_line(jobid, pid, when, boot))


def test_journalled_sessions_are_killed_when_job_exec_starts(
    tmp_path: Path, live: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session the journal names that does not rejoin (no shell's), of a job that is not
    running, is killed once job-exec has waited for it."""
    monkeypatch.setattr(service, "ORPHANS_WAIT", 0.5)
    leftover = subprocess.Popen(["sh", "-c", "sleep 100 & sleep 100"], start_new_session=True)
    path = tmp_path / "exec" / "journal"
    _record(path, 77, leftover.pid)
    with path.open("ab") as f:
        f.write(b"garbage\nS 88 not numbers\nE 99\n")
    other = type(live)(tmp_path)
    try:
        assert leftover.wait(timeout=30) == -9
        deadline = time.monotonic() + 10
        while journal.live(str(path)) and time.monotonic() < deadline:
            time.sleep(0.01)  # its end is journalled just after the kill; no event says when
        assert journal.live(str(path)) == {}
    finally:
        other.close()


def test_a_stale_record_from_another_boot_kills_nothing(tmp_path: Path) -> None:
    bystander = subprocess.Popen(["sleep", "100"], start_new_session=True)
    try:
        path = tmp_path / "journal"
        path.write_bytes(journal.start_line(5, bystander.pid, 0, b"another-boot"))
        assert journal.kill_recorded(str(path)) == ([5], [])
        assert bystander.poll() is None
        assert not path.exists()
    finally:
        bystander.kill()
        bystander.wait()


def test_a_reused_session_id_kills_nothing(tmp_path: Path) -> None:
    bystander = subprocess.Popen(["sleep", "100"], start_new_session=True)
    try:
        path = tmp_path / "journal"
        _record(path, 6, bystander.pid, delta=-2)  # recorded before the process started
        assert journal.kill_recorded(str(path), [6]) == ([6], [])
        assert bystander.poll() is None
        assert journal.live(str(path)) == {}
    finally:
        bystander.kill()
        bystander.wait()


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"exec": {"kill-timeout": "soon"}}, "kill-timeout"),
        ({"exec": {"kill-timeout": 0}}, "kill-timeout: must be more than 0"),
        ({"exec": {"term-signal": "SIGNOPE"}}, "term-signal: not a signal"),
        ({"exec": {"rejoin-timeout": -1}}, "rejoin-timeout: must be 0 or more and finite"),
        ({"exec": {"rejoin-timeout": "later"}}, "rejoin-timeout"),
        ({"exec": []}, r"\[exec\]: must be a table, got \[\]"),
    ],
)
def test_bad_configuration_is_refused(config: dict[str, Any], message: str) -> None:
    with pytest.raises(PfluxError, match=message):
        ExecService(Broker(os.getuid(), config=config))


def test_configuration_takes_durations_and_signal_names() -> None:
    service = ExecService(
        Broker(os.getuid(), config={"exec": {"kill-timeout": "2m", "kill-signal": "USR1"}})
    )
    assert service.kill_timeout == 120.0
    assert service.launcher_env == {REJOIN_TIMEOUT: "300.0"}
    assert service.kill_signal == 10
    assert service.term_signal == 15


@pytest.mark.parametrize(
    ("value", "attrs", "passed"),
    [("1m", {}, "60.0"), (0, {}, "0.0"), ("1m", {"state-dir-temporary": "1"}, "0.0")],
)
def test_the_rejoin_timeout_reaches_the_launcher(
    value: object, attrs: dict[str, str], passed: str
) -> None:
    """0 where nothing could restart the instance: its shells do not wait for one."""
    broker = Broker(os.getuid(), config={"exec": {"rejoin-timeout": value}}, attrs=attrs)
    assert ExecService(broker).launcher_env == {REJOIN_TIMEOUT: passed}


def test_a_restart_clears_what_a_crash_left_in_the_jobs_directory(
    tmp_path: Path, live: Any
) -> None:
    first = type(live)(tmp_path)
    rundir = Path(first.exec.rundir)
    first.close()
    assert not rundir.exists()
    rundir.mkdir(0o700)
    (rundir / "jobtmp-0-ƒleft").mkdir()  # as a killed instance would leave it
    again = type(live)(tmp_path)
    try:
        assert Path(again.exec.rundir) == rundir
        assert list(rundir.iterdir()) == []
    finally:
        again.close()


def test_a_job_that_ends_is_freed_then_not_by_the_garbage_collector(live: Any) -> None:
    """No cycle between a job and its run: what a job held goes as it ends, unexamined."""
    stream = live.start(live.mock_job())
    assert stream.next() == ("start", {})

    async def refer() -> Any:
        gc.disable()  # until the check: only reference counting may free the job
        return weakref.ref(live.exec.jobs[stream.id])

    job = live.run(refer())
    try:
        live.call("job-exec.kill", {"id": stream.id, "signum": 9})
        assert stream.kinds() == ["finish", "release"]
        assert job() is None
    finally:
        gc.enable()
