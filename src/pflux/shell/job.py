"""One job's shell (``Shell``): it starts the job's tasks, relays what they write, reports.

``Shell.run`` spawns the tasks of a ``Description`` (``pflux.protocol.shellwire``),
sends STARTED (held up to ``START_HOLD`` for company, so a short job costs
job-exec one message), relays output, feeds stdin (``pflux.shell.stdin``),
passes signals on, serves PMI-1 (``pflux.shell.pmi``, imported when a task
first asks), sends EXITED and waits for the last ACK; ``reset`` puts the
process back for the next job. Records are kept until acknowledged
(``pflux.shell.acklog``), at most ``WINDOW`` bytes ahead; a shell whose
launcher died rejoins the next on ``exec/sock`` (REJOIN), waiting for a
restarted instance's if the broker died too. The steps and the
reasons are in ``docs/architecture.md``, "The job shell" and "Execution
across a crash".
"""

from __future__ import annotations

import _socket
import errno
import marshal
import os
import select
import sys
import time

from pflux.errors import PfluxError
from pflux.protocol import shelljournal as journal
from pflux.protocol import shellwire as wire
from pflux.protocol.shellwire import Description
from pflux.safefs.shared import open_output, private_dir
from pflux.shell import tasks as proc
from pflux.shell.acklog import DATAGRAM, AckLog, write_all
from pflux.shell.context import warn
from pflux.shell.lines import LineBuffer, label
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
REJOINS: Final = 8  # launchers a shell rejoins, at most, before it gives its job up
REJOIN_WAIT: Final = 10.0  # seconds a connection to exec/sock may wait to be queued
REJOIN_RETRY: Final = 0.5  # seconds between tries to reach a restarted instance's exec/sock
SPOOLED: Final = 3  # the exit code of a shell that left its last records in its spool
_STREAMS: Final = (wire.STDOUT, wire.STDERR)
LOG_FATAL: Final = 0  # flux-core's shell log level of a fatal error
LOG_ERROR: Final = 3  # flux-core's shell log level of an error (syslog's)
_IN: Final = select.POLLIN
_OUT: Final = select.POLLOUT
_DONTWAIT: Final = _socket.MSG_DONTWAIT  # per send: the records socket is every shell's
_FD_SIZE: Final = 4
_CMSG_SPACE: Final = _socket.CMSG_SPACE(_FD_SIZE)
_SOL_SOCKET: Final = _socket.SOL_SOCKET
_SCM_RIGHTS: Final = _socket.SCM_RIGHTS


class _Failed(PfluxError):
    """The tasks cannot be launched: the exception note, and the shell's exit code."""

    def __init__(self, note: str, code: int) -> None:
        super().__init__(note)
        self.note = note
        self.code = code


class _Pipe:
    """A task's stdout or stderr as the shell reads it: relayed, or labelled into a file."""

    __slots__ = ("buffer", "file", "prefix", "tag")

    def __init__(self, tag: bytes, file: int, rank: int, line: bool) -> None:
        self.tag = tag  # the stream byte and the rank, as OUTPUT and EOF records carry them
        self.file = file  # a labelled file, or -1 to relay
        self.buffer = LineBuffer(line or file >= 0)
        self.prefix = b"%d: " % rank


