"""job-exec reads its guests' shells' sockets as it reads the owner's shells' one: a wakeup
takes what every guest's socket holds and hands it on in one batch, and a socket that
ends, or carries another job's records, ends its job alone."""

from __future__ import annotations

import array
import asyncio
import os
import socket
from pathlib import Path
from typing import Any

from pflux.broker.router import Broker
from pflux.exec.guestrecords import FORGED, UNHEARD
from pflux.exec.link import LauncherLink
from pflux.protocol import shellwire as wire

FIRST = 5 << 24
SECOND = 6 << 24


class Batches(list[tuple[list[wire.Record], bool]]):
    """What the link hands on, each batch as it comes; ``arrived`` set at each."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived = asyncio.Event()

    def add(self, records: list[wire.Record], from_shells: bool) -> None:
        self.append((records, from_shells))
        self.arrived.set()


def link_with_guests(
    loop: asyncio.AbstractEventLoop, tmp_path: Path, keys: list[int]
) -> tuple[LauncherLink, Batches, list[socket.socket]]:
    """A link with no launcher that has adopted a guest's socket for each of ``keys``: the
    link, what it hands on, and the shells' ends."""
    batches = Batches()
    broker: Any = None  # only records for the launcher use it: none are sent here
    link = LauncherLink(broker, str(tmp_path), batches.add, lambda: None)
    link._loop = loop
    shells = []
    for key in keys:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        link._adopt_guest(key, ours.detach())
        shells.append(theirs)
    return link, batches, shells


async def _settle(batches: Batches, count: int) -> None:
    """Wait until ``count`` batches have come."""
    while len(batches) < count:
        batches.arrived.clear()
        await asyncio.wait_for(batches.arrived.wait(), 10.0)


def test_one_wakeup_hands_on_every_guests_records_in_one_batch(tmp_path: Path) -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        link, batches, shells = link_with_guests(loop, tmp_path, [FIRST, SECOND])
        shells[0].send(wire.record(wire.STARTED, FIRST, b"1.0 h 0:1"))
        shells[1].send(wire.record(wire.STARTED, SECOND, b"1.0 h 0:2"))
        await _settle(batches, 1)
        assert len(batches) == 1
        records, from_shells = batches[0]
        assert sorted(records) == [
            (wire.STARTED, FIRST, b"1.0 h 0:1"),
            (wire.STARTED, SECOND, b"1.0 h 0:2"),
        ]
        assert from_shells
        link.detach()
        for shell in shells:
            shell.close()

    asyncio.run(scenario())


def test_a_socket_that_ends_ends_its_job_alone(tmp_path: Path) -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        link, batches, shells = link_with_guests(loop, tmp_path, [FIRST, SECOND])
        shells[0].send(wire.record(wire.EXITED, FIRST, b"0"))
        shells[0].close()
        shells[1].close()  # before its EXITED
        await _settle(batches, 2)
        records = [record for batch, _ in batches for record in batch]
        assert (wire.EXITED, FIRST, b"0") in records
        assert (wire.EXITED, SECOND, UNHEARD) in records
        assert len(records) == 2
        assert link.guest_keys == set()
        link.detach()
        for shell in shells:
            shell.close()

    asyncio.run(scenario())


def test_another_jobs_record_ends_the_forgers_job_and_not_the_others(tmp_path: Path) -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        link, batches, shells = link_with_guests(loop, tmp_path, [FIRST, SECOND])
        shells[0].send(wire.record(wire.OUTPUT, SECOND, b"o\0\0\0\0forged\n"))
        shells[1].send(wire.record(wire.STARTED, SECOND, b"1.0 h 0:2"))
        await _settle(batches, 2)
        records = [record for batch, _ in batches for record in batch]
        assert sorted(records) == sorted(
            [(wire.EXITED, FIRST, FORGED), (wire.STARTED, SECOND, b"1.0 h 0:2")]
        )
        assert link.guest_keys == {SECOND}
        assert shells[0].recv(100) == b""  # its socket is closed: its shell kills its tasks
        link.detach()
        for shell in shells:
            shell.close()

    asyncio.run(scenario())


def _pass(launcher: socket.socket, keys: list[int], socks: list[socket.socket]) -> None:
    """Send GUEST_RECORDS of ``keys`` in one datagram, passing ``socks``, as the launcher does."""
    data = b"".join(wire.record(wire.GUEST_RECORDS, key) for key in keys)
    fds = array.array("i", [sock.fileno() for sock in socks]).tobytes()
    launcher.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])


def test_a_turns_guests_sockets_come_in_one_datagram_each_its_jobs(tmp_path: Path) -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        link, batches, _ = link_with_guests(loop, tmp_path, [])
        ours, launcher = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        ours.setblocking(False)
        link._records = ours
        pairs = [socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET) for _ in range(3)]
        _pass(launcher, [FIRST, SECOND], [pairs[0][0], pairs[1][0]])
        _pass(launcher, [FIRST + 1, SECOND + 1], [pairs[2][0]])  # a descriptor short: refused
        link._shell_records()
        assert link.guest_keys == {FIRST, SECOND}
        pairs[1][1].send(wire.record(wire.STARTED, SECOND, b"1.0 h 0:2"))
        await _settle(batches, 1)
        assert batches == [([(wire.STARTED, SECOND, b"1.0 h 0:2")], True)]
        for ends in pairs:
            ends[0].close()
        assert pairs[2][1].recv(100) == b""  # job-exec kept no copy of the one refused
        link.detach()
        for sock in (launcher, *(end for ends in pairs for end in ends)):
            sock.close()

    asyncio.run(scenario())


def test_a_guests_socket_is_closed_with_the_ack_that_lets_its_shell_go(tmp_path: Path) -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        broker = Broker(os.getuid())  # the records for a guest's shell go at a turn's end
        batches = Batches()
        link = LauncherLink(broker, str(tmp_path), batches.add, lambda: None)
        link._loop = loop
        shells = []
        for key in (FIRST, SECOND):
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            link._adopt_guest(key, ours.detach())
            theirs.settimeout(10)
            shells.append(theirs)
        shells[0].send(wire.record(wire.EXITED, FIRST, b"0"))
        await _settle(batches, 1)
        last = wire.record(wire.ACK, FIRST, b"%d" % wire.ALL_RECORDS)
        running = wire.record(wire.ACK, SECOND, b"100")
        done = loop.create_future()
        broker.queue.push(lambda: (link.send(last), link.send(running)))
        broker.queue.push(done.set_result, None)
        await done
        assert shells[0].recv(100) == last
        assert shells[0].recv(100) == b""  # closed with it: the shell's next job wakes no one
        assert shells[1].recv(100) == running  # a job that runs keeps its socket
        assert link.guest_keys == {SECOND}
        shells[1].send(wire.record(wire.EXITED, SECOND, b"0"))
        await _settle(batches, 2)
        assert batches[1] == ([(wire.EXITED, SECOND, b"0")], True)  # and nothing of FIRST's
        link.detach()
        for shell in shells:
            shell.close()

    asyncio.run(scenario())
