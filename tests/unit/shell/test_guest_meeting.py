"""A guest's shell's side of its rendezvous with a restarted job-exec (``shell/rejoin.py``):
it takes RENDEZVOUS only with a directory of its socket peer's that no one else may write
in, meets only a listener of the instance's uid, and takes RESUME only once met."""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pflux.protocol import shellwire as wire
from pflux.shell.context import Context
from pflux.shell.job import WINDOW, Shell
from pflux.shell.rejoin import GAVE_UP, MEETING, MET

KEY = 9 << 24


@contextlib.contextmanager
def guest_shell() -> Iterator[tuple[Shell, socket.socket]]:
    """A guest's shell (no ``exec_dir``) and job-exec's end of its records socket."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    devnull = os.open(os.devnull, os.O_RDONLY)
    ctx = Context(
        journal=-1, boot=b"", devnull=devnull, cpus=(0,), cwd="/", path=None,
        records=theirs, spool="", exec_dir=-1,
    )  # fmt: skip
    launcher, control = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    yield Shell(KEY, ctx, control), ours
    for sock in (ours, theirs, launcher, control):
        sock.close()
    os.close(devnull)
    if ctx.guest_dir >= 0:
        os.close(ctx.guest_dir)


@pytest.fixture
def shell() -> Iterator[tuple[Shell, socket.socket]]:
    with guest_shell() as made:
        yield made


def directory(path: Path, mode: int) -> int:
    path.mkdir()
    path.chmod(mode)
    return os.open(path, os.O_PATH | os.O_DIRECTORY)


@pytest.mark.parametrize(
    ("mode", "payload", "taken"),
    [
        (0o711, b"300.0", True),
        (0o731, b"300.0", False),  # its group may write in it
        (0o713, b"300.0", False),  # anyone may
        (0o711, b"0", False),
        (0o711, b"inf", False),
        (0o711, b"soon", False),
    ],
)
def test_a_rendezvous_is_taken_only_in_a_directory_of_the_instances_alone(
    shell: tuple[Shell, socket.socket], tmp_path: Path, mode: int, payload: bytes, taken: bool
) -> None:
    guest, _ = shell
    fd = directory(tmp_path / "guests", mode)
    try:
        guest._rendezvous(payload, [fd])
    finally:
        os.close(fd)
    assert (guest.ctx.guest_dir >= 0) == taken
    if taken:
        assert guest.ctx.rejoin_timeout == 300.0
        assert guest.ctx.instance_uid == os.getuid()


def test_a_shell_meets_only_the_instances_uid_and_resumes_once(
    shell: tuple[Shell, socket.socket], tmp_path: Path
) -> None:
    guest, _ = shell
    _met_at(guest, tmp_path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(str(tmp_path / "guests" / str(KEY)))
    listener.listen(4)
    guest.detached = True
    guest.meeting = MEETING
    guest.ctx.instance_uid = os.getuid() + 1  # another account listens there
    assert not guest._meet()
    listener.accept()[0].close()
    guest.ctx.instance_uid = os.getuid()
    assert guest._meet()
    met, _ = listener.accept()
    guest.meeting = MET
    guest._emit(wire.OUTPUT, b"o\0\0\0\0kept\n")  # made while no job-exec was there
    guest._guest_resume(0)
    assert not guest.detached
    sent = met.recv(1 << 16)
    assert wire.split(sent)[0] == [(wire.OUTPUT, KEY, b"o\0\0\0\0kept\n")]
    guest._guest_resume(0)  # once resumed, a second RESUME is ignored: nothing sent twice
    met.setblocking(False)
    with pytest.raises(BlockingIOError):
        met.recv(1 << 16)
    met.close()
    listener.close()


def test_a_guests_shell_away_from_job_exec_holds_a_window_at_most(
    shell: tuple[Shell, socket.socket], tmp_path: Path
) -> None:
    """Its records wait in memory (it has no spool): past ``WINDOW`` unacknowledged it
    reads its tasks' output no more, so they wait to write."""
    guest, ours = shell
    _met_at(guest, tmp_path)
    guest._watch_links()
    ours.close()  # job-exec is gone
    guest._detach()
    assert guest.detached
    assert guest.meeting == MEETING
    chunk = b"o\0\0\0\0" + b"x" * 65536
    while guest.log.end < WINDOW:
        guest._emit(wire.OUTPUT, chunk)
        guest._pace()
    assert guest.paused
    assert guest.log.end < WINDOW + len(chunk) + wire.HEADER.size  # all in memory, bounded


def test_a_guests_shell_told_to_quit_does_not_wait_for_another_job_exec(
    shell: tuple[Shell, socket.socket], tmp_path: Path
) -> None:
    guest, ours = shell
    _met_at(guest, tmp_path)
    guest._watch_links()
    guest.quitting = True  # job-exec stops for good (QUIT)
    ours.close()
    guest._detach()
    assert guest.meeting == GAVE_UP
    assert not guest.retry_at


@given(
    st.one_of(
        st.binary(max_size=24),
        st.floats(allow_nan=True).map(lambda x: repr(x).encode()),
        st.integers().map(lambda x: b"%d" % x),
    )
)
def test_a_rendezvous_payload_is_a_positive_finite_number_of_seconds_or_ignored(
    payload: bytes,
) -> None:
    """Whatever RENDEZVOUS says, the shell takes a timeout only of 0 < seconds < inf."""
    try:
        seconds: float | None = float(payload)
    except ValueError:
        seconds = None
    with guest_shell() as (guest, _), tempfile.TemporaryDirectory() as place:
        os.chmod(place, 0o711)
        fd = os.open(place, os.O_PATH | os.O_DIRECTORY)
        try:
            guest._rendezvous(payload, [fd])
        finally:
            os.close(fd)
        taken = guest.ctx.guest_dir >= 0
        assert taken == (seconds is not None and 0 < seconds < float("inf"))
        if taken:
            assert guest.ctx.rejoin_timeout == seconds


def _met_at(guest: Shell, tmp_path: Path) -> None:
    """Give ``guest`` a rendezvous in ``tmp_path/guests`` with the usual timeout."""
    fd = directory(tmp_path / "guests", 0o711)
    guest._rendezvous(b"300", [fd])
    os.close(fd)
