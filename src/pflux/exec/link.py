"""job-exec's end of the shell launcher: starting it or taking it over, and the records both ways.

The shells send their records (``pflux.protocol.shellwire``) straight to job-exec, as
datagrams on one socket they all inherit: the launcher passes none of them on,
which saves it a wakeup and a copy per job and the job a hop. The launcher
itself sends job-exec only the status of a shell that could not send it (it
was killed, say); job-exec reads what the shells sent before that.

job-exec binds a Unix socket in the state directory (``exec/sock``) and
starts the launcher (``pflux.shell.launcher``) in a session of its own with
the listening socket and one end of a socket pair, its connection: requests
may be sent before the launcher has even started. The launcher outlives a
broker that dies: a job-exec that starts first tries ``attach``, which
connects to the socket a launcher may still be listening on, passes it the
shells' new socket (ATTACH) and reads the jobs it still runs (LIVE). A path
too long for a Unix socket is reached through the directory's descriptor
(``/proc/self/fd/N/sock``).

A guest's shell, which runs as its user, sends its records on a socket of its
own for each job, straight here too (``pflux.exec.guestrecords``): job-exec makes
the pair as it sends the job's SPAWN_AS, whose send passes the shell's end to
the launcher (SCM_RIGHTS), and reads its own end from then on; what is not the
job's ends the shell (TERMINATE) and the job. What job-exec
sends such a shell while it runs (signals, acknowledgements, input) goes back on
that socket. Those sockets are job-exec's, not the launcher's: they outlive a
launcher that dies, and so do the guests' jobs. Each shell is told where to
meet a restarted job-exec (``pflux.exec.rendezvous``); a job-exec that starts
after a crash listens there (``meet``), and the socket a shell connects with is
read as the one made with the job's SPAWN_AS.

job-exec keeps its own copy of the listening socket for as long as it runs
launchers, so that when one dies its shells' connections (REJOIN) wait
there for the next, which is given the same socket.

The first record sent in a turn of the event loop goes out at once, the
others of the turn together at the end of it (a ``TurnBatch``); a turn's records for a
guest's shell go on its socket at the turn's end, together; records received are handed to
job-exec in the batches they arrived in. Stopping for good sends QUIT first,
which tells the launcher to end its jobs rather than wait for another
job-exec.
"""

from __future__ import annotations

import _socket
import array
import asyncio
import contextlib
import os
import select
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Final

from pflux.broker.turn import TurnBatch
from pflux.exec.guestrecords import TO_SHELLS, GuestRecords
from pflux.exec.rendezvous import Rendezvous
from pflux.protocol import shellwire as wire

if TYPE_CHECKING:
    from pflux.broker.router import Broker
    from pflux.protocol.shelljournal import Entry

__all__ = ["LauncherLink", "Survivors"]

SHUTDOWN_WAIT: Final = 15.0  # the launcher's shutdown grace, and some
ATTACH_WAIT: Final = 10.0  # how long a launcher that accepted has to answer ATTACH
RECV_SIZE: Final = 1 << 20
GUESTS_READY: Final = 256  # guests' sockets read in one wakeup, at most (the rest: the next)
GUEST_DATAGRAM: Final = 1 << 16  # a turn's records for a guest's shell, gathered, at most
_LAST_ACK: Final = b"%d" % wire.ALL_RECORDS  # the ACK that lets a shell go: its job is over
MAX_SOCKET_PATH: Final = 100  # sun_path holds 108 bytes, with the terminating NUL
_SIZE: Final = wire.HEADER.size
_unpack: Final = wire.HEADER.unpack_from


class Survivors:
    """What a launcher that outlived its broker still has: LIVE's answer."""

    def __init__(self, payload: bytes) -> None:
        self.running: set[int] = set()  # jobs whose shells run
        self.died: dict[int, int] = {}  # wait statuses of shells that died unheard
        for line in payload.split(b"\n"):
            words = line.split()
            if len(words) == 1:
                self.running.add(int(words[0]))
            elif len(words) == 2:
                self.died[int(words[0])] = int(words[1])


