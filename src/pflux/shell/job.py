"""One job's shell (``Shell``): it starts the job's tasks, relays what they write, reports.

``Shell.run`` spawns the tasks of a ``Description`` (``pflux.protocol.shellwire``;
``pflux.shell.start``), sends STARTED (held up to ``START_HOLD`` for company, so a short job costs
job-exec one message), relays output, feeds stdin (``pflux.shell.stdin``),
passes signals on, serves PMI-1 (``pflux.shell.pmi``, imported when a task
first asks), sends EXITED and waits for the last ACK; ``reset`` puts the
process back for the next job. Records are kept until acknowledged
(``pflux.shell.acklog``), at most ``WINDOW`` bytes ahead; a shell whose
launcher died rejoins the next on ``exec/sock`` (REJOIN), waiting for a
restarted instance's if the broker died too (``pflux.shell.rejoin``). A guest's
shell (run as its user by ``pflux.imp``) reads job-exec's records on its job's
own records socket too, runs its job on if its launcher dies, and meets a
restarted job-exec at its rendezvous if the broker does. The steps and the
reasons are in ``docs/architecture.md``, "The job shell" and "Execution
across a crash".
"""

from __future__ import annotations

import _socket
import errno
import marshal
import os
import select
import time

from pflux.protocol import shellwire as wire
from pflux.protocol.shellwire import Description
from pflux.shell import tasks as proc
from pflux.shell.acklog import DATAGRAM, AckLog, write_all
from pflux.shell.context import warn
from pflux.shell.lines import label
from pflux.shell.rejoin import Rejoining
from pflux.shell.start import LOG_FATAL, JobStart, StartFailed, TaskPipe
from pflux.shell.stdin import StdinFeeder

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (mypy knows it)
if TYPE_CHECKING:  # the launcher imports this before it forks: keep typing out of it
    import signal as _signal
    from _socket import socket
    from typing import Any, Final

    from pflux.shell.context import Context
else:
    import _signal  # not signal, which imports enum: the launcher keeps its imports few

__all__ = ["SPOOLED", "TRIM_AFTER", "WINDOW", "Shell"]

READ_SIZE: Final = 65536
FROM_LAUNCHER: Final = 1 << 17  # more than any record the launcher passes on
WINDOW: Final = 1 << 22  # bytes sent and not acknowledged before the shell stops reading
START_HOLD: Final = 0.01  # seconds STARTED may wait for company (see the module docstring)
TRIM_AFTER: Final = 1 << 20  # record bytes of a job after which a shell gives its heap back
SPOOLED: Final = 3  # the exit code of a shell that left its last records in its spool
_IN: Final = select.POLLIN
_OUT: Final = select.POLLOUT
_DONTWAIT: Final = _socket.MSG_DONTWAIT  # per send: the records socket is every shell's
_CMSG_SPACE: Final = _socket.CMSG_SPACE(wire.FD_SIZE)

_inbox: list[bytearray] = []  # this process's buffer for the launcher's records, once made


def _launcher_buffer() -> bytearray:
    """``FROM_LAUNCHER`` bytes to receive the launcher's records in, made once a process:
    a buffer of that size made for each message costs an mmap, a page fault and an
    munmap (about 20 us, a job's last ACK included)."""
    if not _inbox:
        _inbox.append(bytearray(FROM_LAUNCHER))
    return _inbox[0]


