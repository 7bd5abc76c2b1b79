"""job-exec's end of a guest's shell's records socket takes its job's records and nothing
else: a datagram with any record of another job, or of a kind a shell does not send,
ends the shell and its job, and none of that datagram is taken."""

from __future__ import annotations

import os
import socket
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pflux.exec.guestrecords import FORGED, FROM_SHELLS, TO_SHELLS, UNHEARD, GuestRecords
from pflux.protocol import shellwire as wire

KEY = 7 << 24
BUFFER = 1 << 16


def pair() -> tuple[GuestRecords, socket.socket]:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    guest = GuestRecords.adopt(KEY, ours.detach())
    assert guest is not None
    return guest, theirs


def read(guest: GuestRecords) -> list[wire.Record]:
    return guest.read(memoryview(bytearray(BUFFER)))


def test_its_jobs_records_are_taken_and_its_end_after_exited_adds_nothing() -> None:
    guest, shell = pair()
    shell.send(wire.record(wire.STARTED, KEY, b"1.0 h 0:1") + wire.record(wire.OUTPUT, KEY, b"x"))
    shell.send(wire.record(wire.EXITED, KEY, b"0"))
    shell.close()
    assert [kind for kind, _, _ in read(guest)] == [wire.STARTED, wire.OUTPUT, wire.EXITED]
    assert guest.ended
    assert not guest.forged
    assert guest.note == b""
    guest.close()


def test_a_socket_that_ends_before_exited_is_the_jobs_end_unheard() -> None:
    guest, shell = pair()
    shell.send(wire.record(wire.STARTED, KEY, b"1.0 h 0:1"))
    shell.close()
    assert len(read(guest)) == 1
    assert guest.note == UNHEARD
    guest.close()


def test_what_a_shell_sent_before_it_ended_with_ours_unread_is_still_taken() -> None:
    """A kept shell that refuses its next job says why and ends without reading what
    job-exec sent it: its end then resets the connection, which reads as an error once,
    before what it sent."""
    guest, shell = pair()
    assert guest.send(wire.record(wire.ACK, KEY))
    shell.send(wire.record(wire.EXCEPTION, KEY, b"pflux-imp: J does not verify"))
    shell.close()
    assert read(guest) == [(wire.EXCEPTION, KEY, b"pflux-imp: J does not verify")]
    assert guest.ended
    assert guest.note == UNHEARD
    guest.close()


def test_a_record_of_another_job_ends_it_and_nothing_of_its_datagram_is_taken() -> None:
    guest, shell = pair()
    shell.send(wire.record(wire.OUTPUT, KEY, b"mine"))
    shell.send(wire.record(wire.OUTPUT, KEY, b"also") + wire.record(wire.EXITED, KEY + 1, b"0"))
    shell.send(wire.record(wire.OUTPUT, KEY, b"after"))
    assert read(guest) == [(wire.OUTPUT, KEY, b"mine")]
    assert guest.forged
    assert guest.ended
    assert guest.note == FORGED
    shell.close()
    guest.close()


def test_an_exited_in_a_refused_datagram_is_not_the_shells_word() -> None:
    guest, shell = pair()
    shell.send(wire.record(wire.EXITED, KEY, b"0") + wire.record(wire.OUTPUT, KEY + 1, b"x"))
    assert read(guest) == []
    assert not guest.exited
    assert guest.note == FORGED
    shell.close()
    guest.close()


def test_a_socket_that_is_not_seqpacket_is_refused() -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    assert GuestRecords.adopt(KEY, ours.detach()) is None
    theirs.close()


@given(
    st.lists(
        st.tuples(
            st.sampled_from(sorted(FROM_SHELLS | {wire.ACK, wire.SPAWN, wire.LIVE, b"\0"})),
            st.sampled_from([KEY, KEY + 1, KEY | 1 << wire.RANK_SHIFT]),
            st.binary(max_size=16),
        ),
        min_size=1,
        max_size=6,
    ),
    st.binary(max_size=8),
)
def test_a_datagram_is_taken_whole_if_all_its_jobs_else_not_at_all(
    records: list[wire.Record], tail: bytes
) -> None:
    guest, shell = pair()
    data = b"".join(wire.record(*record) for record in records) + tail
    shell.send(data)
    got = read(guest)
    mine = all(key == KEY and kind in FROM_SHELLS for kind, key, _ in records)
    if mine and not tail:
        assert got == records
        assert not guest.forged
        assert guest.exited == any(kind == wire.EXITED for kind, _, _ in records)
    else:
        assert got == []
        assert guest.forged
        assert guest.note == FORGED  # an EXITED in a refused datagram is not the shell's word
    shell.close()
    guest.close()


def test_rendezvous_tells_the_shell_the_timeout_and_passes_the_directory() -> None:
    """RENDEZVOUS: the record of the socket's job, the timeout as its payload, and the
    directory's descriptor with it."""
    guest, shell = pair()
    directory = os.open("/", os.O_PATH | os.O_DIRECTORY)
    try:
        guest.rendezvous(directory, 300.0)
        data, ancillary, _, _ = shell.recvmsg(BUFFER, socket.CMSG_SPACE(4))
        assert wire.split(data)[0] == [(wire.RENDEZVOUS, KEY, b"300.0")]
        [(level, kind, passed)] = ancillary
        assert (level, kind) == (socket.SOL_SOCKET, socket.SCM_RIGHTS)
        fd = int.from_bytes(passed[:4], sys.byteorder)
        assert os.path.samestat(os.fstat(fd), os.fstat(directory))
        os.close(fd)
    finally:
        os.close(directory)
        guest.close()
        shell.close()


def test_resume_goes_to_a_guests_shell_on_its_own_socket() -> None:
    """A shell met after a crash is resumed on its socket: RESUME is job-exec's to send it."""
    assert wire.RESUME in TO_SHELLS
    assert wire.RENDEZVOUS not in FROM_SHELLS  # a shell cannot send it job-exec


def test_a_descriptor_that_is_no_socket_is_refused_and_closed() -> None:
    read_end, write_end = os.pipe()
    assert GuestRecords.adopt(KEY, read_end) is None
    with pytest.raises(OSError, match="Bad file descriptor"):
        os.fstat(read_end)
    os.close(write_end)