class Shell:
    """One job's shell; ``run()`` returns its exit code."""

    __slots__ = (
        "argv0",
        "codes",
        "ctx",
        "deadline",
        "detached",
        "doom",
        "doom_code",
        "exit_on_error",
        "exit_timeout",
        "failure",
        "feeder",
        "files",
        "first_code",
        "give_up",
        "host",
        "jobid",
        "log",
        "masters",
        "orphaned",
        "own_groups",
        "paused",
        "pending",
        "pidfds",
        "pipes",
        "pmi",
        "pmi_fds",
        "pmi_job",
        "poller",
        "ptys",
        "quitting",
        "ranks",
        "rejoins",
        "retry_at",
        "sock",
        "stdin_file",
        "targets",
        "tmpdir",
        "waiting_out",
    )

    def __init__(self, jobid: int, ctx: Context, sock: socket) -> None:
        self.jobid = jobid
        self.ctx = ctx
        self.sock = sock  # the shell's end of its socket pair with the launcher
        self.host = ""
        self.log = AckLog(f"{ctx.spool}/{jobid}")
        self.pending = 0  # bytes made since the last send
        self.poller = select.poll()
        self.pipes: dict[int, _Pipe] = {}
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
        self.failure: _Failed | None = None
        self.tmpdir: str | None = None
        self.detached = False  # no job-exec: records go to the spool
        self.quitting = False  # job-exec is stopping for good: do not wait for it
        self.orphaned = False  # the launcher is gone, and no other will take the shell
        self.rejoins = 0  # launchers rejoined after the one before died
        # no launcher to rejoin: when to try exec/sock again, and when to stop (monotonic; 0: not)
        self.retry_at = 0.0
        self.give_up = 0.0
        self.paused = False  # not reading the tasks' pipes: too much is unacknowledged
        self.waiting_out = False  # polling the records socket until it can take more
        self.pmi_fds: dict[int, int] = {}  # the shell's end of each task's PMI_FD -> its rank
        self.pmi_job: tuple[Any, ...] | None = None  # the PMI-1 server's arguments (or off)
        self.pmi: Any = None  # the job's PMI-1 server (pflux.shell.pmi), made when first asked

    def run(self, description: bytes) -> int:
        try:
            self._record()
            self._start(Description(*marshal.loads(description)))
        except _Failed as exc:
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
        sock = self.sock.fileno()
        self.poller.register(sock, _IN)
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
        for fd, _ in ready:
            if fd in self.pipes:
                self._read(fd)
            elif fd in self.pidfds:
                self._reap(fd)
            elif fd in self.pmi_fds:
                self._pmi_read(fd)
            elif fd == sock:
                self._from_launcher()
            elif fd == records:
                self.poller.unregister(fd)
                self.waiting_out = False
                self._flush()
            else:
                self.feeder.writable(fd)

    def _finish(self) -> bool:
        """Wait until job-exec has everything in the KVS, or leave it in the spool (True)."""
        poll = self.poller.poll
        self._flush()
        while self.log.acked < self.log.end and not (self.detached or self.quitting):
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

    # --- setting up -------------------------------------------------------------------

    def _record(self) -> None:
        """Journal the session before any task exists, so a crash cannot lose track of it."""
        when = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
        line = journal.start_line(self.jobid, os.getpid(), when, self.ctx.boot)
        try:
            os.write(self.ctx.journal, line)
        except OSError as exc:
            raise _Failed(f"cannot record the job shell: {exc.strerror}", 1) from None

    def _environment(self, job: Description) -> None:
        """What the tasks' environment gets here: their directory, and on a broker rank
        of its own (another node), that broker's URI."""
        env = job.env
        env["FLUX_JOB_TMPDIR"] = self._make_tmpdir(job.tmpdirs)
        if self.ctx.uri is not None:
            env["PFLUX_URI"] = env["FLUX_URI"] = self.ctx.uri

    def _chdir(self, cwd: str, host: str) -> None:
        """Go to the job's directory; as flux-core's shell, a missing one is said on the
        shell's log and the tasks run in /tmp."""
        try:
            os.chdir(cwd)
        except OSError as exc:
            said = f"host {host}: Could not change dir to {cwd}: {exc.strerror}."
            said += " Going to /tmp instead"
            self._emit(wire.LOG, b"%d %s" % (LOG_ERROR, said.encode()))
            try:
                os.chdir("/tmp")
            except OSError as again:
                raise _Failed(f"Could not change dir to /tmp: {again.strerror}", 1) from None

    def _start(self, job: Description) -> None:
        """Make the job's directory, go to its cwd, open its files and start its tasks."""
        env = job.env
        argv = job.argv
        pmi = job.pmi
        self.ptys = job.ptys
        self.host = host = job.host
        self.pmi_job = None if pmi is None else (*pmi, env["FLUX_JOB_ID"], len(job.tasks))
        self._environment(job)
        if job.files or job.tmpdir_argv:
            argv = _stage(job)
        task_envs = self._options(job)
        if job.cwd is not None:
            self._chdir(job.cwd, host)
        self._open_outputs([job.stdout, job.stderr])
        if job.stdin is not None:  # one error before any task starts, as flux-core gives
            self.stdin_file = job.stdin
            os.close(self._stdin(-1)[0])
        path = env.get("PATH")
        if path is not None and path != self.ctx.path:
            os.putenv("PATH", path)  # posix_spawnp searches the caller's PATH
        saved = _set_limits(job.rlimit) if job.rlimit else ()
        bound = None  # the shell stays where its last task is: its work is the job's
        tasks = job.tasks
        last = len(tasks) - 1
        try:
            for index, (rank, local_id, cpus, gpus) in enumerate(tasks):
                if cpus != bound:
                    self._bind(cpus or self.ctx.cpus)
                    bound = cpus
                task_env = env if index == last else dict(env)
                task_env["FLUX_TASK_RANK"] = str(rank)
                task_env["FLUX_TASK_LOCAL_ID"] = str(local_id)
                if gpus is not None:
                    task_env["CUDA_VISIBLE_DEVICES"] = gpus
                if task_envs:
                    task_env.update(task_envs[index])
                theirs = -1 if pmi is None else self._pmi_connect(rank, pmi[0], task_env)
                try:
                    self._spawn(index, rank, argv, task_env)
                finally:
                    if theirs >= 0:
                        os.close(theirs)
        finally:
            if saved:
                _set_limits(saved)  # the limits are the job's tasks', not the shell's

    def _options(self, job: Description) -> list[dict[str, str]] | None:
        """Take the job's exit options; fill in ``{{tmpdir}}``; the tasks' own variables."""
        task_envs = job.task_env
        tmpdir = job.env["FLUX_JOB_TMPDIR"]
        for key in job.tmpdir_env:
            for values in (job.env, *(task_envs or ())):
                if key in values:
                    values[key] = values[key].replace("{{tmpdir}}", tmpdir)
        self.argv0 = job.argv[0].rpartition("/")[2]
        self.exit_timeout = job.exit_timeout
        self.exit_on_error = job.exit_on_error
        self.own_groups = not job.nosetpgrp
        return task_envs

    def _pmi_connect(self, rank: int, size: int, env: dict[str, str]) -> int:
        """Task ``rank``'s PMI_FD, as flux-core's shell sets it: the task's end, inheritable."""
        ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
        fd = theirs.detach()
        os.set_inheritable(fd, True)
        self.pmi_fds[ours.fileno()] = rank
        self.poller.register(ours.detach(), _IN)
        env["PMI_FD"] = str(fd)
        env["PMI_RANK"] = str(rank)
        env["PMI_SIZE"] = str(size)
        return fd

    def _make_tmpdir(self, candidates: tuple[str, ...]) -> str:
        """FLUX_JOB_TMPDIR, named as flux-core names it; removed when the shell ends.
        A candidate may lie in a shared place (/tmp): ``shared.private_dir``."""
        refused = []
        for path in candidates:
            why = private_dir(path)
            if not why:
                self.tmpdir = path
                return path
            refused.append(why)
        raise _Failed(f"error creating FLUX_JOB_TMPDIR ({'; '.join(refused)})", 1)

    def _open_outputs(self, outputs: list[Any]) -> None:
        """Open the files output goes to; tasks and streams that name one path share it."""
        opened = self.files
        for target in outputs:
            if not isinstance(target, tuple):  # kept in the KVS: is it line-buffered?
                self.targets.append(((), False, bool(target)))
                continue
            paths, append, labelled = target
            fds = []
            for path in paths:
                fd = opened.get(path)
                if fd is None:
                    try:
                        fd = opened[path] = open_output(path, append=append)
                    except OSError as exc:
                        raise _Failed(
                            f"error opening output file {path}: {exc.strerror}", 1
                        ) from None
                fds.append(fd)
            self.targets.append((tuple(fds), labelled, True))

    def _bind(self, cpus: tuple[int, ...]) -> None:
        """Bind the shell (and so the next task it starts) to ``cpus``."""
        try:
            os.sched_setaffinity(0, cpus)
        except OSError as exc:
            warn(f"job {wire.key_name(self.jobid)}: cannot bind to CPUs {list(cpus)}: {exc}")

    def _stdin(self, rank: int) -> tuple[int, int]:
        """(the task's stdin, the shell's end of its pipe or -1)."""
        if self.stdin_file is not None:  # opened for each task, as flux-core does
            try:
                return os.open(self.stdin_file, os.O_RDONLY | os.O_CLOEXEC), -1
            except OSError as exc:
                raise _Failed(
                    f"error opening input file '{self.stdin_file}': {exc.strerror}", 1
                ) from None
        return os.pipe()  # the shell's end is made non-blocking when input first comes

    def _spawn(self, index: int, rank: int, argv: list[str], env: dict[str, str]) -> None:
        if rank in self.ptys:
            self._spawn_on_pty(index, rank, argv, env)
            return
        ends = []  # the task's stdout and stderr
        readers = []  # (the shell's end, its stream, the labelled file or -1, line-buffered)
        for stream, (files, labelled, line) in enumerate(self.targets):
            file = (files[index] if len(files) > 1 else files[0]) if files else -1
            if file >= 0 and not labelled:
                ends.append(file)
                continue
            reader, writer = os.pipe()
            ends.append(writer)
            readers.append((reader, stream, file, line))
        stdin, feeder = self._stdin(rank)
        try:
            pid = proc.spawn(
                argv, env, stdin=stdin, stdout=ends[0], stderr=ends[1], own_group=self.own_groups
            )
        except OSError as exc:
            for reader, _, _, _ in readers:
                os.close(reader)
            if feeder >= 0:
                os.close(feeder)
            raise self._start_failed(rank, argv, exc) from None
        finally:
            os.close(stdin)
            for _, stream, _, _ in readers:
                os.close(ends[stream])
        self._started(pid, rank)
        if feeder >= 0:
            self.feeder.add(rank, feeder)
        for reader, stream, file, line in readers:
            tag = _STREAMS[stream] + rank.to_bytes(4, "big")
            self.pipes[reader] = _Pipe(tag, file, rank, line)
            self.poller.register(reader, _IN)

    def _spawn_on_pty(self, index: int, rank: int, argv: list[str], env: dict[str, str]) -> None:
        """A task on a new pty (``pflux.exec.terminal``): its output is the rank's stdout."""
        files, labelled, _ = self.targets[0]
        file = (files[index] if len(files) > 1 else files[0]) if files else -1
        stdin = -1
        if self.stdin_file is not None:  # the --input file, rather than the terminal
            stdin = self._stdin(rank)[0]
        master, slave = os.openpty()
        try:
            pid = proc.spawn_on_tty(argv, env, os.ttyname(slave), stdin=stdin)
        except OSError as exc:
            os.close(master)
            raise self._start_failed(rank, argv, exc) from None
        finally:
            os.close(slave)
            if stdin >= 0:
                os.close(stdin)
        self._started(pid, rank)
        if stdin < 0:
            self.feeder.add(rank, os.dup(master), tty=True)
        self.masters.append(master)
        # what a terminal shows is sent as it comes (a prompt ends no line)
        tag = _STREAMS[0] + rank.to_bytes(4, "big")
        pipe = self.pipes[master] = _Pipe(tag, file, rank, False)
        if not labelled:
            pipe.prefix = b""
        self.poller.register(master, _IN)

    def _started(self, pid: int, rank: int) -> None:
        pidfd = os.pidfd_open(pid)
        self.pidfds[pidfd] = pid
        self.ranks[pid] = rank
        self.poller.register(pidfd, _IN)

    def _start_failed(self, rank: int, argv: list[str], exc: OSError) -> _Failed:
        return _Failed(
            f"task {rank} (host {self.host}): start failed: {argv[0]}: {exc.strerror}",
            proc.start_failure_code(exc.errno or errno.EINVAL),
        )

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
        self._emit(wire.FENCE, marshal.dumps(puts))
        self._flush()

    def _pmi_close(self, fd: int) -> None:
        del self.pmi_fds[fd]
        self.poller.unregister(fd)
        os.close(fd)

    def _from_launcher(self) -> None:
        try:
            data, ancillary, _, _ = self.sock.recvmsg(FROM_LAUNCHER, _CMSG_SPACE)
        except OSError:
            data, ancillary = b"", []
        if not data:
            self._orphan()
            return
        for kind, jobid, payload in wire.split(data)[0]:
            if jobid != self.jobid:
                continue  # passed on before the launcher heard that the last job was done
            if kind == wire.KILL:
                self._kill_all(int(payload))
            elif kind == wire.ACK:
                self._acked(int(payload))
            elif kind == wire.INPUT:
                self.feeder.receive(payload)
            elif kind == wire.RESUME:
                self._resume(int(payload), ancillary)
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
            self.pmi.fenced(marshal.loads(payload))

    def _orphan(self) -> None:
        """The launcher is gone: rejoin the next, or wait for a restarted instance's (up to
        ``ctx.rejoin_timeout``), or, if none can take the job, end it."""
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
        """Whether exec/sock's directory was removed (a temporary instance's, at its end)."""
        try:
            return os.fstat(self.ctx.exec_dir).st_nlink == 0
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
            passed = theirs.fileno().to_bytes(_FD_SIZE, sys.byteorder)
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
                self.poller.register(self.ctx.records.fileno(), _OUT)
                break
            except OSError:  # job-exec is gone
                self._detach()
                break
            log.advance(data, records)
        self._pace()

    def _pace(self) -> None:
        """Stop reading the tasks' output while a window's worth is unacknowledged."""
        log = self.log
        hold = not self.detached and log.spool < 0 and log.end - log.acked >= WINDOW
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

    def _detach(self) -> None:
        """job-exec is gone: what it has not acknowledged, and all that follows, is spooled."""
        if self.detached:
            return
        self.detached = True
        self.pending = 0
        if self.waiting_out:
            self.waiting_out = False
            self.poller.unregister(self.ctx.records.fileno())
        self.log.spool_all()
        self._pace()

    def _resume(self, offset: int, ancillary: list[tuple[int, int, bytes]]) -> None:
        """A new job-exec: send from ``offset`` on the socket the launcher passed along."""
        fds = [
            int.from_bytes(data[i : i + _FD_SIZE], sys.byteorder)
            for level, kind, data in ancillary
            if level == _SOL_SOCKET and kind == _SCM_RIGHTS
            for i in range(0, len(data) - _FD_SIZE + 1, _FD_SIZE)
        ]
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


