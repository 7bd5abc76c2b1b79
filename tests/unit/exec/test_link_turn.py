"""The launcher link's writes: a turn's first record at once, the rest of the turn in one
write at its end, and what a stop finds gathered sent before QUIT."""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

from pflux.broker.router import Broker
from pflux.exec.guestrecords import GuestRecords
from pflux.exec.link import LauncherLink
from pflux.protocol import shellwire as wire


async def _turns(broker: Broker, n: int = 4) -> None:
    """Let the broker's queue run ``n`` turns."""
    for _ in range(n):
        done = asyncio.get_running_loop().create_future()
        broker.queue.push(done.set_result, None)
        await done
    await asyncio.sleep(0)


def _linked(broker: Broker, tmp_path: Path) -> tuple[LauncherLink, socket.socket]:
    """A link opened on a socket pair (no launcher): the launcher's end is returned."""
    link = LauncherLink(broker, str(tmp_path), lambda records, shells: None, lambda: None)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    records, shells = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    shells.close()  # no shell sends here
    link._open(asyncio.get_running_loop(), ours, records)
    theirs.setblocking(False)
    return link, theirs


def _read(sock: socket.socket) -> bytes:
    try:
        return sock.recv(1 << 16)
    except BlockingIOError:
        return b""


def test_a_turns_first_record_goes_at_once_the_rest_in_one_write_at_its_end(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        broker = Broker(os.getuid())
        link, theirs = _linked(broker, tmp_path)
        seen: list[bytes] = []

        def turn() -> None:
            link.send(b"first")
            seen.append(_read(theirs))
            link.send(b"second,")
            link.send(b"third")
            seen.append(_read(theirs))

        broker.queue.push(turn)
        await _turns(broker)
        seen.append(_read(theirs))
        assert seen == [b"first", b"", b"second,third"]
        link._close()
        theirs.close()

    asyncio.run(scenario())


def test_a_stop_sends_what_the_turn_gathered_before_quit(tmp_path: Path) -> None:
    async def scenario() -> None:
        broker = Broker(os.getuid())
        link, theirs = _linked(broker, tmp_path)
        link.send(b"first")
        link.send(b"gathered")
        theirs.shutdown(socket.SHUT_WR)  # the launcher's end of the stream: stop need not wait
        await link.stop()
        theirs.setblocking(True)
        data = b""
        while chunk := theirs.recv(1 << 16):
            data += chunk
        assert data == b"firstgathered" + wire.record(wire.QUIT, 0)
        theirs.close()

    asyncio.run(scenario())


def test_a_turns_records_for_a_guests_shell_go_in_one_datagram_at_its_end(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        broker = Broker(os.getuid())
        link, theirs = _linked(broker, tmp_path)
        key = 9 << 24
        ours, shell = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        link._keep_guest(GuestRecords(key, ours))
        shell.setblocking(False)
        seen: list[bytes] = []
        big = wire.record(wire.INPUT, key, b"x" * 40000)

        def turn() -> None:
            link.send(wire.record(wire.ACK, key, b"10"))
            link.send(wire.record(wire.ACK, key, b"20") + big)
            link.send(big)
            seen.append(_read(shell))  # nothing before the turn's end

        broker.queue.push(turn)
        await _turns(broker)
        datagrams = [_read(shell) for _ in range(3)]
        assert seen == [b""]
        acks = wire.record(wire.ACK, key, b"10") + wire.record(wire.ACK, key, b"20")
        assert datagrams == [acks + big, big, b""]  # what would not fit in one: in the next
        assert _read(theirs) == b""  # none of it went through the launcher
        link.detach()
        shell.close()
        theirs.close()

    asyncio.run(scenario())
