"""Where a guest's shell meets a restarted job-exec: ``exec/guests/<key>``, a socket a job.

A guest's shell runs as its user, with neither spool nor ``exec/sock``. job-exec
tells it, first thing on the job's records socket, where to meet the next one
(RENDEZVOUS: a descriptor of ``exec/guests`` and the rejoin timeout). That
directory is the instance account's, mode 0711: nobody else can make an entry
in it, so nobody can take a job's path first or stand in for job-exec there
(the shell checks its peer's uid too), and a guest reaches it only through the
descriptor it was given (the state directory above may be closed to it).

A job-exec that starts after a crash listens at ``<key>`` (``SOCK_SEQPACKET``,
mode 0666, since the guest connects) for each shell the journal names as
running as another user, and takes one connection there: from the process the
journal names as that shell (``SO_PEERCRED``'s pid, started before its journal
line, so no reused pid), running as the job's user (its uid, against the
``submit`` event's userid). So a guest's shell speaks only for its own job, and
only once: the path is removed as the connection is taken; anyone else is hung
up on, and the socket listens on.

On a rank above 0 the job's records socket is that rank's exec-node's
(``pflux.exec.node``), which listens so, in its own ``exec/guests``, once told which
of its shells are guests' (``exec-node.keep``, with their userids).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import socket
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Final

from pflux.errors import EventlogError, RPCError
from pflux.protocol import shelljournal as journal
from pflux.protocol.kvs import GetRequest, value_of
from pflux.protocol.peer import peer_credentials
from pflux.protocol.shelljournal import Entry
from pflux.protocol.shellwire import key_job, key_name
from pflux.spec.eventlog import parse
from pflux.spec.fluid import JobID

if TYPE_CHECKING:
    from pflux.broker.router import Broker

__all__ = ["DIRECTORY", "Rendezvous", "guests_shells", "owner"]

log = logging.getLogger("pflux.job-exec")

DIRECTORY: Final = "guests"  # in exec/: the rendezvous


class Rendezvous:
    """``exec/guests`` and the sockets listening there, one for each guest's shell that
    may rejoin; ``on_met(key, connection)`` for each that does."""

    def __init__(self, exec_dir: str, on_met: Callable[[int, socket.socket], None]) -> None:
        self.path = os.path.join(exec_dir, DIRECTORY)
        self._on_met = on_met
        self._fd = -1
        self._loop: asyncio.AbstractEventLoop | None = None
        self._listening: dict[int, tuple[int, socket.socket, Entry, int]] = {}  # by fd

    def directory(self) -> int:
        """The directory's descriptor (``O_PATH``), made once, emptied of what an earlier
        job-exec left; -1 if it cannot be (then a guest's job ends with job-exec, as one
        given no rendezvous does)."""
        if self._fd < 0:
            try:
                self._fd = _open_directory(self.path)
            except OSError as exc:
                log.error("%s: %s (guests' jobs will not survive job-exec)", self.path, exc)
                return -1
            for name in os.listdir(f"/proc/self/fd/{self._fd}"):  # no job-exec listens there
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=self._fd)
        return self._fd

    def listen(
        self, loop: asyncio.AbstractEventLoop, shells: Mapping[int, tuple[Entry, int]]
    ) -> None:
        """Listen for each of ``shells`` (its key: its journal entry and its job's userid)
        at ``<key>``."""
        directory = self.directory()
        if directory < 0:
            return
        self._loop = loop
        for key, (entry, userid) in shells.items():
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(str(key), dir_fd=directory)
                sock.bind(f"/proc/self/fd/{directory}/{key}")
                os.chmod(str(key), 0o666, dir_fd=directory)
                sock.listen(8)
            except OSError as exc:
                log.error("job %s: cannot listen for its guest's shell: %s", key_name(key), exc)
                sock.close()
                continue
            sock.setblocking(False)
            self._listening[sock.fileno()] = (key, sock, entry, userid)
            loop.add_reader(sock.fileno(), self._ready, sock.fileno())

    def _ready(self, fd: int) -> None:
        found = self._listening.get(fd)
        if found is None:
            return
        key, listener, entry, userid = found
        conn = _accept_shell(listener, entry, userid)
        if conn is None:
            return
        self._stop(fd)
        self._on_met(key, conn)

    def _stop(self, fd: int) -> None:
        key, listener, _, _ = self._listening.pop(fd)
        if self._loop is not None:
            self._loop.remove_reader(fd)
        listener.close()
        with contextlib.suppress(OSError):
            os.unlink(str(key), dir_fd=self._fd)

    def close(self) -> None:
        """Listen no more (the shells not met have given up, or job-exec stops)."""
        for fd in list(self._listening):
            self._stop(fd)


def guests_shells(path: str, keys: Collection[int]) -> dict[int, Entry]:
    """Those of the shells ``keys`` that the journal ``path`` names as running as another
    user than this process's (guests'), with their entries."""
    shells = {}
    for key, entry in journal.live(path).items():
        if key in keys and entry[0] > 0 and journal.runs(entry):
            try:
                if os.stat(f"/proc/{entry[0]}").st_uid != os.getuid():
                    shells[key] = entry
            except OSError:
                continue
    return shells


async def owner(broker: Broker, key: int) -> int | None:
    """The userid of the job of shell ``key`` (its ``submit`` event's); None if unknown."""
    path = f"{JobID(key_job(key)).kvs}.eventlog"
    try:
        submit = parse(value_of(await broker.call("kvs.get", GetRequest(path))))[0]
        if submit.name != "submit" or submit.context is None:
            raise ValueError("its eventlog does not begin with its submit event")
        return int(submit.context["userid"])
    except (RPCError, EventlogError, LookupError, TypeError, ValueError) as exc:
        log.error("job %s: its owner is not known (%s)", key_name(key), exc)
        return None


def _accept_shell(listener: socket.socket, entry: Entry, userid: int) -> socket.socket | None:
    """The connection of the shell the journal ``entry`` names, running as ``userid``, if
    it has connected; others are closed."""
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:  # none waits (BlockingIOError), or it went away first
            return None
        pid, uid, _ = peer_credentials(conn)
        if pid == entry[0] and uid == userid and journal.runs(entry):
            return conn
        log.warning("refused uid %d (pid %d) at a guest's shell's rendezvous", uid, pid)
        conn.close()


def _open_directory(path: str) -> int:
    """``path`` (made if missing), a directory of this user's, mode 0711, opened ``O_PATH``."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o711)
    fd = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if os.fstat(fd).st_uid != os.getuid():
            raise OSError(errno.EPERM, "not the instance owner's")
        os.chmod(f"/proc/self/fd/{fd}", 0o711)  # guests may reach an entry, and list none
    except OSError:
        os.close(fd)
        raise
    return fd
