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
from pflux.exec.guestrecords import FORGED, UNHEARD, GuestRecords
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
        link._keep_guest(GuestRecords(key, ours))
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


def _received(launcher: socket.socket, size: int) -> tuple[bytes, list[int]]:
    """``size`` bytes from the launcher's end of the link, with the descriptors that came
    with them, in order."""
    data = b""
    fds = array.array("i")
    launcher.settimeout(10)
    while len(data) < size:
        more, ancillary, flags, _ = launcher.recvmsg(1 << 20, socket.CMSG_SPACE(4 * 256))
        assert more
        assert not flags & socket.MSG_CTRUNC
        data += more
        for _, _, cdata in ancillary:
            fds.frombytes(cdata)
    return data, list(fds)


def test_a_guests_job_goes_with_its_shells_end_of_a_socket_read_as_its_own(
    tmp_path: Path,
) -> None:
    """job-exec makes each guest's job's records socket as it sends the job's SPAWN_AS:
    the shell's end goes with the record (a descriptor a SPAWN_AS, in order, however many
    a turn sends), and what comes on it is the job's."""

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        broker = Broker(os.getuid())
        batches = Batches()
        link = LauncherLink(broker, str(tmp_path), batches.add, lambda: None)
        ours, launcher = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        records, shells = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        link._open(loop, ours, records)
        keys = [FIRST + n for n in range(wire.SPAWN_AS_ENDS + 6)]  # more than a send passes
        sent = [wire.record(wire.SPAWN_AS, key, b"%d\nJ\n{}" % n) for n, key in enumerate(keys)]
        owners = wire.record(wire.KILL, SECOND, b"15")  # an owner's job's, in between
        done = loop.create_future()

        def turn() -> None:
            link.send(sent[0])
            link.send(owners)
            for record in sent[1:]:
                link.send(record)

        broker.queue.push(turn)
        broker.queue.push(done.set_result, None)
        await done
        expected = sent[0] + owners + b"".join(sent[1:])
        data, fds = await asyncio.to_thread(_received, launcher, len(expected))
        assert data == expected
        assert len(fds) == len(keys)
        assert link.guest_keys == set(keys)
        ends = [socket.socket(fileno=fd) for fd in fds]
        for key, end in zip(keys, ends, strict=True):
            end.send(wire.record(wire.STARTED, key, b"1.0 h 0:1"))
        got: list[wire.Record] = []
        while len(got) < len(keys):
            batches.arrived.clear()
            got = [record for batch, _ in batches for record in batch]
            if len(got) < len(keys):
                await asyncio.wait_for(batches.arrived.wait(), 10.0)
        assert sorted(got) == [(wire.STARTED, key, b"1.0 h 0:1") for key in keys]
        link.detach()
        for sock in (launcher, shells, *ends):
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
            link._keep_guest(GuestRecords(key, ours))
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


def test_why_the_launcher_says_a_shell_never_ran_comes_before_its_sockets_end(
    tmp_path: Path,
) -> None:
    """The launcher says why a guest's shell never ran (the helper refused it) before it
    lets go of the shell's end: job-exec, finding the job's socket ended first, reads the
    launcher before ending the job as a shell that ended without its status."""

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        link, batches, shells = link_with_guests(loop, tmp_path, [FIRST])
        ours, launcher = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        records, others = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        link._open(loop, ours, records)
        refused = b"-1 privileged helper: J does not verify"
        launcher.sendall(wire.record(wire.EXITED, FIRST, refused))
        shells[0].close()
        link._guests_ready()  # as when the guests' poll is read before the launcher's socket
        records_seen = [record for batch, _ in batches for record in batch]
        assert records_seen[0] == (wire.EXITED, FIRST, refused)
        assert link.guest_keys == set()
        link.detach()
        for sock in (launcher, others):
            sock.close()

    asyncio.run(scenario())


def test_a_stop_sends_what_waits_with_its_guests_shells_ends(tmp_path: Path) -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        broker = Broker(os.getuid())
        link = LauncherLink(broker, str(tmp_path), lambda records, shells: None, lambda: None)
        ours, launcher = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        records, shells = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        link._open(loop, ours, records)
        big = wire.record(wire.INPUT, SECOND, b"x" * (1 << 18))
        spawn = wire.record(wire.SPAWN_AS, FIRST, b"1000\nJ\n{}")
        done = loop.create_future()
        broker.queue.push(lambda: (link.send(big), link.send(spawn)))
        broker.queue.push(done.set_result, None)
        await done
        assert link._out_ends  # the launcher reads nothing: the SPAWN_AS waits, with its end
        expected = big + spawn + wire.record(wire.QUIT, 0)

        def launcher_reads() -> tuple[bytes, list[int]]:
            try:
                return _received(launcher, len(expected))
            finally:
                launcher.close()  # as the launcher does once it has ended its shells

        reading = loop.run_in_executor(None, launcher_reads)
        await link.stop()
        data, fds = await reading
        assert data == expected
        assert len(fds) == 1
        for fd in fds:
            os.close(fd)
        shells.close()

    asyncio.run(scenario())
