"""The shell launcher: one warm process that forks the job shells and relays for all of them.

Forking an interpreter that has already imported the shell costs about a
millisecond where starting one costs tens, so job-exec starts this process
once (``python -c LAUNCHER_COMMAND FD RECORDS JOURNAL [LISTENER]``) and it serves
every job: it forks shells ahead of need, gives each job to one, passes
signals on, reaps them, and keeps a shell that says DONE as a spare. The
shells send their records straight to job-exec on RECORDS; the launcher
reports only the status of a shell that could not. It runs in its own
session: when job-exec goes away without QUIT it DETACHes the shells and
waits on LISTENER (``exec/sock``) for the next job-exec (ATTACH, LIVE); the
shells of a launcher that died rejoin this one (REJOIN). Each shell journals
its session before any task starts (``pflux.protocol.shelljournal``), so nothing of a
job outlives the launchers' knowledge of it.

Every fork copies the launcher's page tables, so it keeps small: no
Python-level library it can do without (not asyncio, subprocess, logging or
typing; only the C modules of socket, signal and struct), started with
``-c``, its imports' memory given back, garbage collection frozen and off,
shells watched through their sockets rather than SIGCHLD. The protocol and
the reasons are in ``docs/architecture.md``, "The shell launcher".
"""

from __future__ import annotations

import _socket
import gc
import os
import select
import sys
import time

from pflux.protocol import shelljournal as journal
from pflux.protocol import shellwire as wire
from pflux.protocol.peer import peer_credentials
from pflux.shell.context import Context
from pflux.shell.job import SPOOLED
from pflux.shell.serve import SPAWN_CHUNK, serve
from pflux.shell.tasks import children, set_subreaper, trim_heap

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (mypy knows it)
if TYPE_CHECKING:  # typing stays out of the launcher (see the module docstring)
    import signal as _signal
    from typing import Final
else:
    import _signal  # not signal, which imports enum: the launcher keeps its imports few

__all__ = ["LauncherServer", "main"]

SHUTDOWN_GRACE: Final = 5.0  # seconds tasks get after SIGTERM when job-exec has gone
SPARES: Final = 4  # shells forked ahead of need
SPARES_LOW: Final = 1  # forking starts again when this few are left
SPARES_KEPT: Final = 16  # shells done with a job wait for another while there are fewer spares
RECV_SIZE: Final = 1 << 16  # more than job-exec sends at once, mostly
MAX_FD: Final = 1 << 30  # past any descriptor (closerange stops at the table's end)
JOURNAL_IDLE_LIMIT: Final = 1 << 16  # journal bytes worth rewriting when no shell runs
JOURNAL_BUSY_LIMIT: Final = 1 << 22  # journal bytes worth rewriting while shells run
# EXITED for an adopted shell that ended without DONE and without a spool
SPOOLED_EXIT: Final = b"-2 spooled"  # EXITED for a shell whose last records are in its spool
UNHEARD: Final = b"-1 job shell ended without its status while its launcher was replaced"
# EXITED for a shell given its job by a launcher that died, which ended before it recorded itself
UNSTARTED: Final = b"-3 job shell launcher died before the shell started the job"
# for tests: the launcher stops itself (SIGSTOP) once it has journalled a shell's job and before
# the shell has it, having written the shell's key to the file this names
STOP_AT_SPAWN: Final = "PFLUX_TEST_STOP_AT_SPAWN"
# for tests: before it compacts the journal the launcher writes "compacting" to the FIFO this names
# and reads the FIFO named so with ".go" added until its writer closes it, then compacts, writes
# "compacted" to the first and stops itself
STOP_AT_COMPACT: Final = "PFLUX_TEST_STOP_AT_COMPACT"
IMP_TIMEOUT: Final = 10.0  # seconds the privileged helper may take to take a request
IMP_CHUNK: Final = 65536  # a request to the helper goes in datagrams of this size
# a user's shells kept for the user's next jobs, at most: a user whose jobs run many at
# once needs as many, or each job past them waits for the helper to make a shell
GUEST_SPARES: Final = 16
GUEST_SPARES_KEPT: Final = 64  # guests' shells kept, all users together, at most
GUEST_IDLE: Final = 10.0  # seconds a guest's shell is kept without a job
# seconds between a detached launcher's looks at its directory: once the instance's state
# is removed, no job-exec can come back for its jobs
DETACHED_LOOK: Final = 2.0
_IN: Final = select.EPOLLIN
_CMSG_SPACE: Final = _socket.CMSG_SPACE(wire.FD_SIZE)
# room for the most guests' records sockets' ends a send of job-exec's passes
_ENDS_SPACE: Final = _socket.CMSG_SPACE(wire.FD_SIZE * wire.SPAWN_AS_ENDS)


class _Shell:
    __slots__ = (
        "adopted",
        "asking",
        "generation",
        "guest",
        "idle",
        "jobid",
        "note",
        "outbox",
        "pid",
        "pidfd",
        "records",
        "sock",
        "uid",
    )

    def __init__(self, pid: int, sock: _socket.socket, generation: int) -> None:
        self.jobid = -1  # a spare, until it is given a job
        self.pid = pid
        self.sock = sock  # the launcher's end of the shell's socket
        self.generation = generation  # the launcher's, when it was forked (see _retire_spares)
        self.adopted = False  # forked by a launcher that died: not our child
        # records the shell's socket could not take yet, in order, with a descriptor to
        # pass along (or -1): sent when it can (a busy shell reading a flood of input)
        self.outbox: list[tuple[bytes, int]] = []
        # a guest's shell, run as its user by the privileged helper (not ours); the
        # shell's end of its job's records socket (job-exec's, with SPAWN_AS), kept until
        # the helper answers; the connection waiting for that answer; the shell's pidfd;
        # why it was ended (for EXITED)
        self.guest = False
        self.records = -1
        self.asking: _socket.socket | None = None
        self.pidfd = -1
        self.note = b""
        self.uid = -1  # a guest's shell's user
        self.idle = 0.0  # when a guest's shell last became a spare (CLOCK_MONOTONIC)


