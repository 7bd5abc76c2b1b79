"""job-exec's end of a guest's shell's records socket: one job's records, and nothing else.

A guest's shell runs as its user (``pflux.imp``), so it may send anything: it
gets a socket of its own for each job (``SOCK_SEQPACKET``; job-exec makes the
pair and passes the shell's end with the job's SPAWN_AS), and what comes on it is taken
only if every record of a datagram is of a kind a shell sends and of the job the
socket was made for. The records skip the launcher, as the owner's shells' do;
job-exec, not the shell, says which job a socket is for. job-exec's records for
the shell (``TO_SHELLS``) go back on the same socket, so a running job needs no
launcher: one that dies takes none of its guests' jobs with it. The first of them
says where the shell is to meet a restarted job-exec if this one dies
(RENDEZVOUS, ``pflux.exec.rendezvous``), where the socket of that meeting is
read as this one.
"""

from __future__ import annotations

import _socket
import array
import os
from typing import Final

from pflux.protocol import shellwire as wire

__all__ = ["FORGED", "FROM_SHELLS", "TO_SHELLS", "UNHEARD", "GuestRecords"]

# what a shell sends job-exec: all a guest's shell may
FROM_SHELLS: Final = frozenset(
    (wire.STARTED, wire.EXCEPTION, wire.LOG, wire.OUTPUT, wire.EOF, wire.FENCE, wire.EXITED)
)
# what job-exec sends a running shell, which goes on the guest's shell's socket
TO_SHELLS: Final = frozenset(
    (wire.KILL, wire.ACK, wire.INPUT, wire.WINSIZE, wire.FENCE, wire.RESUME)
)
FORGED: Final = b"-1 job shell sent records not its job's"  # EXITED, for a forger's job
UNHEARD: Final = b"-1 job shell ended without its status"  # EXITED, for a shell that did


class GuestRecords:
    """The records socket of the guest's shell of job ``key`` (its shell key)."""

    __slots__ = ("ended", "exited", "forged", "key", "outbox", "sock")

    def __init__(self, key: int, sock: _socket.socket) -> None:
        sock.setblocking(False)
        self.key = key
        self.sock = sock
        self.exited = False  # the shell sent EXITED
        self.ended = False  # the socket reached its end, or was refused: close it
        self.forged = False  # a record not the job's came: end the shell
        self.outbox: list[bytes] = []  # records for the shell its socket could not take yet

    @classmethod
    def adopt(cls, key: int, fd: int) -> GuestRecords | None:
        """The socket passed as descriptor ``fd``; None (``fd`` closed) if it is no
        ``SOCK_SEQPACKET`` Unix socket."""
        try:  # its domain (getsockname) and type (SO_TYPE) asked by the constructor alone;
            # the C type's, whose domain and type are plain numbers (a job's enums, the
            # Python class's wrapping and its close cost the loop more than the checks)
            sock = _socket.socket(fileno=fd)
        except OSError:  # not a socket
            os.close(fd)
            return None
        if sock.family != _socket.AF_UNIX or sock.type != _socket.SOCK_SEQPACKET:
            sock.close()
            return None
        return cls(key, sock)

    @property
    def note(self) -> bytes:
        """EXITED's payload for the job, once ended without the shell's own: b"" if it
        sent one."""
        if self.exited:
            return b""
        return FORGED if self.forged else UNHEARD

    def read(self, buffer: memoryview, *, once: bool = False) -> list[wire.Record]:
        """What the shell has sent, up to a datagram that is not all its job's (then
        ``forged``, and nothing more is read) or the socket's end (``ended``); with
        ``once``, one datagram at most (a poll said there is one: what follows it waits
        for the next poll, which says so again, rather than for a read that finds none)."""
        records: list[wire.Record] = []
        while not self.ended:
            try:
                n = self.sock.recv_into(buffer)
            except BlockingIOError:
                break
            except ConnectionResetError:
                # the shell ended with records of job-exec's unread (a kept shell that
                # refused its next job); the error comes once, what it sent after it
                continue
            except OSError:
                n = 0
            if not n:
                self.ended = True
                break
            found, used = wire.split(buffer[:n])
            # whole records, not as much as fits (that may have been cut short), some
            taken = used == n and n != len(buffer) and bool(found)
            exited = False
            for kind, key, _ in found if taken else ():  # one pass: a datagram holds few
                if key != self.key or kind not in FROM_SHELLS:
                    taken = False
                    break
                exited = exited or kind == wire.EXITED
            if not taken:
                self.forged = self.ended = True
                break
            self.exited = self.exited or exited
            records += found
            if once:
                break
        return records

    def rendezvous(self, directory: int, timeout: float) -> None:
        """Tell the shell where to meet a restarted job-exec (RENDEZVOUS: ``directory``, a
        descriptor, and the rejoin timeout), before anything else is sent to it. If the
        socket cannot take it, the shell has no rendezvous: its job ends with job-exec."""
        data = wire.record(wire.RENDEZVOUS, self.key, repr(timeout).encode())
        rights = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, array.array("i", [directory]).tobytes())]
        try:
            self.sock.sendmsg([data], rights)
        except OSError:
            return

    def send(self, data: bytes) -> bool:
        """Send the shell a record, after those that wait; False if it has to wait."""
        if not self.outbox:
            try:
                self.sock.send(data)
            except BlockingIOError:
                pass
            except OSError:
                return True  # the shell is gone: its socket's end says so
            else:
                return True
        self.outbox.append(data)
        return False

    def drain(self) -> bool:
        """Send what waits, in order; True once nothing does."""
        outbox = self.outbox
        while outbox:
            try:
                self.sock.send(outbox[0])
            except BlockingIOError:
                return False
            except OSError:
                outbox.clear()
                break
            del outbox[0]
        return True

    def close(self) -> None:
        self.sock.close()
