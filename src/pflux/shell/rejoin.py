"""A shell whose job-exec or launcher goes away: spooling, resuming, rejoining.

When job-exec goes (DETACH, or the records socket fails) the shell keeps
what job-exec has not acknowledged, and all that follows, in its spool
until a new job-exec RESUMEs it from an offset, on a socket the launcher
passes along. When its launcher dies the shell passes the next one a new
socket through ``exec/sock`` (REJOIN), at most ``REJOINS`` times; when
nobody listens there (the broker died too) it tries again every
``REJOIN_RETRY`` seconds until the instance's ``rejoin-timeout``, and if no
launcher takes it, kills its tasks and leaves the job's end in its spool.
A guest's shell has neither spool nor ``exec/sock``: job-exec tells it where
to meet a restarted job-exec (RENDEZVOUS: a directory of the instance's and
the rejoin timeout); when job-exec goes it keeps its records in memory (at
most ``WINDOW`` unacknowledged: then its tasks wait to write) and connects to
``<that directory>/<key>`` every ``REJOIN_RETRY`` seconds, taking only a peer
of the instance's account (``SO_PEERCRED``), until one RESUMEs it there or the
timeout passes (then it kills its tasks).
``Rejoining`` is this part of a shell (``pflux.shell.job.Shell`` the rest):
the shell's state it reads is declared here for the type checker, the shell
holds it.
"""

from __future__ import annotations

import _socket
import os
import select
import sys
import time

from pflux.protocol import shellwire as wire
from pflux.protocol.peer import peer_credentials

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (mypy knows it)
if TYPE_CHECKING:  # the launcher imports this before it forks: keep typing out of it
    import signal as _signal
    from _socket import socket
    from typing import Final

    from pflux.shell.acklog import AckLog
    from pflux.shell.context import Context
else:
    import _signal  # not signal, which imports enum: the launcher keeps its imports few

__all__ = ["Rejoining"]

REJOINS: Final = 8  # launchers a shell rejoins, at most, before it gives its job up
REJOIN_WAIT: Final = 10.0  # seconds a connection to exec/sock may wait to be queued
REJOIN_RETRY: Final = 0.5  # seconds between tries to reach a restarted instance's exec/sock
_IN: Final = select.POLLIN
_SOL_SOCKET: Final = _socket.SOL_SOCKET
_SCM_RIGHTS: Final = _socket.SCM_RIGHTS
_S_IFMT: Final = 0o170000
_S_IFDIR: Final = 0o040000
MEETING: Final = 1  # a guest's shell connects to its rendezvous, every REJOIN_RETRY
MET: Final = 2  # ... has connected, and waits for RESUME there
GAVE_UP: Final = -1  # ... has killed its tasks: no job-exec took the job in time
GUEST_GONE: Final = "job-exec went away and the job shell has nowhere to meet another"