class _Orphan:
    """A shell of a launcher that died, named by the journal, until it rejoins or ends."""

    __slots__ = ("held", "pid", "pidfd")

    def __init__(self, pid: int, pidfd: int) -> None:
        self.pid = pid
        self.pidfd = pidfd  # readable once the shell has exited
        self.held: list[bytes] = []  # what job-exec sent for the job meanwhile


class LauncherServer:
    """The launcher's loop (see the module docstring).

    Shells are forked ahead of need, so a job waits for a ``send`` rather than
    for a fork, which costs a millisecond here: when no more than
    ``SPARES_LOW`` are left, the launcher forks spares until there are
    ``SPARES``, one each time nothing else is ready. Several in a row, because
    after a fork every page the launcher writes costs it a page fault once:
    whatever it writes after the last of them is paid for once per batch
    rather than once per job.

    A shell is known by its socket: it says DONE on it when its job is over
    and reported, and is then a spare again (while there are fewer than
    ``SPARES_KEPT``: else it is retired). It is reaped when the socket
    reaches its end, which the shell's exit causes (no task inherits it), so
    the launcher needs no pidfd or SIGCHLD per shell. A shell that exits
    having reported its job's status exits with 0, before its teardown, which
    nobody waits for; one that left it in its spool with ``SPOOLED``, which
    job-exec hears of as EXITED ``-2`` (if it is there: else it finds the
    spool); for any other end, the launcher reports the shell's wait status.
    An adopted shell, not the launcher's child, has no wait status for it:
    one that ends without DONE is reported as spooled if its spool is there,
    else as ``UNHEARD``.
    """

    def __init__(
        self,
        link: _socket.socket,
        records: _socket.socket,
        journal_path: str,
        listener: _socket.socket | None = None,
    ) -> None:
        link.setblocking(False)
        self.link = link
        self.listener = listener  # where a job-exec connects (None: nobody could reconnect)
        self.records = records  # the shells' socket to job-exec, passed on to each
        self.journal_path = journal_path
        self.journal = os.open(
            journal_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600
        )
        self.devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        directory = os.path.dirname(journal_path) or "."
        self.exec_dir = os.open(directory, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        spool = os.path.join(directory, "spool")
        os.makedirs(spool, 0o700, exist_ok=True)
        self.context = Context(
            journal=self.journal,
            boot=journal.boot_id().encode(),
            devnull=self.devnull,
            cpus=tuple(sorted(os.sched_getaffinity(0))),
            cwd=os.getcwd(),
            path=os.environ.get("PATH"),
            records=records,
            spool=spool,
            exec_dir=self.exec_dir,
            uri=os.environ.get(wire.RANK_URI),
            rejoin_timeout=_seconds(os.environ.get(wire.REJOIN_TIMEOUT, "")),
        )
        # the descriptors a shell keeps, with its own socket
        self.keep = (0, 1, 2, self.journal, self.devnull, self.exec_dir, records.fileno())
        self.poller = select.epoll()
        self.poller.register(link.fileno(), _IN)
        if listener is not None:
            self.poller.register(listener.fileno(), _IN)
        self.callers: dict[int, _socket.socket] = {}  # connections not yet saying who calls
        self.orphans: dict[int, _Orphan] = {}  # by job: a dead launcher's shells to rejoin
        self.orphan_fds: dict[int, int] = {}  # their pidfds: the job
        self.unheard: set[int] = set()  # jobs whose shells, not ours, ended without DONE
        self.by_fd: dict[int, _Shell] = {}
        self.by_job: dict[int, _Shell] = {}
        self.spares: list[_Shell] = []  # the last is given the next job: a shell warm from one
        self.generation = 0  # shells forked before the last _retire_spares are not kept
        self.inbuf = bytearray()
        self.unsent = bytearray()  # records for job-exec, sent at the end of each turn
        self.writing = False  # waiting for job-exec's socket to be writable
        self.ended: list[bytes] = []  # the journal lines of the shells that ended
        self.died: dict[int, int] = {}  # wait statuses of shells that died with nobody told
        self.closing = False  # job-exec has closed its end after QUIT: wind down
        self.quit = False  # job-exec said it stops for good
        self.detached = False  # job-exec is gone; waiting for the next on the listener
        self.link_open = True
        self.buffer = bytearray(RECV_SIZE)
        self.stop_at_spawn = os.environ.get(STOP_AT_SPAWN)
        self.stop_at_compact = os.environ.get(STOP_AT_COMPACT)
        self.imp = os.environ.get(wire.IMP_SOCKET)  # the privileged helper's socket, if any
        self.asking: dict[int, _Shell] = {}  # connections to the helper, by descriptor
        self.guest_fds: dict[int, _Shell] = {}  # guest shells' pidfds
        # guests' shells' ends of their records sockets job-exec passed, in order, each
        # for the next SPAWN_AS read; those let go of once job-exec has what precedes
        self.ends: list[int] = []
        self.ends_held: list[int] = []
        # guests' shells done with a job, each waiting for another of its user's, by uid
        self.guest_spares: dict[int, list[_Shell]] = {}
        if listener is not None:
            self._accept()  # shells that rejoined before it started
        self._watch_orphans()

    def run(self) -> int:
        refill = False  # forking spares, until there are SPARES of them
        while not self.closing:
            if self.detached and not self.by_job and not self.orphans:
                break  # nothing left to take over
            wanted = not self.detached and len(self.spares) < SPARES
            refill = (refill or len(self.spares) <= SPARES_LOW) and wanted
            if not self._turn(0 if refill else self._wait()) and refill:
                refill = self._fork()  # one at a time: what is ready goes first
            if self.guest_spares:
                self._retire_idle_guests()
            if self.detached and os.fstat(self.exec_dir).st_nlink == 0:
                self.closing = True  # its directory is removed: its jobs end with it
        if self.closing:
            self._shutdown()
        return 0

    def _turn(self, timeout: float) -> bool:
        """Handle what is ready (waiting up to ``timeout``); False if nothing was."""
        link = self.link.fileno() if self.link_open else -1
        listener = self.listener.fileno() if self.listener is not None else -1
        by_fd = self.by_fd
        ready = self.poller.poll(timeout)
        for fd, events in ready:
            if fd == link:
                if events & select.EPOLLOUT:
                    self._write_link()
                if events & ~select.EPOLLOUT:
                    self._from_jobexec()
            elif fd in by_fd:
                self._shell_ready(by_fd[fd], events)
            elif fd == listener:
                self._accept()
            elif fd in self.callers:
                self._from_caller(self.callers[fd])
            elif fd in self.orphan_fds:
                self._orphan_ended(self.orphan_fds[fd])
            else:
                self._guest_ready(fd, events)
        if self.unsent and not self.writing:
            self._write_link()
        if self.ended:
            os.write(self.journal, b"".join(self.ended))
            self.ended.clear()
            if not self.detached:
                self._trim_journal()
        return bool(ready)

    # --- job-exec's requests ------------------------------------------------------------

    def _from_jobexec(self) -> bool:
        """Handle what job-exec sent; False once nothing more is there (or its end was)."""
        try:
            data, ancillary, _, _ = self.link.recvmsg(RECV_SIZE, _ENDS_SPACE)
        except BlockingIOError:
            return False
        except OSError:
            data, ancillary = b"", []
        if ancillary:  # guests' records sockets' ends, for the SPAWN_AS records they precede
            self.ends += wire.passed_fds(ancillary)
        if not data:
            self._link_closed()
            return False
        self.inbuf += data
        records, used = wire.split(self.inbuf)
        del self.inbuf[:used]
        for kind, jobid, payload in records:
            self._request(kind, jobid, payload)
        return True

    def _request(self, kind: bytes, jobid: int, payload: bytes) -> None:
        if kind == wire.SPAWN:
            self._spawn(jobid, payload)
        elif kind in _PASSED_ON:
            self._to_shell(jobid, wire.record(kind, jobid, payload))
        elif kind == wire.RESUME:
            entry = self.by_job.get(jobid)
            if entry is None or not entry.guest:  # a guest's shell never gets job-exec's
                self._to_shell(jobid, wire.record(kind, jobid, payload), self.records.fileno())
        elif kind == wire.TERMINATE:
            entry = self.by_job.get(jobid)
            if entry is not None and entry.guest:
                self._end_guest(entry, b"")  # not ours to signal: it ends its tasks itself
                return
            target = entry or self.orphans.get(jobid)
            if target is not None:
                _signal_group(target.pid, int(payload))
        elif kind == wire.SPAWN_AS:
            self._spawn_guest(jobid, payload, self.ends.pop(0) if self.ends else -1)
        elif kind == wire.QUIT:
            self.quit = True
            for entry in self.by_job.values():
                self._to_shell(entry.jobid, wire.record(wire.QUIT, entry.jobid))

    def _link_closed(self) -> None:
        """job-exec has stopped sending (and, the second time, reading)."""
        if self.listener is not None and not self.quit:
            self._detach()  # its broker died: wait for the next
            return
        if self.closing:  # hung up altogether: nothing more can be sent either
            self.poller.unregister(self.link.fileno())
            self.link_open = False
            self.unsent.clear()
            self._let_go_ends()
            return
        self.closing = True
        self.poller.modify(self.link.fileno(), select.EPOLLOUT if self.writing else 0)

    def _detach(self) -> None:
        """job-exec died: keep the jobs, tell their shells to spool, wait for the next one."""
        self.poller.unregister(self.link.fileno())
        self.link.close()
        self.link_open = False
        self.detached = True
        self.writing = False
        self.unsent.clear()
        self.inbuf.clear()
        for fd in self.ends:  # of SPAWN_AS records it did not finish sending
            os.close(fd)
        self.ends.clear()
        self._let_go_ends()
        self._retire_spares()  # they hold the dead job-exec's socket
        self._retire_guest_spares()  # a guest's shell does not outlive its job-exec
        for entry in list(self.by_job.values()):
            if not entry.guest:  # a guest's shell's socket to job-exec has ended: it knows
                self._to_shell(entry.jobid, wire.record(wire.DETACH, entry.jobid))

    def _accept(self) -> None:
        """Connections on the listener: a new job-exec's, or shells' that rejoin."""
        assert self.listener is not None
        while (conn := _accept_own(self.listener)) is not None:
            conn.setblocking(False)
            self.callers[conn.fileno()] = conn
            self.poller.register(conn.fileno(), _IN)
            self._from_caller(conn)  # what was sent with the connection is there already

    def _from_caller(self, conn: _socket.socket) -> None:
        """A connection's first record: ATTACH (a job-exec) or REJOIN (a shell)."""
        try:
            data, ancillary, _, _ = conn.recvmsg(RECV_SIZE, _CMSG_SPACE)
        except BlockingIOError:
            return
        except OSError:
            data, ancillary = b"", []
        fd = conn.fileno()
        del self.callers[fd]
        fds = wire.passed_fds(ancillary)
        records = wire.split(data)[0]
        kind, jobid, payload = records[0] if records and fds else (b"", 0, b"")
        while kind == wire.ATTACH and not self.detached and self.link_open:
            # a job-exec that died just before: its end may be read after this ATTACH
            if not self._from_jobexec():
                break
        if kind == wire.ATTACH and self.detached:
            self._attached(conn, fds.pop(0))
        else:
            self.poller.unregister(fd)
            conn.close()
            if kind == wire.REJOIN and payload.isdigit():
                self._adopt(jobid, int(payload), fds.pop(0))
        for extra in fds:
            os.close(extra)

    def _attached(self, conn: _socket.socket, fd: int) -> None:
        """ATTACH: the shells' new socket to job-exec; answer with what runs and what died.

        The answer (LIVE) comes with the listening socket, which job-exec keeps
        so that the shells can rejoin the launcher it starts if this one dies.
        """
        self.link = conn
        self.link_open = True
        os.dup2(fd, self.records.fileno(), inheritable=False)  # shells forked later inherit it
        os.close(fd)
        self.detached = False
        lines = [b"%d\n" % jobid for jobid in self.by_job]
        lines += [b"%d %d\n" % item for item in self.died.items()]
        self.died.clear()
        live = wire.record(wire.LIVE, os.getpid(), b"".join(lines))
        assert self.listener is not None  # ATTACH came through it
        passed = self.listener.fileno().to_bytes(wire.FD_SIZE, sys.byteorder)
        try:  # a new connection: its buffer is empty
            sent = conn.sendmsg([live], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, passed)])
        except OSError:
            sent = 0
        self.unsent[:0] = live[sent:]

    def _to_shell(self, jobid: int, data: bytes, fd: int = -1) -> None:
        """Pass a record to the job's shell: now, or once its socket can take it."""
        target = self.by_job.get(jobid)
        if target is None:
            orphan = self.orphans.get(jobid)
            if orphan is not None and fd < 0:
                orphan.held.append(data)  # given to the shell when it rejoins
            return
        if target.outbox:  # earlier records wait: this one goes after them
            target.outbox.append((data, fd))
        elif not _send_to(target, data, fd):
            target.outbox.append((data, fd))
            self.poller.modify(target.sock.fileno(), _IN | select.EPOLLOUT)

    def _drain(self, entry: _Shell) -> None:
        """The shell's socket can take more: send what waits for it, in order."""
        outbox = entry.outbox
        while outbox and _send_to(entry, *outbox[0]):
            del outbox[0]
        if not outbox:
            self.poller.modify(entry.sock.fileno(), _IN)

    def _spawn(self, jobid: int, description: bytes) -> None:
        """Give the job to a spare shell (forking one if there is none)."""
        if jobid in self.by_job:
            self._not_started(jobid, "a shell for the job runs already")
            return
        if not self.spares and not self._fork():
            self._not_started(jobid, "cannot fork a job shell")
            self.ended.append(journal.end_lines([jobid]))  # job-exec's Q: no shell has it
            return
        entry = self.spares.pop()
        data = wire.record(wire.SPAWN, jobid, description)
        # journalled before the shell has it: a launcher that dies now leaves word of it
        when = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
        os.write(self.journal, journal.given_line(jobid, entry.pid, when, self.context.boot))
        if self.stop_at_spawn:
            self._stop_at_spawn(jobid)
        try:
            for start in range(0, len(data), SPAWN_CHUNK):
                entry.sock.send(data[start : start + SPAWN_CHUNK])
        except OSError as exc:  # the spare has died: it is reaped as spares are
            self._not_started(jobid, f"job shell: {exc.strerror}")
            self.ended.append(journal.end_lines([jobid]))
            return
        entry.jobid = jobid
        self.by_job[jobid] = entry

    def _stop_at_spawn(self, key: int) -> None:
        """For tests (``STOP_AT_SPAWN``): write the shell's key there, then stop, between
        the journal and the shell."""
        assert self.stop_at_spawn is not None
        _tell_test(self.stop_at_spawn, b"%d\n" % key)
        os.kill(os.getpid(), _signal.SIGSTOP)

    def _not_started(self, jobid: int, reason: str) -> None:
        self.unsent += wire.record(wire.EXITED, jobid, f"-1 {reason}".encode())

    def _fork(self) -> bool:
        """Fork a spare shell; False (having said why) if the system refuses."""
        try:
            ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
        except OSError as exc:
            sys.stderr.write(f"pflux-launcher: socketpair: {exc.strerror}\n")
            return False
        try:
            pid = os.fork()
        except OSError as exc:
            ours.close()
            theirs.close()
            sys.stderr.write(f"pflux-launcher: fork: {exc.strerror}\n")
            return False
        if pid == 0:
            self._child(theirs)
        theirs.close()
        entry = _Shell(pid, ours, self.generation)
        self.spares.append(entry)
        self.by_fd[ours.fileno()] = entry
        self.poller.register(ours.fileno(), _IN)
        return True

    def _child(self, sock: _socket.socket) -> None:
        """In the forked shell: keep only what the shell uses, then serve; never returns.

        Every page a forked shell writes costs a fault, so this does as little as it can:
        the context is made once, in the launcher.
        """
        code = 1
        try:
            low = 0
            for fd in sorted((*self.keep, sock.fileno())):
                if fd > low:  # closerange(n, n) would close everything from n on
                    os.closerange(low, fd)
                low = fd + 1
            os.closerange(low, MAX_FD)
            code = serve(self.context, sock)
        finally:
            os._exit(code)

    # --- the shells ---------------------------------------------------------------------

    def _shell_ready(self, entry: _Shell, events: int) -> None:
        if events & select.EPOLLOUT:
            self._drain(entry)
        if events & ~select.EPOLLOUT:
            self._from_shell(entry)

    def _from_shell(self, entry: _Shell) -> None:
        """A shell's socket is readable: it has ended, or it is done with its job."""
        try:
            n = entry.sock.recv_into(self.buffer, RECV_SIZE, _socket.MSG_DONTWAIT)
        except BlockingIOError:
            return
        except OSError:
            n = 0
        if not n:
            self._reap(entry)
            return
        found = wire.split(memoryview(self.buffer)[:n])[0]
        if entry.guest:  # a guest's shell says DONE on it, and nothing else
            if any(kind == wire.DONE and key == entry.jobid >= 0 for kind, key, _ in found):
                self._guest_done(entry)
            return
        for kind, jobid, _ in found:
            if kind == wire.DONE and jobid == entry.jobid >= 0:
                self._done(entry)

    def _done(self, entry: _Shell) -> None:
        """The shell has reported its job's end and waits for another: keep it, or retire it."""
        del self.by_job[entry.jobid]
        self.ended.append(journal.end_lines([entry.jobid]))
        entry.jobid = -1
        if entry.outbox:  # for the job that is over: moot
            entry.outbox.clear()
            self.poller.modify(entry.sock.fileno(), _IN)
        kept = entry.generation == self.generation and len(self.spares) < SPARES_KEPT
        kept = kept and not entry.adopted  # not our child: we could not reap it
        if kept and not (self.quit or self.closing or self.detached):
            self.spares.append(entry)
        else:
            _retire(entry)

    def _reap(self, entry: _Shell) -> None:
        """The shell's socket has reached its end: the shell has exited, or is exiting."""
        if entry.guest:
            self._guest_ended(entry)
            return
        fd = entry.sock.fileno()
        self.poller.unregister(fd)
        del self.by_fd[fd]
        entry.sock.close()
        if entry.adopted:  # not our child: it said DONE, or its job ended unheard
            if entry.jobid >= 0:
                del self.by_job[entry.jobid]
                self._ended_unheard(entry.jobid)
            return
        _, status = os.waitpid(entry.pid, 0)
        if os.WIFSIGNALED(status):
            self._kill_orphans()  # the shell could not clean up: its tasks are ours now
        if entry.jobid < 0:
            if entry in self.spares:
                self.spares.remove(entry)
            return
        del self.by_job[entry.jobid]
        spooled = os.WIFEXITED(status) and os.WEXITSTATUS(status) == SPOOLED
        if not status or spooled:
            if spooled and not self.detached:  # it ended before job-exec resumed it
                self.unsent += wire.record(wire.EXITED, entry.jobid, SPOOLED_EXIT)
            self.ended.append(journal.end_lines([entry.jobid]))
        elif self.detached:  # nobody to tell now: the journal and the next job-exec are
            self.died[entry.jobid] = status
            self.ended.append(journal.ended_line(entry.jobid, status))
        else:  # it could not report the job's status itself
            self.unsent += wire.record(wire.EXITED, entry.jobid, b"%d" % status)
            self.ended.append(journal.end_lines([entry.jobid]))

    # --- guests' shells, run as their users by the privileged helper ---------------------

    def _spawn_guest(self, jobid: int, payload: bytes, records: int) -> None:
        """Ask the helper to run a guest's job (SPAWN_AS) on two sockets of the shell's own.

        A shell that runs as the user holds nothing another job shares (the
        shells' socket, the journal, the spool): its control socket is the
        launcher's, its records socket the job's own, ``records`` its end, which
        job-exec made and passed with the request, and whose other end it reads
        as the job's alone. A job not started is EXITED before the launcher lets
        go of that end, so that job-exec hears why before the socket ends.
        """
        if records < 0:
            self._not_started(jobid, "the job came without its records socket")
            self.ended.append(journal.end_lines([jobid]))
            return
        if jobid in self.by_job:
            self._not_started(jobid, "a shell for the job runs already")
            self._let_go_end(records)
            return
        if not self.imp:
            self._not_started(jobid, "no privileged helper is configured ([exec] imp)")
            self.ended.append(journal.end_lines([jobid]))
            self._let_go_end(records)
            return
        uri = (self.context.uri or "").encode()
        data = wire.record(wire.SPAWN_AS, jobid, b"%s\n%s" % (uri, payload))
        userid = payload.split(b"\n", 1)[0]
        uid = int(userid) if userid.isdigit() else -1
        spare = self._guest_spare(uid)
        if spare is not None and self._give_guest(spare, jobid, data, records):
            return
        ends: list[_socket.socket] = []
        try:
            ends += _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
            conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
            ends.append(conn)
            conn.settimeout(IMP_TIMEOUT)
            conn.connect(self.imp)
            passed = b"".join(
                fd.to_bytes(wire.FD_SIZE, sys.byteorder) for fd in (ends[1].fileno(), records)
            )
            rights = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, passed)]
            conn.sendmsg([data[:IMP_CHUNK]], rights)
            for start in range(IMP_CHUNK, len(data), IMP_CHUNK):
                conn.send(data[start : start + IMP_CHUNK])
        except OSError as exc:
            why = _refusal(ends[2]) if len(ends) == 3 else ""  # it may have said why it hung up
            for sock in ends:
                sock.close()
            why = why or f"privileged helper {self.imp}: {exc.strerror or exc}"
            self._not_started(jobid, why)
            self.ended.append(journal.end_lines([jobid]))
            self._let_go_end(records)
            return
        ends[1].close()  # the helper has the shell's control end now
        conn.setblocking(False)
        entry = _Shell(0, ends[0], self.generation)
        entry.adopted = True  # not our child
        entry.guest = True
        entry.jobid = jobid
        entry.uid = uid
        entry.records = records  # kept until the helper answers
        entry.asking = conn
        self.by_job[jobid] = entry  # what job-exec sends waits in the shell's socket
        self.asking[conn.fileno()] = entry
        self.poller.register(conn.fileno(), _IN)

    def _guest_ready(self, fd: int, events: int) -> None:
        entry = self.asking.get(fd)
        if entry is not None:
            self._helper_answered(entry)
            return
        entry = self.guest_fds.get(fd)
        if entry is not None:
            self._guest_ended(entry)  # its pidfd: it has exited

    def _helper_answered(self, entry: _Shell) -> None:
        """The helper's answer: the shell's pid (it runs), or why it refused."""
        conn = entry.asking
        assert conn is not None
        try:
            data = conn.recv(RECV_SIZE)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        del self.asking[conn.fileno()]
        self.poller.unregister(conn.fileno())
        conn.close()
        entry.asking = None
        found = wire.split(data)[0]
        kind, key, payload = found[0] if found else (b"", 0, b"")
        if kind != wire.STARTED or key != entry.jobid or not payload.isdigit():
            why = payload.decode(errors="replace") if kind == wire.EXCEPTION else "no answer"
            self._not_started(entry.jobid, f"privileged helper: {why}")
            self.ended.append(journal.end_lines([entry.jobid]))
            self._forget_guest(entry)
            return
        os.close(entry.records)  # the shell has its end
        entry.records = -1
        entry.pid = int(payload)
        when = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
        boot = self.context.boot
        lines = journal.given_line(entry.jobid, entry.pid, when, boot)
        os.write(self.journal, lines + journal.start_line(entry.jobid, entry.pid, when, boot))
        self.by_fd[entry.sock.fileno()] = entry
        self.poller.register(entry.sock.fileno(), _IN)
        try:
            entry.pidfd = os.pidfd_open(entry.pid)
        except OSError:  # it has ended already: its socket says so
            return
        self.guest_fds[entry.pidfd] = entry
        self.poller.register(entry.pidfd, _IN)

    def _let_go_end(self, fd: int) -> None:
        """Close a guest's records socket's end once what job-exec is to hear first (the
        job's EXITED) is sent: job-exec reads the launcher before ending a job whose
        socket ended."""
        if self.unsent:
            self.ends_held.append(fd)
        else:
            os.close(fd)

    def _let_go_ends(self) -> None:
        for fd in self.ends_held:
            os.close(fd)
        self.ends_held.clear()

    def _end_guest(self, entry: _Shell, note: bytes) -> None:
        """End a guest's job: close its shell's socket, so that it kills its tasks and
        exits; its end is its pidfd's."""
        self._unspare(entry)
        if note and not entry.note:
            entry.note = note
        if entry.asking is not None:  # not started yet: the helper's child finds it closed
            self._not_started(entry.jobid, (note or b"job shell ended").decode())
            self.ended.append(journal.end_lines([entry.jobid]))
            self._forget_guest(entry)
            return
        _retire(entry)
        fd = entry.sock.fileno()
        if self.by_fd.pop(fd, None) is not None:
            self.poller.unregister(fd)
        if entry.pidfd < 0:  # gone already
            self._guest_ended(entry)

    def _guest_ended(self, entry: _Shell) -> None:
        """A guest's shell has exited (or is forgotten): its job's end, if it had one.

        Its records went to job-exec, which reads what it sent before this
        EXITED, and takes the shell's own if it sent one.
        """
        if entry.jobid < 0:  # a spare: nothing of a job is left with it
            self._unspare(entry)
            self._forget_guest(entry)
            return
        if self.by_job.get(entry.jobid) is not entry:
            return
        self._forget_guest(entry)
        jobid = entry.jobid
        if self.detached:
            self.died[jobid] = _signal.SIGKILL
            self.ended.append(journal.ended_line(jobid, _signal.SIGKILL))
        else:
            note = entry.note or b"job shell ended without its status"
            self.unsent += wire.record(wire.EXITED, jobid, b"-1 " + note)
            self.ended.append(journal.end_lines([jobid]))

    def _guest_done(self, entry: _Shell) -> None:
        """A guest's shell has ended its job and waits for another of its user's: keep it
        for one (the user's next job then costs neither the helper nor a fork; the shell
        checks its J itself), or let it end as a shell used once does."""
        del self.by_job[entry.jobid]
        self.ended.append(journal.end_lines([entry.jobid]))
        entry.jobid = -1
        entry.note = b""
        if entry.outbox:  # for the job that is over: moot
            entry.outbox.clear()
            self.poller.modify(entry.sock.fileno(), _IN)
        spares = self.guest_spares.get(entry.uid, [])
        kept = len(spares) < GUEST_SPARES
        kept = kept and sum(map(len, self.guest_spares.values())) < GUEST_SPARES_KEPT
        if not kept or self.quit or self.closing or self.detached:
            _retire(entry)  # it exits, a spare's end
            return
        entry.idle = time.monotonic()
        self.guest_spares.setdefault(entry.uid, []).append(entry)

    def _guest_spare(self, uid: int) -> _Shell | None:
        """A spare shell of ``uid``'s, taken from the spares; None if there is none."""
        spares = self.guest_spares.get(uid)
        if not spares:
            return None
        entry = spares.pop()
        if not spares:
            del self.guest_spares[uid]
        return entry

    def _give_guest(self, entry: _Shell, jobid: int, data: bytes, records: int) -> bool:
        """Give a guest's job (its SPAWN_AS record, ``data``) to a spare shell of its
        user's, with the shell's end of the job's own records socket (``records``, then
        closed here), journalled as the helper's shells are; False if the shell is gone."""
        try:
            passed = records.to_bytes(wire.FD_SIZE, sys.byteorder)
            rights = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, passed)]
            entry.sock.sendmsg([data[:SPAWN_CHUNK]], rights)
        except OSError:
            _retire(entry)  # it has ended: its socket's end forgets it
            return False
        os.close(records)
        try:
            for start in range(SPAWN_CHUNK, len(data), SPAWN_CHUNK):
                entry.sock.send(data[start : start + SPAWN_CHUNK])
        except OSError:
            _retire(entry)  # it has ended with the job: its socket's end says so
        entry.jobid = jobid
        self.by_job[jobid] = entry
        when = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
        boot = self.context.boot
        lines = journal.given_line(jobid, entry.pid, when, boot)
        os.write(self.journal, lines + journal.start_line(jobid, entry.pid, when, boot))
        return True

    def _unspare(self, entry: _Shell) -> None:
        """Take a guest's shell from the spares, if it is one."""
        spares = self.guest_spares.get(entry.uid)
        if spares and entry in spares:
            spares.remove(entry)
            if not spares:
                del self.guest_spares[entry.uid]

    def _wait(self) -> float:
        """Seconds the next turn may wait for something to happen (-1: for ever)."""
        wait = self._guest_wait()
        if self.detached:
            return DETACHED_LOOK if wait < 0 else min(wait, DETACHED_LOOK)
        return wait

    def _guest_wait(self) -> float:
        """Seconds until the longest idle guest's spare is to be retired (-1: none)."""
        if not self.guest_spares:
            return -1
        oldest = min(entry.idle for spares in self.guest_spares.values() for entry in spares)
        return max(0.0, oldest + GUEST_IDLE - time.monotonic())

    def _retire_idle_guests(self) -> None:
        """Retire guests' spares idle for GUEST_IDLE seconds: a user's process lingers no
        longer than that after its last job."""
        limit = time.monotonic() - GUEST_IDLE
        for spares in list(self.guest_spares.values()):
            for entry in [e for e in spares if e.idle <= limit]:
                self._unspare(entry)
                _retire(entry)  # it exits; its socket's end forgets it

    def _retire_guest_spares(self) -> None:
        """Retire every guest's spare (they exit; their sockets' ends forget them)."""
        for spares in self.guest_spares.values():
            for entry in spares:
                _retire(entry)
        self.guest_spares.clear()

    def _forget_guest(self, entry: _Shell) -> None:
        """Close everything of a guest's shell here."""
        if self.by_job.get(entry.jobid) is entry:
            del self.by_job[entry.jobid]
        if entry.records >= 0:
            self._let_go_end(entry.records)
            entry.records = -1
        for sock in (entry.asking, entry.sock):
            if sock is None or sock.fileno() < 0:
                continue
            fd = sock.fileno()
            if (
                self.by_fd.pop(fd, None)
                or self.guest_fds.pop(fd, None)
                or self.asking.pop(fd, None)
            ):
                self.poller.unregister(fd)
            sock.close()
        if entry.pidfd >= 0:
            del self.guest_fds[entry.pidfd]
            self.poller.unregister(entry.pidfd)
            os.close(entry.pidfd)
            entry.pidfd = -1
        entry.asking = None

    # --- the shells of a launcher that died -----------------------------------------------

    def _watch_orphans(self) -> None:
        """Watch the shells the journal names as running: a dead launcher's, to rejoin."""
        for jobid, entry in journal.live(self.journal_path).items():
            if jobid in self.by_job or not entry[0]:
                continue  # rejoined already, or only asked for (Q): no shell to watch
            pidfd = -1
            if journal.runs(entry):
                try:
                    pidfd = os.pidfd_open(entry[0])
                except OSError:
                    pidfd = -1
            if pidfd < 0:
                self._ended_unheard(jobid)
                continue
            self.orphans[jobid] = _Orphan(entry[0], pidfd)
            self.orphan_fds[pidfd] = jobid
            self.poller.register(pidfd, _IN)

    def _forget_orphan(self, jobid: int) -> _Orphan | None:
        orphan = self.orphans.pop(jobid, None)
        if orphan is not None:
            del self.orphan_fds[orphan.pidfd]
            self.poller.unregister(orphan.pidfd)
            os.close(orphan.pidfd)
        return orphan

    def _adopt(self, jobid: int, pid: int, fd: int) -> None:
        """REJOIN: a dead launcher's shell, with a new socket to it; job-exec hears (LIVE)."""
        try:
            sock = _socket.socket(fileno=fd)
        except OSError:  # not a socket: not a shell's
            os.close(fd)
            return
        if sock.type != _socket.SOCK_SEQPACKET or jobid in self.by_job or jobid in self.unheard:
            sock.close()  # one shell per key, and this one was found dead
            return
        entry = _Shell(pid, sock, self.generation)
        entry.adopted = True
        entry.jobid = jobid
        self.by_job[jobid] = entry
        self.by_fd[fd] = entry
        self.poller.register(fd, _IN)
        orphan = self._forget_orphan(jobid)
        for data in orphan.held if orphan is not None else ():
            self._to_shell(jobid, data)
        if not self.detached:
            self.unsent += wire.record(wire.LIVE, os.getpid(), b"%d\n" % jobid)

    def _orphan_ended(self, jobid: int) -> None:
        """A dead launcher's shell has exited: rejoined first (its connection waits), or not."""
        if self.listener is not None:
            self._accept()
        if self._forget_orphan(jobid) is not None:
            self._ended_unheard(jobid)

    def _ended_unheard(self, jobid: int) -> None:
        """A shell not ours ended without DONE: its records are in its spool, or it died,
        or it was given the job but ended before it recorded itself (no task ran).

        Whatever its session left running is killed, and its end journalled.
        """
        self.unheard.add(jobid)
        if not self.detached:
            entry = journal.live(self.journal_path).get(jobid)
            if entry is not None and entry[3]:
                exited = UNSTARTED
            elif os.path.exists(os.path.join(self.context.spool, str(jobid))):
                exited = SPOOLED_EXIT
            else:
                exited = UNHEARD
            self.unsent += wire.record(wire.EXITED, jobid, exited)
        journal.kill_recorded(self.journal_path, [jobid])

    def _kill_orphans(self) -> None:
        """Kill and reap adopted processes: what shells that died left running."""
        shells = {entry.pid for entry in self.by_fd.values()}
        while orphans := [pid for pid in children() if pid not in shells]:
            for pid in orphans:
                _signal_group(pid, _signal.SIGKILL, group=False)
            for pid in orphans:
                try:
                    os.waitpid(pid, 0)
                except ChildProcessError:
                    continue

    def _retire_spares(self) -> None:
        """End the spares, and the busy shells once they are done: they hold what changed.

        That is job-exec's socket (``_detach``), which shells forked from now on
        inherit anew.
        """
        for entry in self.spares:
            _retire(entry)
        self.spares.clear()  # reaped when their socket ends, as any shell
        self.generation += 1

    # --- the journal and job-exec's socket ----------------------------------------------

    def _trim_journal(self) -> None:
        size = os.fstat(self.journal).st_size
        if size > (JOURNAL_BUSY_LIMIT if self.by_job else JOURNAL_IDLE_LIMIT):
            shells = {jobid: entry.pid for jobid, entry in self.orphans.items()}
            shells.update((jobid, entry.pid) for jobid, entry in self.by_job.items() if entry.pid)
            if self.stop_at_compact:
                _tell_test(self.stop_at_compact, b"compacting\n")
                _wait_test(self.stop_at_compact + ".go")
            compacted = journal.compact(self.journal_path, self.journal, shells)
            if self.stop_at_compact:
                _tell_test(self.stop_at_compact, b"compacted\n")
                os.kill(os.getpid(), _signal.SIGSTOP)
            if compacted:
                self._pass_journal()

    def _pass_journal(self) -> None:
        """Give each spare the rewritten journal (JOURNAL), which it records its next job
        in: a spare kept costs a send, one forked again a fork and its page faults. The
        busy shells, which hold the old one, are retired once done, as after a detach."""
        passed = self.journal.to_bytes(wire.FD_SIZE, sys.byteorder)
        rights = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, passed)]
        record = wire.record(wire.JOURNAL, 0)
        kept = []
        for entry in self.spares:
            try:
                entry.sock.sendmsg([record], rights, _socket.MSG_DONTWAIT)
            except OSError:
                _retire(entry)  # it has ended, or cannot take it: it holds the old journal
                continue
            kept.append(entry)
        self.spares[:] = kept
        self.generation += 1
        for entry in kept:
            entry.generation = self.generation

    def _write_link(self) -> None:
        """Send what job-exec has not taken; wait for its socket when it is full."""
        if not self.link_open:
            self.unsent.clear()
            self._let_go_ends()
            return
        try:
            sent = self.link.send(self.unsent)
        except BlockingIOError:
            sent = 0
        except OSError:
            sent = len(self.unsent)  # job-exec is gone: nobody to tell
        del self.unsent[:sent]
        if self.ends_held and not self.unsent:
            self._let_go_ends()
        writing = bool(self.unsent)
        if writing != self.writing:
            self.writing = writing
            events = (0 if self.closing else _IN) | (select.EPOLLOUT if writing else 0)
            self.poller.modify(self.link.fileno(), events)

    def _shutdown(self) -> None:
        """job-exec is gone: SIGTERM every task, then after the grace SIGKILL the shells."""
        self._retire_spares()
        self._retire_guest_spares()
        for jobid in self.by_job:
            self._to_shell(jobid, wire.record(wire.QUIT, jobid))
            self._to_shell(jobid, wire.record(wire.KILL, jobid, b"%d" % _signal.SIGTERM))
        deadline = time.monotonic() + SHUTDOWN_GRACE
        while self.by_fd and time.monotonic() < deadline:
            self._turn(deadline - time.monotonic())
        for entry in list(self.by_fd.values()):
            if entry.guest:  # not ours to kill: it kills its tasks when forgotten
                self._guest_ended(entry)
            else:
                _signal_group(entry.pid, _signal.SIGKILL)
        while self.by_fd:
            self._turn(-1)
        self._kill_orphans()
        journal.kill_recorded(self.journal_path, list(self.orphans))


