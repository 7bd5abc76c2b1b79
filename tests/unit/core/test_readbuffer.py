"""A client's reads into the buffer it keeps: all that came, in order, the buffer grown
while reads fill it."""

from __future__ import annotations

import socket
import threading

from _pfluxcore.readbuffer import ROOM, ROOM_MAX, ReadBuffer


def test_a_read_that_fills_the_buffer_grows_it_for_the_next() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        reads = ReadBuffer()
        theirs.sendall(b"a" * (ROOM + 10))
        assert bytes(reads.recv(ours)) == b"a" * ROOM  # as much as it holds, no more
        theirs.sendall(b"b" * (2 * ROOM))
        assert bytes(reads.recv(ours)) == b"a" * 10 + b"b" * (2 * ROOM - 10)  # twice the room
        assert bytes(reads.recv(ours)) == b"b" * 10
        theirs.shutdown(socket.SHUT_WR)
        assert bytes(reads.recv(ours)) == b""  # the stream's end


def test_a_long_stream_reads_whole_and_in_order_while_the_buffer_grows() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        sent = bytes(range(256)) * (8 * ROOM_MAX // 256)
        sender = threading.Thread(target=theirs.sendall, args=(sent,))
        sender.start()
        reads = ReadBuffer()
        got = bytearray()
        while len(got) < len(sent):
            got += reads.recv(ours)
        sender.join()
        assert got == sent