class Rejoining:
    """What a shell does when job-exec or its launcher goes away, and another comes."""

    # The shell's slots hold what this sets: a class may have one base with slots of its
    # own, ``JobStart``. Only at run time, so that the type checker looks for them there.
    if not TYPE_CHECKING:
        __slots__ = ()

    if TYPE_CHECKING:  # the shell's (``Shell``) that this uses
        jobid: int
        ctx: Context
        sock: socket
        poller: select.poll
        log: AckLog
        detached: bool
        give_up: float
        meeting: int
        orphaned: bool
        quitting: bool
        pending: int
        rejoins: int
        retry_at: float
        waiting_out: bool

        def _emit(self, kind: bytes, payload: bytes = b"") -> None: ...

        def _flush(self) -> None: ...

        def _pace(self) -> None: ...

        def _kill_all(self, signum: int) -> None: ...

    def _detach(self) -> None:
        """job-exec is gone: what it has not acknowledged, and all that follows, is spooled."""
        if self.detached:
            return
        self.detached = True
        self.pending = 0
        if self.ctx.exec_dir < 0:
            self._guest_detached()
        elif self.waiting_out:
            self.waiting_out = False
            self.poller.unregister(self.ctx.records.fileno())
        self.log.spool_all()
        self._pace()

    def _resume(self, offset: int, ancillary: list[tuple[int, int, bytes]]) -> None:
        """A new job-exec: send from ``offset`` on the socket the launcher passed along."""
        fds = wire.passed_fds(ancillary)
        if not fds or self.orphaned:
            for fd in fds:
                os.close(fd)
            return
        os.dup2(fds[0], self.ctx.records.fileno(), inheritable=False)
        for fd in fds:
            os.close(fd)
        self.detached = False
        self.log.rewind(offset)
        self._flush()

    def _orphan(self) -> None:
        """The launcher is gone: rejoin the next, or wait for a restarted instance's (up to
        ``ctx.rejoin_timeout``), or, if none can take the job, end it."""
        if self.ctx.exec_dir < 0:
            # a guest's shell: job-exec's records and its own go on the job's socket, which
            # the launcher never had; it runs its job on, and takes no other
            self.poller.unregister(self.sock.fileno())
            self.orphaned = True
            return
        if self.orphaned or self.retry_at:
            return
        self.poller.unregister(self.sock.fileno())
        self._detach()
        if self.rejoins >= REJOINS:
            self._abandon(wire.LAUNCHER_DIED)
        elif self._rejoin():
            self._rejoined()
        elif self.ctx.rejoin_timeout > 0 and not self._instance_gone():
            now = time.monotonic()
            self.retry_at = now + REJOIN_RETRY
            self.give_up = now + self.ctx.rejoin_timeout
        else:
            self._abandon(wire.LAUNCHER_DIED)

    def _retry_rejoin(self) -> None:
        """Nobody listened on exec/sock: try again, until the instance's time is up."""
        if self.ctx.exec_dir < 0:
            self._meet_again()
            return
        if self._rejoin():
            self.retry_at = self.give_up = 0.0
            self._rejoined()
        elif self._instance_gone():
            self.retry_at = self.give_up = 0.0
            self._abandon(wire.LAUNCHER_DIED)
        elif time.monotonic() >= self.give_up:
            self.retry_at = self.give_up = 0.0
            timeout = self.ctx.rejoin_timeout
            self._abandon(f"{wire.LAUNCHER_DIED}; no instance took the job over in {timeout:g} s")
        else:
            self.retry_at = time.monotonic() + REJOIN_RETRY

    def _rejoined(self) -> None:
        self.rejoins += 1
        self.poller.register(self.sock.fileno(), _IN)

    def _abandon(self, note: str) -> None:
        """No launcher will take the job: kill its tasks and say why, into the spool."""
        self.orphaned = True
        self._kill_all(_signal.SIGKILL)
        self._emit(wire.EXCEPTION, note.encode())

    def _instance_gone(self) -> bool:
        """Whether exec/sock's directory (a guest's: its rendezvous) was removed (a
        temporary instance's, at its end)."""
        directory = self.ctx.exec_dir if self.ctx.exec_dir >= 0 else self.ctx.guest_dir
        try:
            return os.fstat(directory).st_nlink == 0
        except OSError:
            return True

    def _rejoin(self) -> bool:
        """Pass the next launcher a new socket to this shell (``sock`` from now on).

        The connection waits in the listening socket job-exec keeps until the
        launcher it starts takes it; it is refused if nobody listens any more.
        """
        try:
            ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
        except OSError:
            return False
        conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            conn.settimeout(REJOIN_WAIT)
            conn.connect(f"/proc/self/fd/{self.ctx.exec_dir}/sock")
            passed = theirs.fileno().to_bytes(wire.FD_SIZE, sys.byteorder)
            hello = wire.record(wire.REJOIN, self.jobid, b"%d" % os.getpid())
            conn.sendmsg([hello], [(_SOL_SOCKET, _SCM_RIGHTS, passed)])
        except OSError:
            ours.close()
            return False
        finally:
            conn.close()
            theirs.close()
        os.dup2(ours.fileno(), self.sock.fileno(), inheritable=False)
        ours.close()
        return True

    # --- a guest's shell ----------------------------------------------------------------

    def _rendezvous(self, payload: bytes, fds: list[int]) -> None:
        """RENDEZVOUS: where a restarted job-exec would listen for this job's shell, and
        for how long; taken only if the directory is the instance account's and no one
        else may write in it (so nobody else can have made the socket there)."""
        try:
            timeout = float(payload)
        except ValueError:
            return
        if not fds or not 0 < timeout < float("inf"):
            return
        try:
            _, uid, _ = peer_credentials(self.ctx.records)
            found = os.fstat(fds[0])
        except OSError:
            return
        if found.st_mode & _S_IFMT != _S_IFDIR or found.st_uid != uid or found.st_mode & 0o022:
            return
        ctx = self.ctx
        if ctx.guest_dir < 0:
            ctx.guest_dir = os.dup(fds[0])
        else:
            os.dup2(fds[0], ctx.guest_dir, inheritable=False)
        ctx.instance_uid = uid
        ctx.rejoin_timeout = timeout

    def _guest_detached(self) -> None:
        """A guest's shell lost job-exec: wait for a restarted one at the rendezvous (up to
        the rejoin timeout), or, with none (or job-exec stopped for good: QUIT), kill the
        tasks."""
        self.poller.unregister(self.ctx.records.fileno())  # a guest's shell's always is
        self.waiting_out = False
        if self.meeting == GAVE_UP:
            return
        if self.quitting or self.ctx.guest_dir < 0 or self._instance_gone():
            self._give_up(GUEST_GONE)  # stopped for good, or no rendezvous
            return
        now = time.monotonic()
        self.meeting = MEETING
        self.retry_at = now + REJOIN_RETRY
        self.give_up = now + self.ctx.rejoin_timeout

    def _meet_again(self) -> None:
        """Try the rendezvous again; once connected, wait there for RESUME until the time
        is up; then, or if the instance is gone, kill the tasks."""
        now = time.monotonic()
        if self.meeting == MEETING and self._meet():
            self.meeting = MET
            self.retry_at = self.give_up  # RESUME is waited for until then
        elif now >= self.give_up or self._instance_gone():
            timeout = self.ctx.rejoin_timeout
            self._give_up(f"job-exec went away; no instance took the job over in {timeout:g} s")
        else:
            self.retry_at = min(now + REJOIN_RETRY, self.give_up)

    def _give_up(self, note: str) -> None:
        """No job-exec will take the guest's job: kill its tasks, for good."""
        self.meeting = GAVE_UP
        self.retry_at = self.give_up = 0.0
        self._abandon(note)

    def _meet(self) -> bool:
        """Connect to the job's socket at the rendezvous, if the instance's account listens
        there (``SO_PEERCRED``): job-exec's records and the shell's go on it from now on."""
        ctx = self.ctx
        conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
        try:
            conn.settimeout(REJOIN_WAIT)
            conn.connect(f"/proc/self/fd/{ctx.guest_dir}/{self.jobid}")
            conn.setblocking(True)
            if peer_credentials(conn)[1] != ctx.instance_uid:
                return False
            os.dup2(conn.fileno(), ctx.records.fileno(), inheritable=False)
        except OSError:
            return False
        finally:
            conn.close()
        self.poller.register(ctx.records.fileno(), _IN)
        return True

    def _guest_resume(self, offset: int) -> None:
        """RESUME on the rendezvous' socket: send again from ``offset``."""
        if self.meeting != MET:
            return  # not waiting for one: a late duplicate would have job-exec count twice
        self.meeting = 0
        self.retry_at = self.give_up = 0.0
        self.detached = False
        self.log.rewind(offset)
        self._flush()