_PASSED_ON: Final = (wire.KILL, wire.ACK, wire.INPUT, wire.WINSIZE, wire.FENCE)


def _send_to(entry: _Shell, data: bytes, fd: int) -> bool:
    """Send a record (passing ``fd`` if not -1); False if the shell's socket is full.

    A shell that is gone counts as sent: its end is reported anyway.
    """
    try:
        if fd < 0:
            entry.sock.send(data, _socket.MSG_DONTWAIT)
        else:
            passed = fd.to_bytes(wire.FD_SIZE, sys.byteorder)
            rights = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, passed)]
            entry.sock.sendmsg([data], rights, _socket.MSG_DONTWAIT)
    except BlockingIOError:
        return False
    except OSError:
        pass
    return True


def _refusal(conn: _socket.socket) -> str:
    """The helper's refusal waiting on ``conn``, as the job's note; "" if none is there."""
    try:
        data = conn.recv(RECV_SIZE, _socket.MSG_DONTWAIT)
    except OSError:
        return ""
    found = wire.split(data)[0]
    if not found or found[0][0] != wire.EXCEPTION:
        return ""
    return f"privileged helper: {found[0][2].decode(errors='replace')}"


def _tell_test(path: str, data: bytes) -> None:
    """For tests: write ``data`` to the file ``path`` (a FIFO: once a reader has it open)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _wait_test(path: str) -> None:
    """For tests: read the FIFO ``path`` until its writer closes it."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)  # once a writer opens it
    try:
        while os.read(fd, 64):
            continue
    finally:
        os.close(fd)