def _set_limits(limits: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Set each (resource, soft limit); the soft limits they had, to put back."""
    import resource

    saved = []
    for number, soft in limits:
        old, hard = resource.getrlimit(number)
        try:
            resource.setrlimit(number, (soft, hard))
        except (OSError, ValueError) as exc:
            warn(f"cannot set resource limit {number} to {soft}: {exc}")
            continue
        saved.append((number, old))
    return saved


def _stage(job: Description) -> list[str]:
    """Write the jobspec's files, directories and links (``pflux.exec.files``) in the
    job's directory, with their permission bits, before any task starts (a fatal
    exception names one that fails); the command with ``{{tmpdir}}`` filled in."""
    tmpdir = job.env["FLUX_JOB_TMPDIR"]
    for name, content, mode in job.files:
        path = f"{tmpdir}/{name}"
        kind = mode & 0o170000
        try:
            if "/" in name:
                os.makedirs(path.rpartition("/")[0], 0o700, exist_ok=True)
            if kind == 0o040000:  # a directory
                os.makedirs(path, 0o700, exist_ok=True)
                os.chmod(path, mode & 0o7777)
                continue
            if kind == 0o120000:  # a symbolic link to its data
                os.symlink(content, path)
                continue
            new = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(path, new, 0o600)
            try:
                write_all(fd, content)
                os.fchmod(fd, mode & 0o7777)
            finally:
                os.close(fd)
        except OSError as exc:
            raise _Failed(f"error writing {name} to FLUX_JOB_TMPDIR: {exc.strerror}", 1) from None
    if not job.tmpdir_argv:
        return job.argv
    return [arg.replace("{{tmpdir}}", tmpdir) for arg in job.argv]