class Shell(JobStart, Rejoining):
    """One job's shell; ``run()`` returns its exit code."""

    __slots__ = (
        "codes",
        "ctx",
        "deadline",
        "detached",
        "doom",
        "doom_code",
        "failure",
        "feeder",
        "files",
        "first_code",
        "give_up",
        "jobid",
        "log",
        "masters",
        "meeting",
        "orphaned",
        "paused",
        "pending",
        "pidfds",
        "pipes",
        "pmi",
        "pmi_fds",
        "poller",
        "quitting",
        "ranks",
        "rejoins",
        "retry_at",
        "sock",
        "targets",
        "waiting_out",
    )

    def __init__(self, jobid: int, ctx: Context, sock: socket) -> None:
        self.jobid = jobid
        self.ctx = ctx
        self.sock = sock  # the shell's end of its socket pair with the launcher
        self.host = ""
        self.log = AckLog(f"{ctx.spool}/{jobid}" if ctx.spool else "")
        self.pending = 0  # bytes made since the last send
        self.poller = select.poll()
        self.pipes: dict[int, TaskPipe] = {}
        self.ptys: tuple[int, ...] = ()  # the ranks of the tasks on a pty
        # their masters, open until every task is reaped: closing one hangs up its
        # terminal, and SIGHUP would reach a task between its last close and its exit
        self.masters: list[int] = []
        self.feeder = StdinFeeder(jobid, self.poller)  # the tasks' stdin pipes
        self.stdin_file: str | None = None
        self.pidfds: dict[int, int] = {}  # pidfd -> pid, until the task is reaped
        self.ranks: dict[int, int] = {}  # pid -> task rank
        self.argv0 = ""  # the command's basename, as exit notes name it
        self.exit_timeout: float | None = None  # exit-timeout, seconds
        self.exit_on_error = False
        self.own_groups = True  # each task leads its process group (not -o nosetpgrp)
        self.deadline = 0.0  # when the exit timeout expires (monotonic), 0 when unarmed
        self.doom = ""  # the note of the exit timeout, once the first task has exited
        # the first task's exit code once exit-on-error or exit-timeout has killed the
        # job for it: the shell's own, as flux-core's shell dies with it
        self.doom_code: int | None = None
        self.first_code = 0
        self.codes: list[int] = []  # the exit codes of the tasks reaped
        # per stream: (its files, one per task or one for all; () for the KVS), label, line
        self.targets: list[tuple[tuple[int, ...], bool, bool]] = []
        self.files: dict[str, int] = {}  # the output files open, by path
        self.failure: StartFailed | None = None
        self.tmpdir: str | None = None
        self.detached = False  # no job-exec: records go to the spool
        self.quitting = False  # job-exec is stopping for good: do not wait for it
        self.orphaned = False  # the launcher is gone, and no other will take the shell
        self.rejoins = 0  # launchers rejoined after the one before died
        # no launcher to rejoin: when to try exec/sock again, and when to stop (monotonic; 0: not)
        self.retry_at = 0.0
        self.give_up = 0.0
        self.meeting = 0  # a guest's shell's rendezvous with a restarted job-exec (rejoin.py)
        self.paused = False  # not reading the tasks' pipes: too much is unacknowledged
        self.waiting_out = False  # polling the records socket until it can take more
        self.pmi_fds: dict[int, int] = {}  # the shell's end of each task's PMI_FD -> its rank
        self.pmi_job: tuple[Any, ...] | None = None  # the PMI-1 server's arguments (or off)
        self.pmi: Any = None  # the job's PMI-1 server (pflux.shell.pmi), made when first asked

    def run(self, description: bytes) -> int:
        return self.run_job(Description(*marshal.loads(description)))

    def run_job(self, job: Description) -> int:
        """Run ``job`` (a guest's shell has it decoded and checked already)."""
        try:
            self._record()
            self._start(job)
        except StartFailed as exc:
            self.failure = exc.with_traceback(None)  # no cycle through this frame to leak
            self._kill_all(_signal.SIGKILL)
            self._emit(wire.STARTED, b"%r" % time.time())
            # a fatal error: the shell's log says so before the exception, as flux's
            self._emit(wire.LOG, b"%d %s" % (LOG_FATAL, exc.note.encode()))
            self._emit(wire.EXCEPTION, exc.note.encode())
            hold = 0.0
        else:
            # and where its tasks run, for flux job hostpids: HOST RANK:PID,RANK:PID...
            where = ",".join(f"{rank}:{pid}" for pid, rank in self.ranks.items())
            started = f"{time.time()!r} {self.host} {where}"
            self._emit(wire.STARTED, started.encode())
            hold = time.monotonic() + START_HOLD
        self._watch_links()
        poll = self.poller.poll
        while self.pipes or self.pidfds:
            if (self.deadline or self.retry_at) and self._timers():
                continue
            ready = poll(0)
            if not ready:  # send what has gathered only when nothing more is ready
                wait = hold - time.monotonic() if self.pending else 0.0
                if wait > 0:
                    ready = poll(wait * 1000)
                    if not ready:
                        hold = 0.0
                    continue
                self._flush()
                hold = 0.0
                if self.deadline or self.retry_at:
                    wake = min(t for t in (self.deadline, self.retry_at) if t)
                    ready = poll(max(0.0, wake - time.monotonic()) * 1000)
                    if not ready:
                        continue
                else:
                    ready = poll()
            self._dispatch(ready)
        for master in self.masters:
            os.close(master)
        self.masters.clear()
        self.feeder.close_all()
        self._close_outputs()
        for fd in list(self.pmi_fds):
            self._pmi_close(fd)
        self._kill_orphans()
        self._remove_tmpdir()
        code = self._exit_code()
        self._emit(wire.EXITED, b"%d" % (code << 8))  # last: the job is over
        # the status is reported, to job-exec or to the spool: nobody need wait for us
        return SPOOLED if self._finish() else 0

    def _watch_links(self) -> None:
        """Poll the launcher's socket, and a guest's shell's own to job-exec, on which
        job-exec's records for it come."""
        self.poller.register(self.sock.fileno(), _IN)
        if self.ctx.exec_dir < 0:
            self.poller.register(self.ctx.records.fileno(), _IN)

    def _exit_code(self) -> int:
        """The shell's: a launch failure's, the task exit-on-error or exit-timeout ended
        the job for (flux-core's shell dies with it), else the largest task's."""
        if self.failure is not None:
            return self.failure.code
        if self.doom_code is not None:
            return self.doom_code
        return max(self.codes, default=0)

    def _timers(self) -> bool:
        """Act on the exit timeout and the next try at rejoining, if due; True if the exit
        timeout fired (the loop looks again)."""
        if self.retry_at and time.monotonic() >= self.retry_at:
            self._retry_rejoin()
        return bool(self.deadline) and self._doomed()

    def _dispatch(self, ready: list[tuple[int, int]]) -> None:
        sock = self.sock.fileno()
        records = self.ctx.records.fileno()
        for fd, events in ready:
            if fd in self.pipes:
                self._read(fd)
            elif fd in self.pidfds:
                self._reap(fd)
            elif fd in self.pmi_fds:
                self._pmi_read(fd)
            elif fd == sock:
                self._from_launcher()
            elif fd == records and self.ctx.exec_dir < 0:
                self._guest_link(events)
            elif fd == records:
                self.poller.unregister(fd)
                self.waiting_out = False
                self._flush()
            else:
                self.feeder.writable(fd)

    def _finish(self) -> bool:
        """Wait until job-exec has everything in the KVS, or leave it in the spool (True).

        A guest's shell waiting for a restarted job-exec waits for it here too."""
        poll = self.poller.poll
        self._flush()
        while self.log.acked < self.log.end and not self.quitting:
            if self.detached and self.meeting <= 0:
                break
            if self.retry_at:
                wait = self.retry_at - time.monotonic()
                if wait <= 0:
                    self._retry_rejoin()
                    continue
                self._dispatch(poll(wait * 1000))
            else:
                self._dispatch(poll())
            self._flush()
        if self.log.acked < self.log.end:
            self.log.spool_all()
            return True
        return False

    def reset(self) -> bool:
        """Put back what the job changed in the process, for the next; False if it cannot."""
        if self.quitting or self.orphaned:
            return False
        try:
            os.chdir(self.ctx.cwd)
            os.sched_setaffinity(0, self.ctx.cpus)  # a task with no binding gets the shell's
        except OSError:
            return False
        if self.ctx.path is None:
            os.unsetenv("PATH")
        else:
            os.putenv("PATH", self.ctx.path)
        if self.log.end > TRIM_AFTER:  # what relaying much output left, for a spare to hold
            proc.trim_heap()
        return True

    # --- running ----------------------------------------------------------------------

    def _read(self, fd: int) -> None:
        pipe = self.pipes[fd]
        try:
            data = os.read(fd, READ_SIZE)
        except OSError as exc:
            if exc.errno != errno.EIO:
                raise
            data = b""  # a pty's master once no process has the terminal open
        if data:
            chunk = pipe.buffer.feed(data)
            if not chunk:
                return
            if pipe.file < 0:
                self._emit(wire.OUTPUT, pipe.tag + chunk)
            else:
                write_all(pipe.file, label(pipe.prefix, chunk))
            return
        rest = pipe.buffer.rest()
        if pipe.file < 0:
            if rest:
                self._emit(wire.OUTPUT, pipe.tag + rest)
            self._emit(wire.EOF, pipe.tag)
        elif rest:
            write_all(pipe.file, label(pipe.prefix, rest))
        if not self.paused:
            self.poller.unregister(fd)
        if fd not in self.masters:
            os.close(fd)
        del self.pipes[fd]

    def _reap(self, pidfd: int) -> None:
        pid, status = os.waitpid(self.pidfds[pidfd], os.WNOHANG)
        if pid:
            if not self.codes and self.failure is None:
                self._first_exit(self.ranks[pid], status)
            self.codes.append(proc.exit_code(status))
            del self.pidfds[pidfd]
            self.poller.unregister(pidfd)
            os.close(pidfd)

    def _first_exit(self, rank: int, status: int) -> None:
        """The first task has exited: exit-on-error, or arm exit-timeout (flux-core's doom.c)."""
        if os.WIFSIGNALED(status):
            how = f" ({_signal.strsignal(os.WTERMSIG(status))})"
        else:
            how = f" (Exit {os.WEXITSTATUS(status)})"
        task = f"{self.argv0}: task rank {rank} on host {self.host}"
        self.first_code = proc.exit_code(status)
        if self.exit_on_error and self.first_code:
            self.doom_code = self.first_code
            self._emit(wire.EXCEPTION, f"{task} failed{how} and exit-on-error is set".encode())
        elif self.exit_timeout is not None and len(self.pidfds) > 1:
            from pflux.spec.duration import format as fsd

            self.doom = f"{task} exited{how} and exit-timeout={fsd(self.exit_timeout)} has expired"
            self.deadline = time.monotonic() + self.exit_timeout

    def _doomed(self) -> bool:
        """Whether the exit timeout expired now: a fatal exception, once (the tasks are
        then killed by job-exec, as for any fatal exception)."""
        if not self.pidfds:  # every task has exited: nothing left to guard
            self.deadline = 0.0
            return False
        if time.monotonic() < self.deadline:
            return False
        self.deadline = 0.0
        self.doom_code = self.first_code
        self._emit(wire.EXCEPTION, self.doom.encode())
        self._flush()
        return True

    def _pmi_read(self, fd: int) -> None:
        """A request on a task's PMI_FD, or its end (most tasks close it unused)."""
        try:
            data = os.read(fd, READ_SIZE)
        except OSError:
            data = b""
        if self.pmi is None:
            if not data:
                self._pmi_close(fd)
                return
            from pflux.shell.pmi import PMIServer

            self.pmi = PMIServer(self.pmi_fds, self.poller, self.pmi_job or (), self._fence)
        note = self.pmi.feed(fd, data)
        if note is not None:
            self._emit(wire.EXCEPTION, note.encode())

    def _fence(self, puts: dict[str, str]) -> None:
        """Every task here is in PMI's barrier: send job-exec what they put, for the union
        of every shell's (FENCE, which lets them out)."""
        import json  # here: only PMI's jobs fence, and the launcher keeps its imports few

        self._emit(wire.FENCE, json.dumps(puts, separators=(",", ":")).encode())
        self._flush()

    def _pmi_close(self, fd: int) -> None:
        del self.pmi_fds[fd]
        self.poller.unregister(fd)
        os.close(fd)

    def _from_launcher(self) -> None:
        buffer = _launcher_buffer()
        try:
            n, ancillary, _, _ = self.sock.recvmsg_into([buffer], _CMSG_SPACE)
        except OSError:
            n, ancillary = 0, []
        if not n:
            self._orphan()
            return
        with memoryview(buffer) as view:
            data = bytes(view[:n])
        self._handle(data, ancillary)

    def _guest_link(self, events: int) -> None:
        """A guest's shell's own socket to job-exec: room to send, job-exec's records (the
        launcher's are the job's too), or its end (job-exec is gone: the shell waits for
        a restarted one at its rendezvous, ``pflux.shell.rejoin``)."""
        records = self.ctx.records
        if events & _OUT and self.waiting_out:
            self.waiting_out = False
            self.poller.register(records.fileno(), _IN)
            self._flush()
        if not events & ~_OUT:
            return
        try:
            data, ancillary, _, _ = records.recvmsg(FROM_LAUNCHER, _CMSG_SPACE, _DONTWAIT)
        except BlockingIOError:
            return
        except OSError:
            data, ancillary = b"", []
        if data:
            try:
                self._handle(data, ancillary)
            finally:
                for fd in wire.passed_fds(ancillary):
                    os.close(fd)
            return
        if self.detached:  # the rendezvous' socket, before RESUME: meet again
            self._guest_detached()
        else:
            self._detach()

    def _handle(self, data: bytes, ancillary: list[tuple[int, int, bytes]]) -> None:
        """Records for the job's shell, from its launcher or job-exec."""
        for kind, jobid, payload in wire.split(data)[0]:
            if jobid != self.jobid:
                continue  # passed on before the launcher heard that the last job was done
            if kind == wire.KILL:
                self._kill_all(int(payload))
            elif kind == wire.ACK:
                self._acked(int(payload))
            elif kind == wire.INPUT:
                self.feeder.receive(payload)
            elif kind == wire.RESUME and self.ctx.exec_dir < 0:
                self._guest_resume(int(payload))
            elif kind == wire.RESUME:
                self._resume(int(payload), ancillary)
            elif kind == wire.RENDEZVOUS and self.ctx.exec_dir < 0:
                self._rendezvous(payload, wire.passed_fds(ancillary))
            elif kind == wire.DETACH:
                self._detach()
            elif kind == wire.QUIT:
                self.quitting = True
            else:
                self._task_record(kind, payload)

    def _task_record(self, kind: bytes, payload: bytes) -> None:
        """A record for the tasks' terminals or their PMI barrier."""
        if kind == wire.WINSIZE:
            self._winsize(payload)
        elif kind == wire.FENCE and self.pmi is not None:
            import json

            self.pmi.fenced(json.loads(payload))

    def _winsize(self, payload: bytes) -> None:
        """Size the job's ptys: each tells its foreground process group (SIGWINCH)."""
        import fcntl
        import struct
        import termios

        rows, cols = map(int, payload.split())
        size = struct.pack("HHHH", rows, cols, 0, 0)
        for master in self.masters:
            try:
                fcntl.ioctl(master, termios.TIOCSWINSZ, size)
            except OSError as exc:
                warn(f"job {wire.key_name(self.jobid)}: cannot size its pty: {exc}")

    def _kill_all(self, signum: int) -> None:
        for pid in self.pidfds.values():
            proc.signal_task(pid, signum)

    # --- reporting --------------------------------------------------------------------

    def _emit(self, kind: bytes, payload: bytes = b"") -> None:
        data = wire.record(kind, self.jobid, payload)
        self.log.add(data, spooling=self.detached)
        if self.detached:
            return
        self.pending += len(data)
        if self.pending >= DATAGRAM:  # a busy task: send as much as a datagram holds
            self._flush()

    def _flush(self) -> None:
        """Send what job-exec has not had, in datagrams, as far as the window allows."""
        self.pending = 0
        log = self.log
        send = self.ctx.records.send
        while not (self.detached or self.waiting_out) and log.sent < log.end:
            if log.sent - log.acked >= WINDOW:
                break
            data, records = log.chunk()
            if not data:
                break
            try:
                send(data, _DONTWAIT)
            except BlockingIOError:  # job-exec is busy: go on when it has read
                self.waiting_out = True
                guest = _IN if self.ctx.exec_dir < 0 else 0  # and read what job-exec sends
                self.poller.register(self.ctx.records.fileno(), _OUT | guest)
                break
            except OSError:  # job-exec is gone
                self._detach()
                break
            log.advance(data, records)
        self._pace()

    def _pace(self) -> None:
        """Stop reading the tasks' output while a window's worth is unacknowledged (a
        guest's shell, with no spool, while job-exec is away too: its memory's bound)."""
        log = self.log
        hold = (not self.detached or not log.path) and log.spool < 0
        hold = hold and log.end - log.acked >= WINDOW
        if hold == self.paused:
            return
        self.paused = hold
        for fd in self.pipes:
            if hold:
                self.poller.unregister(fd)
            else:
                self.poller.register(fd, _IN)

    def _acked(self, offset: int) -> None:
        self.log.ack(offset)
        self._pace()

    # --- ending -----------------------------------------------------------------------

    def _kill_orphans(self) -> None:
        """Kill and reap what the tasks left running (the shell adopted it as a subreaper)."""
        while True:
            try:
                if os.waitpid(-1, os.WNOHANG)[0]:
                    continue  # an orphan that had ended: reaped
            except ChildProcessError:
                return  # no child at all: the usual case, in one system call
            for pid in proc.children():
                proc.signal_task(pid, _signal.SIGKILL)
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                return

    def _close_outputs(self) -> None:
        for fd in self.files.values():
            os.close(fd)
        self.files.clear()

    def _remove_tmpdir(self) -> None:
        if self.tmpdir is None:
            return
        try:
            os.rmdir(self.tmpdir)  # most jobs leave it empty
        except OSError:
            import shutil

            shutil.rmtree(self.tmpdir, ignore_errors=True)
        self.tmpdir = None
