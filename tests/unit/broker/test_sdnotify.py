"""``pflux.broker.sdnotify``: what systemd's socket receives, taken out of the environment
so that no process the instance starts inherits it, and a socket that is gone or not
one systemd names only logged."""

from __future__ import annotations

import logging
import os
import socket
from pathlib import Path

import pytest

from pflux.broker.sdnotify import Notifier


def test_the_socket_is_taken_out_of_the_environment_and_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(tmp_path / "notify"))
        monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "notify"))
        notifier = Notifier.from_environ()
        assert "NOTIFY_SOCKET" not in os.environ
        notifier.send("READY=1", "STATUS=serving")
        assert sock.recv(4096) == b"READY=1\nSTATUS=serving"


def test_an_abstract_socket_is_named_with_an_at_sign(monkeypatch: pytest.MonkeyPatch) -> None:
    name = f"pflux-test-sdnotify-{id(monkeypatch)}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        monkeypatch.setenv("NOTIFY_SOCKET", "@" + name)
        Notifier.from_environ().send("STOPPING=1")
        assert sock.recv(4096) == b"STOPPING=1"


def test_a_value_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(tmp_path / "notify"))
        monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "notify"))
        Notifier.from_environ().send("STATUS=stopping: a\nREADY=1")
        assert sock.recv(4096) == b"STATUS=stopping: a READY=1"


def test_without_the_variable_nothing_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    notifier = Notifier.from_environ()
    assert notifier.address is None
    notifier.send("READY=1")  # nothing to send to, nothing raised


def test_a_socket_gone_or_of_another_kind_is_logged_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "pflux.broker")
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "gone"))
    Notifier.from_environ().send("READY=1")
    monkeypatch.setenv("NOTIFY_SOCKET", "vsock:2:1234")
    assert Notifier.from_environ().address is None
    assert [r.getMessage() for r in caplog.records] == [
        f"NOTIFY_SOCKET={tmp_path}/gone: No such file or directory",
        "NOTIFY_SOCKET=vsock:2:1234: not a socket path nor @name; systemd is not told",
    ]
