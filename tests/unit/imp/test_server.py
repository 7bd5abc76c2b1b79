"""A guest's shell takes a further job only with the job's own records socket and only
if the job is its own user's; anything else is refused, naming why."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable

import pytest

from pflux.imp.server import Refused, _next_description
from pflux.protocol.shellwire import Description

DESCRIPTION = Description(
    argv=["true"], env={}, tasks=[(0, 0, None, None)], cwd=None, tmpdirs=(), host="",
    stdin=None, stdout=False, stderr=False, pmi=None, rlimit=[], exit_timeout=None,
    exit_on_error=False, task_env=None, tmpdir_env=[], ptys=(), nosetpgrp=False, files=[],
    tmpdir_argv=False,
)  # fmt: skip


def checked_as(uid: int) -> Callable[[bytes], tuple[int, Description, str]]:
    def checked(payload: bytes) -> tuple[int, Description, str]:
        assert payload == b"request"
        return uid, DESCRIPTION, ""

    return checked


def test_the_shells_own_users_job_comes_with_its_records_socket() -> None:
    old, old_peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    new, new_peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with old, old_peer, new, new_peer:
        passed = os.dup(new.fileno())
        got = _next_description(b"request", [passed], old.fileno(), checked_as(os.getuid()))
        assert got == DESCRIPTION
        old.send(b"to the new job's")  # the records socket is the job's own now
        assert new_peer.recv(64) == b"to the new job's"
        with pytest.raises(OSError, match="Bad file descriptor"):
            os.fstat(passed)  # closed once taken


def test_another_users_job_is_refused() -> None:
    records, peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    new, new_peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    other = os.getuid() + 1
    with records, peer, new, new_peer, pytest.raises(Refused) as info:
        _next_description(b"request", [os.dup(new.fileno())], records.fileno(), checked_as(other))
    assert str(info.value) == f"the job is uid {other}'s, not this shell's"


@pytest.mark.parametrize("kind", ["none", "two", "stream"])
def test_a_job_without_its_own_records_socket_is_refused(kind: str) -> None:
    records, peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    stream, stream_peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    fds = {
        "none": [],
        "two": [os.dup(records.fileno()), os.dup(peer.fileno())],
        "stream": [os.dup(stream.fileno())],
    }[kind]
    with records, peer, stream, stream_peer, pytest.raises(Refused) as info:
        _next_description(b"request", fds, records.fileno(), checked_as(os.getuid()))
    assert str(info.value) == "the job came without its records socket"
    for fd in fds:
        with pytest.raises(OSError, match="Bad file descriptor"):
            os.fstat(fd)