def _retire(entry: _Shell) -> None:
    """Close the launcher's end of a shell's socket: a shell waiting for a job exits."""
    try:
        entry.sock.shutdown(_socket.SHUT_RDWR)
    except OSError:
        return


def _signal_group(pid: int, signum: int, *, group: bool = True) -> None:
    """Signal a process group (a shell's own, since it leads its session), or a process."""
    try:
        if group:
            os.killpg(pid, signum)
        else:
            os.kill(pid, signum)
    except (ProcessLookupError, PermissionError, ValueError):  # gone, or a guest's
        return


def _seconds(text: str) -> float:
    """A number of seconds job-exec passed (checked there); 0 for none or a bad one."""
    try:
        seconds = float(text)
    except ValueError:
        return 0.0
    return seconds if 0 < seconds < float("inf") else 0.0


def _accept_own(listener: _socket.socket) -> _socket.socket | None:
    """A connection from our own user (others are closed), or None if none is waiting."""
    while True:
        try:
            fd, _ = listener._accept()  # type: ignore[attr-defined]  # the C socket's accept
        except BlockingIOError:
            return None
        conn = _socket.socket(fileno=fd)
        if peer_credentials(conn)[1] == os.getuid():
            return conn
        conn.close()


def main(argv: list[str]) -> int:
    """``python -m pflux.shell.launcher FD RECORDS JOURNAL [LISTENER]`` (job-exec runs
    ``shellwire.LAUNCHER_COMMAND``, lighter)."""
    numbers = argv[1:3] + argv[4:]
    if len(argv) not in (4, 5) or not all(arg.isdigit() for arg in numbers):
        sys.stderr.write("usage: python -m pflux.shell.launcher FD RECORDS JOURNAL [LISTENER]\n")
        return 2
    listener = _socket.socket(fileno=int(argv[4])) if len(argv) == 5 else None
    if listener is not None:
        listener.setblocking(False)
    if not set_subreaper():
        sys.stderr.write("pflux-launcher: cannot adopt orphaned processes\n")
    link = _socket.socket(fileno=int(argv[1]))
    server = LauncherServer(link, _socket.socket(fileno=int(argv[2])), argv[3], listener)
    # Objects made so far stay shared with the forked shells: nothing collects them
    # (which would write to their pages), and the launcher makes no cycles worth collecting.
    gc.freeze()
    gc.disable()
    trim_heap()  # what the imports freed: fewer pages for every fork to copy
    return server.run()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
