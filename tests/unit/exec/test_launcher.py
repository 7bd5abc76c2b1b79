"""The launcher and shells: nothing of a job outlives its broker, its shell or the launcher."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from pflux.broker.message import Decoder
from pflux.client.uri import uri_for
from pflux.spec.builder import from_command
from pflux.spec.idset import IdSet
from pflux.spec.resource import ResourceSet


def children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(p) for p in f.read().split()]


def gone(pid: int) -> bool:
    """The process has ended (a zombie waiting for init to reap it counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read()
    except FileNotFoundError:
        return True
    return text[text.rfind(b")") + 2 :].startswith(b"Z")


def test_a_shell_kills_its_tasks_when_the_broker_connection_drops(tmp_path: Path) -> None:
    path = tmp_path / "sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen()
    R = ResourceSet.build({0: (IdSet.decode("0"), IdSet())}, "h").to_json()  # noqa: N806
    spec = {
        "id": 1 << 24,
        "userid": os.getuid(),
        "jobspec": from_command(["sleep", "100"], environment=dict(os.environ)),
        "R": R,
        "uri": uri_for(str(path)),
        "namespace": "job-16777216",
        "tmpdir": str(tmp_path),
    }
    (tmp_path / "spec.json").write_bytes(orjson.dumps(spec))
    shell = subprocess.Popen([sys.executable, "-m", "pflux.shell", str(tmp_path / "spec.json")])
    try:
        conn, _ = server.accept()
        decoder = Decoder()
        topics: list[str] = []
        while "job-exec.shell-attach" not in topics:  # sent once the tasks are spawned
            topics += [msg.topic for msg in decoder.feed(conn.recv(65536))]
        [task] = children(shell.pid)
        conn.close()
        assert shell.wait(timeout=10) == 1
        assert gone(task)
        assert not (tmp_path / "jobtmp-0-ƒ2jBFVV5J9").exists()
    finally:
        shell.kill()
        shell.wait()
        server.close()


def test_stopping_job_exec_ends_the_launcher_and_every_task(tmp_path: Path, live: Any) -> None:
    other = type(live)(tmp_path)
    try:
        stream = other.start(other.job(["sleep", "100"]))
        assert stream.next() == ("start", {})
        launcher = other.exec.launcher._proc
        assert os.getsid(launcher.pid) == launcher.pid  # its own session: outlives a broker's
        [shell] = children(launcher.pid)
        [task] = children(shell)
    finally:
        other.close()
    assert launcher.returncode == 0
    assert gone(shell)
    assert gone(task)
    assert os.listdir(tmp_path / "exec") == []


def test_a_dead_launcher_fails_its_jobs_and_is_replaced(live: Any) -> None:
    stream = live.start(live.job(["sleep", "100"]))
    assert stream.next() == ("start", {})
    launcher = live.exec.launcher._proc
    [shell] = children(launcher.pid)
    [task] = children(shell)
    launcher.kill()
    got = stream.all()
    assert got[0] == (
        "exception",
        {"severity": 0, "type": "exec", "note": "job shell launcher died"},
    )
    assert [kind for kind, _ in got[1:]] == ["finish", "release"]
    assert gone(shell)
    assert gone(task)
    again = live.start(live.job(["true"]))
    assert again.kinds() == ["start", "finish", "release"]
    assert live.exec.launcher._proc.pid != launcher.pid


def test_a_shell_that_does_not_answer_is_killed_with_its_tasks(live: Any) -> None:
    live.exec.kill_timeout = 0.1
    try:
        stream = live.start(live.job(["sleep", "100"]))
        assert stream.next() == ("start", {})
        [shell] = children(live.exec.launcher._proc.pid)
        [task] = children(shell)
        os.kill(shell, signal.SIGSTOP)
        live.send("job-exec.exception", {"id": stream.id, "type": "cancel", "severity": 0})
        assert stream.kinds() == ["finish", "release"]
        assert stream.status() == signal.SIGKILL
        assert gone(shell)
        assert gone(task)
    finally:
        live.exec.kill_timeout = 5.0


def test_the_launcher_refuses_bad_arguments() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pflux.exec.launcher"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 2
    assert "usage:" in result.stderr


@pytest.mark.parametrize("spec", [{}, {"id": "x"}])
def test_a_shell_given_a_bad_description_exits_1(spec: dict[str, Any]) -> None:
    from pflux.shell.main import run

    assert run(spec) == 1
