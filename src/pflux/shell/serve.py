"""The job shell's life: a process forked by the launcher that runs one job after another.

``serve`` leads a session, becomes a child subreaper, then runs each job the
launcher gives it (SPAWN) with a ``Shell`` (``pflux.shell.job``), saying
DONE after each; it exits after ``JOBS_PER_SHELL`` jobs or when it cannot put
everything back (0, or ``SPOOLED``). Every page a shell writes after the
fork costs a page fault (about 5 us here), so it has no broker connection, no
asyncio and no logging; see ``docs/architecture.md``, "The job shell".
"""

from __future__ import annotations

import _socket
import os

from pflux.protocol import shellwire as wire
from pflux.shell import tasks as proc
from pflux.shell.context import warn
from pflux.shell.job import Shell

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (mypy knows it)
if TYPE_CHECKING:  # the launcher imports this before it forks: keep typing out of it
    import signal as _signal
    from _socket import socket
    from typing import Final

    from pflux.shell.context import Context
else:
    import _signal  # not signal, which imports enum: the launcher keeps its imports few

__all__ = ["JOBS_PER_SHELL", "SPAWN_CHUNK", "next_job", "serve"]

SPAWN_CHUNK: Final = 65536  # the launcher sends a job's description in datagrams of this size
JOBS_PER_SHELL: Final = 256  # jobs one shell process runs, one after another, before it exits
_IDLE: Final = os.sched_param(0)
_DONTWAIT: Final = _socket.MSG_DONTWAIT
_FD_SPACE: Final = _socket.CMSG_SPACE(wire.FD_SIZE)  # JOURNAL's descriptor


def serve(ctx: Context, sock: socket) -> int:
    """Be a shell: lead a session, give way (``tasks.give_way``), then run the jobs the
    launcher gives; the exit code.

    The launcher forks shells ahead of need, so that a job waits for one
    ``send`` rather than for a fork, and gives a shell that says DONE its next
    job. A shell whose socket ends while it waits (the launcher retires it, or
    is gone) exits with 0.
    """
    os.setsid()
    if not proc.set_subreaper():
        warn("cannot adopt orphaned processes (PR_SET_CHILD_SUBREAPER)")
    proc.give_way()
    ran = 0
    while (job := next_job(sock, ctx.journal)) is not None:
        shell = Shell(job[0], ctx, sock)
        try:
            code = shell.run(job[1])
        except BaseException as exc:  # a shell must end here, whatever happened
            _crashed(shell, exc)
            raise
        ran += 1
        if code or ran == JOBS_PER_SHELL or not shell.reset():
            break
        try:
            sock.send(wire.record(wire.DONE, shell.jobid))
        except OSError:
            return 0  # the launcher is gone: nobody would give another job
    else:
        return 0
    # The job is over and reported: tearing this process down is nobody's wait, so it
    # runs only when the CPUs have nothing better to do.
    os.sched_setscheduler(0, os.SCHED_IDLE, _IDLE)
    return code


def next_job(sock: socket, journal: int = -1) -> tuple[int, bytes] | None:
    """(shell key, description) of the next SPAWN record; None when the socket ends first
    (a guest's shell waits for SPAWN_AS: ``pflux.imp.server.next_guest_job``). A JOURNAL
    read meanwhile puts the rewritten journal it carries in place of ``journal``."""
    try:
        while True:
            data, ancillary, _, _ = sock.recvmsg(SPAWN_CHUNK, _FD_SPACE)
            if ancillary:
                _take_journal(data, wire.passed_fds(ancillary), journal)
            if not data:
                return None
            if len(data) < wire.HEADER.size:
                continue
            kind, jobid, rank, length = wire.HEADER.unpack_from(data)
            if kind != wire.SPAWN:
                continue  # for the job before, passed on before the launcher heard it was done
            while len(data) < wire.HEADER.size + length:  # a large description comes in pieces
                more = sock.recv(SPAWN_CHUNK)
                if not more:
                    return None
                data += more
            return wire.shell_key(jobid, rank), data[wire.HEADER.size :]
    except OSError:
        return None


def _take_journal(data: bytes, fds: list[int], journal: int) -> None:
    """The journal the launcher rewrote (JOURNAL), in place of the old one at ``journal``:
    a spare forked before the rewrite records its next job where a restart looks."""
    try:
        if journal >= 0 and len(fds) == 1 and data[:1] == wire.JOURNAL:
            os.dup2(fds[0], journal, inheritable=False)
    finally:
        for fd in fds:
            os.close(fd)


def _crashed(shell: Shell, exc: BaseException) -> None:
    """The shell failed: say so, then die by SIGKILL, so that the launcher kills its tasks."""
    try:
        import traceback

        warn(f"job shell for job {wire.key_name(shell.jobid)} failed:")
        traceback.print_exception(exc)
        note = f"job shell failed: {exc!r}".encode()
        shell.ctx.records.send(wire.record(wire.EXCEPTION, shell.jobid, note), _DONTWAIT)
    finally:
        os.kill(os.getpid(), _signal.SIGKILL)