class LauncherLink:
    """A launcher process and the connection to it."""

    def __init__(
        self,
        broker: Broker,
        exec_dir: str,
        on_records: Callable[[list[wire.Record], bool], None],
        on_lost: Callable[[], None],
        env: dict[str, str] | None = None,
        *,
        rejoin_timeout: float = 0.0,
        on_rejoined: Callable[[int], None] | None = None,
    ) -> None:
        self.exec_dir = exec_dir
        self._env = env or {}  # for the launcher, besides this process's environment
        self.journal = os.path.join(exec_dir, "journal")
        self.path = os.path.join(exec_dir, "sock")
        self._on_records = on_records  # (records, from the shells rather than the launcher)
        self._on_lost = on_lost
        self._proc: subprocess.Popen[bytes] | None = None
        self._pid: int | None = None  # a launcher taken over is not our child
        self._sock: socket.socket | None = None
        self._records: socket.socket | None = None  # what the shells send, straight here
        self._loop: asyncio.AbstractEventLoop | None = None
        self._in = bytearray()
        self._buffer = bytearray(RECV_SIZE)
        self._out = bytearray()  # what the socket has not taken yet
        # guests' shells' ends of their records sockets, to pass with the SPAWN_AS at
        # each offset of ``_out`` (the turn's: of what it gathered), in order
        self._out_ends: list[tuple[int, _socket.socket]] = []
        self._turn_ends: list[tuple[int, _socket.socket]] = []
        # the records sent after the first of a turn, written at its end
        self._turn: TurnBatch[bytearray] = TurnBatch(broker, bytearray, self._send_turn)
        self._closed: asyncio.Event | None = None
        self._listener: socket.socket | None = None  # exec/sock, kept across launchers
        self._live: asyncio.Future[tuple[int, bytes]] | None = None  # LIVE, while attaching
        self._guests: dict[int, GuestRecords] = {}  # guests' shells' records sockets, by fd
        self._guest_fds: dict[int, int] = {}  # ... their fds, by shell key
        self._guest_poll: select.epoll | None = None  # what of those is readable
        self._guests_done: set[int] = set()  # ... those whose last record is to be sent
        # this turn's records for guests' shells, by fd, sent at its end (one send a socket)
        self._guest_turn: TurnBatch[dict[int, list[bytes]]] = TurnBatch(
            broker, dict, self._send_guests
        )
        # where guests' shells meet a restarted job-exec (none: their jobs end with it)
        self._rendezvous = Rendezvous(exec_dir, self._met) if rejoin_timeout > 0 else None
        self._rejoin_timeout = rejoin_timeout
        self._on_rejoined = on_rejoined  # a guest's shell has met this job-exec

    @property
    def running(self) -> bool:
        return self._sock is not None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else self._pid

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the launcher; records may be sent at once (they wait in the socket)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        records, shells = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        args = [
            sys.executable,
            "-c",
            wire.LAUNCHER_COMMAND,
            str(theirs.fileno()),
            str(shells.fileno()),
        ]
        args += [self.journal]
        passed = [theirs.fileno(), shells.fileno()]
        listener = self._listen()
        if listener is not None:
            args.append(str(listener.fileno()))
            passed.append(listener.fileno())
        try:
            self._proc = subprocess.Popen(
                args,
                pass_fds=passed,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                # Symbols bound once, at start, rather than by each forked shell on first
                # use, which writes (and so copies) a page; tasks get the job's environment.
                env={**os.environ, **self._env, "LD_BIND_NOW": "1"},
            )
        except OSError:
            ours.close()
            records.close()
            raise
        finally:
            theirs.close()
            shells.close()
        self._pid = None
        self._open(loop, ours, records)

    async def attach(self, loop: asyncio.AbstractEventLoop) -> Survivors | None:
        """Take over a launcher that outlived its broker; None if there is none."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with _short(self.path) as path:
                sock.connect(path)
        except OSError:
            sock.close()
            return None
        records, shells = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            rights = array.array("i", [shells.fileno()])
            sock.sendmsg(
                [wire.record(wire.ATTACH, 0)],
                [(socket.SOL_SOCKET, socket.SCM_RIGHTS, rights.tobytes())],
            )
        except OSError:
            sock.close()
            records.close()
            return None
        finally:
            shells.close()
        self._live = loop.create_future()
        self._open(loop, sock, records)
        try:
            pid, payload = await asyncio.wait_for(asyncio.shield(self._live), ATTACH_WAIT)
        except (TimeoutError, ConnectionError):
            self._close()
            return None
        finally:
            self._live = None
        self._proc = None
        self._pid = pid
        return Survivors(payload)

    def _open(
        self, loop: asyncio.AbstractEventLoop, sock: socket.socket, records: socket.socket
    ) -> None:
        sock.setblocking(False)
        records.setblocking(False)
        self._sock = sock
        self._records = records
        self._loop = loop
        self._in.clear()
        self._out.clear()
        gathered = self._turn.peek()
        if gathered is not None:
            gathered.clear()
        self._drop_ends()
        self._closed = asyncio.Event()
        loop.add_reader(sock.fileno(), self._readable)
        loop.add_reader(records.fileno(), self._shell_records)

    def _listen(self) -> socket.socket | None:
        """The listening socket at ``exec/sock``, made once; None if the directory cannot
        hold one (then a launcher can be neither taken over nor rejoined)."""
        if self._listener is None:
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.path)
                with _short(self.path) as path:
                    listener.bind(path)
                listener.listen(socket.SOMAXCONN)  # every shell of a launcher may rejoin at once
            except OSError:
                listener.close()
                return None
            self._listener = listener
        return self._listener

    def _keep_listener(self, ancillary: list[tuple[int, int, bytes]]) -> None:
        """Keep the listening socket of a launcher taken over (passed with LIVE)."""
        for fd in wire.passed_fds(ancillary):
            if self._listener is None:
                self._listener = socket.socket(fileno=fd)
            else:
                os.close(fd)

    def close_listener(self) -> None:
        """Stop keeping ``exec/sock``: shells of a dead launcher can no longer rejoin."""
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()

    @property
    def guest_keys(self) -> set[int]:
        """The shells that job-exec reaches on a socket of their own (guests')."""
        return {guest.key for guest in self._guests.values()}

    def send(self, data: bytes) -> None:
        """Send records: the first of a loop turn at once, the others of the turn in one write.

        At once, because a job's start waits on it; together, because a burst of
        jobs is cheaper to send, and for the launcher to read, in one piece. A
        guest's shell's go on its own socket; a guest's job's SPAWN_AS goes with its
        shell's end of a records socket made here (``_pair``).
        """
        made = self._pair(data) if self._sock is not None else None
        if made is not None:
            data, shells = made
        if self._guests:  # what follows a SPAWN_AS for its job goes on the job's socket too
            data = self._to_guests(data)
        if not data or self._sock is None or self._loop is None:
            return
        ends = list(zip(_spawns_as(data), shells, strict=True)) if made is not None else None
        if self._out:  # the socket is full: the writer sends it when it can
            if ends:
                self._out_ends += [(len(self._out) + at, end) for at, end in ends]
            self._out += data
        elif self._turn.pending:
            gathered = self._turn.get()
            if ends:
                self._turn_ends += [(len(gathered) + at, end) for at, end in ends]
            gathered.extend(data)
        else:
            self._out += data
            if ends:
                self._out_ends += ends
            self._flush()
            if not self._out:
                self._turn.get()  # the turn's next records gather

    def _pair(self, data: bytes) -> tuple[bytes, list[_socket.socket]] | None:
        """A records socket for each guest's job ``data`` asks for (SPAWN_AS): this end
        read as the job's at once; ``data`` and the shells' ends, in order. None if
        ``data`` asks for none. A job whose socket cannot be made is not asked for: it
        ends, saying why."""
        if len(data) < _SIZE:
            return None
        kind, jobid, rank, length = _unpack(data)
        if kind != wire.SPAWN_AS and len(data) == _SIZE + length:  # the usual: one record
            return None
        shells: list[_socket.socket] = []
        failed: list[tuple[int, int, str]] = []  # (offset, end, why) of jobs with none
        at, size = 0, len(data)
        while size - at >= _SIZE:
            kind, jobid, rank, length = _unpack(data, at)
            end = at + _SIZE + length
            if kind == wire.SPAWN_AS:
                key = wire.shell_key(jobid, rank)
                try:
                    ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
                except OSError as exc:
                    failed.append((at, end, f"-1 job shell's records socket: {exc.strerror}"))
                else:
                    self._keep_guest(GuestRecords(key, ours))
                    shells.append(theirs)
            at = end
        if failed:
            kept = bytearray()
            start = 0
            for at, end, why in failed:
                kept += data[start:at]
                start = end
                key = wire.shell_key(*_unpack(data, at)[1:3])
                assert self._loop is not None  # the link is open
                self._loop.call_soon(self._on_records, [(wire.EXITED, key, why.encode())], False)
            data = bytes(kept + data[start:])
        return data, shells

    def _to_guests(self, data: bytes) -> bytes:
        """Send guests' shells what is theirs in ``data`` on their own sockets; the rest."""
        guests = self._guest_fds
        if len(data) >= _SIZE:  # the usual: one record, sent as it is, read from its header
            kind, jobid, rank, length = _unpack(data)
            if len(data) == _SIZE + length:
                if kind not in TO_SHELLS and kind != wire.TERMINATE:
                    return data  # a SPAWN_AS, say: its payload (J) is not copied
                fd = guests.get(wire.shell_key(jobid, rank), -1)
                if fd < 0:
                    return data
                if kind in TO_SHELLS:
                    last = (
                        kind == wire.ACK and length == len(_LAST_ACK) and data.endswith(_LAST_ACK)
                    )
                    self._to_guest(fd, data, last=last)
                    return b""
        records, _ = wire.split(data)
        if not any(key in guests for _, key, _ in records):
            return data
        rest = bytearray()
        for kind, key, payload in records:
            fd = guests.get(key, -1)
            if fd >= 0 and kind == wire.TERMINATE:  # its session is not ours: its tasks are
                self._to_guest(fd, wire.record(wire.KILL, key, payload))
            if fd < 0 or kind not in TO_SHELLS:
                rest += wire.record(kind, key, payload)
            else:
                last = kind == wire.ACK and payload == _LAST_ACK
                self._to_guest(fd, wire.record(kind, key, payload), last=last)
        return bytes(rest)

    def _to_guest(self, fd: int, data: bytes, *, last: bool = False) -> None:
        """Send the guest's shell on ``fd`` a record at the turn's end, with the turn's others
        for it: each send wakes a shell, and a send a record cost the loop one each. The
        ``last`` (the ACK that lets the shell go: its job is over) closes the socket once
        sent: a kept shell would close its end when given its next job, which would wake
        the loop for nothing else."""
        self._guest_turn.get().setdefault(fd, []).append(data)
        if last:
            self._guests_done.add(fd)

    def _send_guests(self, gathered: dict[int, list[bytes]]) -> None:
        """A turn's records for guests' shells: one datagram a shell, unless they are many;
        a socket whose last record went, closed."""
        guests = self._guests
        for fd, records in gathered.items():
            guest = guests.get(fd)
            if guest is None:  # its socket has ended since: its job's end says what became of it
                continue
            for datagram in _datagrams(records):
                if not guest.send(datagram):
                    assert self._loop is not None  # it had a guest
                    self._loop.add_writer(fd, self._guest_writable, fd)
            if fd in self._guests_done and not guest.outbox:
                self._let_go(fd)

    def _guest_writable(self, fd: int) -> None:
        guest = self._guests.get(fd)
        if (guest is None or guest.drain()) and self._loop is not None:
            self._loop.remove_writer(fd)
            if fd in self._guests_done:
                self._let_go(fd)

    def _let_go(self, fd: int) -> None:
        """Close the socket of a guest's shell whose job is over (its EXITED read, its last
        ACK sent): nothing more of the job comes on it, and what the shell sends after
        is not read."""
        guest = self._forget_guest(fd)
        if guest is not None:
            guest.close()

    def _forget_guest(self, fd: int) -> GuestRecords | None:
        """Take the guest's socket on ``fd`` out of every table and the poll set."""
        self._guests_done.discard(fd)
        guest = self._guests.pop(fd, None)
        if guest is not None:
            if self._guest_fds.get(guest.key) == fd:
                del self._guest_fds[guest.key]
            if self._guest_poll is not None:
                self._guest_poll.unregister(fd)
        return guest

    def _send_turn(self, gathered: bytearray) -> None:
        if gathered:
            if self._turn_ends:
                base = len(self._out)
                self._out_ends += [(base + at, end) for at, end in self._turn_ends]
                self._turn_ends.clear()
            self._out += gathered
            self._flush()

    def _flush(self) -> None:
        sock, loop = self._sock, self._loop
        if sock is None or loop is None:
            return
        ends = self._out_ends
        try:
            if ends:  # each end in the send of its record's first byte, or an earlier one
                some = ends[: wire.SPAWN_AS_ENDS]
                upto = ends[len(some)][0] if len(ends) > len(some) else len(self._out)
                fds = array.array("i", [end.fileno() for _, end in some]).tobytes()
                rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)]
                sent = sock.sendmsg([self._out[:upto]], rights)
                for _, end in some:  # the launcher's now
                    end.close()
                ends[:] = [(at - sent, end) for at, end in ends[len(some) :]]
            else:
                sent = sock.send(self._out)
        except BlockingIOError:
            sent = 0
        except OSError:
            sent = len(self._out)  # the reader sees the end and reports the loss
            self._drop_ends()
        del self._out[:sent]
        if not self._out:
            loop.remove_writer(sock.fileno())
        else:
            loop.add_writer(sock.fileno(), self._flush)

    def _drop_ends(self) -> None:
        """Close the shells' ends not passed to the launcher: their jobs' sockets end."""
        for _, end in self._out_ends + self._turn_ends:
            end.close()
        self._out_ends.clear()
        self._turn_ends.clear()

    def _readable(self) -> bool:
        """The launcher's records (a shell's status, when the shell could not send it);
        False if none were there."""
        sock = self._sock
        if sock is None:
            return False
        try:
            if self._live is not None:  # LIVE comes with the launcher's listening socket
                n, ancillary, _, _ = sock.recvmsg_into([self._buffer], socket.CMSG_SPACE(4))
                self._keep_listener(ancillary)
            else:
                n = sock.recv_into(self._buffer)
        except BlockingIOError:
            return False
        except OSError:
            n = 0
        if not n:
            attaching = self._live is not None
            self._close()
            if not attaching:
                self._on_lost()
            return False
        with memoryview(self._buffer) as view:
            self._in += view[:n]
        records, used = wire.split(self._in)
        del self._in[:used]
        if self._live is not None and records and records[0][0] == wire.LIVE:  # ATTACH's answer
            _, pid, payload = records.pop(0)
            self._live.set_result((pid, payload))
        if records:
            # whatever the shells sent before they ended comes before the launcher's word
            self._shell_records()
            ended = {key for kind, key, _ in records if kind == wire.EXITED}
            for fd in [fd for fd, guest in self._guests.items() if guest.key in ended]:
                self._guest_records(fd, told=True)
            self._on_records(records, False)
        return True

    def _shell_records(self) -> None:
        """Every datagram the shells have sent, handed on in one batch."""
        sock = self._records
        if sock is None:
            return
        batch: list[wire.Record] = []
        with memoryview(self._buffer) as view:
            while True:
                try:
                    n = sock.recv_into(view)
                except BlockingIOError:
                    break
                batch += wire.split(view[:n])[0]
        if batch:
            self._on_records(batch, True)

    def _keep_guest(self, guest: GuestRecords, *, met: bool = False) -> None:
        """Take the records of a guest's shell on its socket: the one made with its
        SPAWN_AS (the shell is then told where to meet the next job-exec), or the one it
        ``met`` this job-exec with."""
        if self._loop is None:
            guest.close()
            return
        fd, key = guest.sock.fileno(), guest.key
        if not met and self._rendezvous is not None:
            directory = self._rendezvous.directory()
            if directory >= 0:
                guest.rendezvous(directory, self._rejoin_timeout)
        self._guests[fd] = guest
        self._guest_fds[key] = fd
        poll = self._guest_poll
        if poll is None:
            poll = self._guest_poll = select.epoll()
            self._loop.add_reader(poll.fileno(), self._guests_ready)
        poll.register(fd, select.EPOLLIN)  # and what it sent before

    def _guests_ready(self) -> None:
        """What the guests' shells sent, from every socket that has something, handed on
        in one batch (as the owner's shells' are); each socket's end after it."""
        poll = self._guest_poll
        if poll is None:
            return
        batch: list[wire.Record] = []
        ended: list[int] = []
        guests = self._guests
        with memoryview(self._buffer) as view:
            for fd, _ in poll.poll(0, GUESTS_READY):
                guest = guests.get(fd)
                if guest is not None:
                    batch += guest.read(view, once=True)
                    if guest.ended:
                        ended.append(fd)
        if batch:
            self._on_records(batch, True)
        for fd in ended:
            self._guest_ended(fd)

    def _guest_records(self, fd: int, *, told: bool = False) -> None:
        """What the guest's shell on ``fd`` sent, if its job's; a forger is ended with its
        job (``told``: the launcher has said how the shell ended)."""
        guest = self._guests.get(fd)
        if guest is None:
            return
        with memoryview(self._buffer) as view:
            batch = guest.read(view)
        if batch:
            self._on_records(batch, True)
        if guest.ended:
            self._guest_ended(fd, told=told)

    def _guest_ended(self, fd: int, *, told: bool = False) -> None:
        """The guest's socket on ``fd`` has ended (or was refused): close it, and end its
        job if its shell did not say how it ended (nor, ``told``, the launcher)."""
        guest = self._forget_guest(fd)
        if guest is None:
            return
        if guest.outbox and self._loop is not None:  # a writer waits on it only while records do
            self._loop.remove_writer(fd)
        guest.close()
        if guest.forged:  # not its job's: its shell kills its tasks once its socket ends
            self.send(wire.record(wire.TERMINATE, guest.key, b"%d" % signal.SIGKILL))
        elif told or not guest.note:
            return
        elif self._live is None:
            # why a shell never ran (the helper refused it, say) is the launcher's word,
            # which it sends before it lets go of the shell's end: that comes first
            while self._readable():
                pass
        self._on_records([(wire.EXITED, guest.key, guest.note)], False)

    def meet(self, loop: asyncio.AbstractEventLoop, shells: dict[int, tuple[Entry, int]]) -> None:
        """Listen for the guests' ``shells`` of an earlier job-exec (key to journal entry
        and job's userid), each at its rendezvous, until it meets this one or
        ``forget_meetings``."""
        if self._rendezvous is not None and shells:
            self._rendezvous.listen(loop, shells)

    def forget_meetings(self) -> None:
        """Listen for no guest's shell any more (they have given up by now)."""
        if self._rendezvous is not None:
            self._rendezvous.close()

    def _met(self, key: int, conn: socket.socket) -> None:
        """A guest's shell of ``key`` has met this job-exec: its records come on ``conn``."""
        guest = GuestRecords.adopt(key, conn.detach())
        if guest is not None:
            self._keep_guest(guest, met=True)
        if self._on_rejoined is not None:
            self._on_rejoined(key)

    def _close_guests(self) -> None:
        self._guest_turn.flush()
        poll, self._guest_poll = self._guest_poll, None
        if poll is not None:
            if self._loop is not None:
                self._loop.remove_reader(poll.fileno())
            poll.close()
        for fd, guest in self._guests.items():
            if self._loop is not None:
                self._loop.remove_writer(fd)
            guest.close()
        self._guests.clear()
        self._guest_fds.clear()
        self._guests_done.clear()

    def _close(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None and self._loop is not None:
            self._loop.remove_reader(sock.fileno())
            self._loop.remove_writer(sock.fileno())
            sock.close()
        self._drop_ends()  # what was not sent never will be
        records, self._records = self._records, None
        if records is not None and self._loop is not None:
            self._loop.remove_reader(records.fileno())
            records.close()  # shells of this launcher that still send are orphans now
        if self._live is not None and not self._live.done():
            self._live.set_exception(ConnectionError("the launcher hung up"))
        if self._closed is not None:
            self._closed.set()
        proc = self._proc
        if proc is not None and proc.poll() is None and self._loop is not None:
            # it has closed its end and is exiting: reap it off the loop
            self._loop.run_in_executor(None, proc.wait)

    async def stop(self) -> None:
        """End the launcher for good (QUIT): it ends its shells, then closes its end."""
        sock, proc, closed = self._sock, self._proc, self._closed
        if sock is not None and closed is not None:
            self._turn.flush()
            self._out += wire.record(wire.QUIT, 0)
            sock.setblocking(True)  # what is left goes out before the end of the stream
            while self._out_ends:  # with the guests' shells' ends that go with it
                self._flush()
            with contextlib.suppress(OSError):
                sock.sendall(self._out)
                self._out.clear()
            sock.setblocking(False)
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_WR)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(closed.wait(), SHUTDOWN_WAIT)
            self._close()
        if proc is not None and proc.poll() is None:
            try:
                await asyncio.to_thread(proc.wait, 5.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                await asyncio.to_thread(proc.wait)
        self._proc = None
        self.close_listener()
        self.forget_meetings()
        self._close_guests()

    def detach(self) -> subprocess.Popen[bytes] | None:
        """Let go without QUIT, as a broker that dies does; the launcher, if ours, to reap."""
        proc, self._proc = self._proc, None
        self._close()
        self.close_listener()
        self.forget_meetings()
        self._close_guests()
        return proc


def _datagrams(records: list[bytes]) -> Iterator[bytes]:
    """``records`` joined in datagrams of up to ``GUEST_DATAGRAM`` bytes (or one record)."""
    if len(records) == 1:
        yield records[0]
        return
    datagram = bytearray()
    for record in records:
        if datagram and len(datagram) + len(record) > GUEST_DATAGRAM:
            yield bytes(datagram)
            datagram.clear()
        datagram += record
    if datagram:
        yield bytes(datagram)


def _spawns_as(data: bytes) -> list[int]:
    """The offsets of the SPAWN_AS records in ``data``."""
    found: list[int] = []
    at, size = 0, len(data)
    while size - at >= _SIZE:
        kind, _, _, length = _unpack(data, at)
        if kind == wire.SPAWN_AS:
            found.append(at)
        at += _SIZE + length
    return found


@contextlib.contextmanager
def _short(path: str) -> Iterator[str]:
    """``path``, or one short enough for a Unix socket through its directory's descriptor."""
    if len(os.fsencode(path)) < MAX_SOCKET_PATH:
        yield path
        return
    directory, name = os.path.split(path)
    fd = os.open(directory, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield f"/proc/self/fd/{fd}/{name}"
    finally:
        os.close(fd)
