"""The job shell: one process per job, forked by the launcher, that runs the job's tasks.

A shell does only what is particular to its job, and as little Python as it
can: it is forked from the launcher, and every page it writes after the fork
costs a page fault (about 5 us here), so what is shared (the broker
connection, the KVS, batching) is done once for every job by the launcher
and job-exec, and so is the reading of the jobspec: job-exec sends a ready
description (``pflux.shell.plan``). The shell has no broker connection, no
asyncio and no logging: it gets its job and signals from the launcher on a
socket of its own, and sends job-exec its ``pflux.exec.wire`` records, in
datagrams, on a socket every shell inherits.

In order, a shell

1. is forked ahead of need (``serve``): it leads a new session, becomes a
   child subreaper, so whatever its tasks leave behind is adopted by it, and
   waits for its job (a SPAWN record);
2. records its session in the launcher's journal (``pflux.exec.journal``)
   before anything else, makes ``FLUX_JOB_TMPDIR``, goes to the job's cwd and
   opens its ``--output``/``--error`` files;
3. starts each task with ``posix_spawn``, bound to its cores (the shell
   binds itself before each spawn, and stays with the last), with flux's
   environment, stdin on ``/dev/null`` and stdout and stderr on pipes (or
   straight into a file that is not labelled);
4. sends STARTED with the time the tasks started, or, if a task could not
   be started, STARTED and an EXCEPTION with flux-core's note, and kills the
   tasks already started. STARTED waits up to ``START_HOLD`` for the job's
   first output or its end, so that a short job costs job-exec one message
   rather than two;
5. relays what the tasks write to pipes (OUTPUT, then EOF when a pipe
   closes), or writes it, labelled, to its file; signals the tasks when the
   launcher asks. It sends what it has gathered whenever nothing else is
   ready, in as few datagrams as it can: every send wakes job-exec;
6. once every task has exited and its pipes are closed, kills what the tasks
   left running, removes ``FLUX_JOB_TMPDIR`` and sends the job's status
   (EXITED): flux's status, the wait status of a shell exiting with the
   largest task exit code (128 + signal for a task killed by a signal), or
   for a launch failure 127 (not found), 126 (not executable) or 1. Then it
   exits with 0, which tells the launcher the status is sent.

If the launcher goes away, the shell kills its tasks and ends as in 6:
nothing of a job runs unknown to the launcher.
"""

from __future__ import annotations

import errno
import marshal
import os
import select
import sys
import time

from pflux.errors import PfluxError
from pflux.exec import journal, wire
from pflux.shell import tasks as proc
from pflux.shell.lines import LineBuffer, label

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (mypy knows it)
if TYPE_CHECKING:  # the launcher imports this before it forks: keep typing out of it
    import signal as _signal
    from _socket import socket
    from typing import Any, Final
else:
    import _signal  # not signal, which imports enum: the launcher keeps its imports few

__all__ = ["Context", "Shell", "serve", "warn"]

READ_SIZE: Final = 65536
DATAGRAM: Final = 65536  # records are sent in datagrams of about this size at most
SPAWN_CHUNK: Final = 65536  # the launcher sends a job's description in datagrams of this size
_IDLE: Final = os.sched_param(0)
START_HOLD: Final = 0.01  # seconds STARTED may wait for company (see the module docstring)
_STREAMS: Final = (wire.STDOUT, wire.STDERR)


class Context:
    """What the launcher gives every shell it forks, made once, before any fork."""

    __slots__ = ("boot", "cpus", "devnull", "journal", "path", "records")

    def __init__(
        self,
        *,
        journal: int,
        boot: bytes,
        devnull: int,
        cpus: tuple[int, ...],
        path: str | None,
        records: socket,
    ) -> None:
        self.records = records  # the datagram socket every shell sends job-exec its records on
        self.journal = journal  # the journal, open for appending
        self.boot = boot  # the boot id its records carry
        self.devnull = devnull  # the tasks' stdin
        self.cpus = cpus  # the CPUs the shell may use, and tasks not bound elsewhere
        self.path = path  # the launcher's PATH


def warn(message: str) -> None:
    """Tell the instance owner (a shell's stderr is the broker's)."""
    sys.stderr.write(f"pflux-shell: {message}\n")


class _Failed(PfluxError):
    """The tasks cannot be launched: the exception note, and the shell's exit code."""

    def __init__(self, note: str, code: int) -> None:
        super().__init__(note)
        self.note = note
        self.code = code


class _Pipe:
    """A task's stdout or stderr as the shell reads it: relayed, or labelled into a file."""

    __slots__ = ("buffer", "file", "prefix", "tag")

    def __init__(self, tag: bytes, file: int, rank: int) -> None:
        self.tag = tag  # the stream byte and the rank, as OUTPUT and EOF records carry them
        self.file = file  # a labelled file, or -1 to relay
        self.buffer = LineBuffer(True)
        self.prefix = b"%d: " % rank


class Shell:
    """One job's shell; ``run()`` returns its exit code."""

    __slots__ = (
        "codes",
        "ctx",
        "failure",
        "host",
        "jobid",
        "orphaned",
        "pending",
        "pidfds",
        "pipes",
        "poller",
        "records",
        "sock",
        "targets",
        "tmpdir",
    )

    def __init__(self, jobid: int, ctx: Context, sock: socket) -> None:
        self.jobid = jobid
        self.ctx = ctx
        self.sock = sock  # the shell's end of its socket pair with the launcher
        self.host = ""
        self.records: list[bytes] = []
        self.pending = 0  # payload bytes in ``records``
        self.poller = select.poll()
        self.pipes: dict[int, _Pipe] = {}
        self.pidfds: dict[int, int] = {}  # pidfd -> pid, until the task is reaped
        self.codes: list[int] = []  # the exit codes of the tasks reaped
        self.targets: list[tuple[int, bool]] = []  # per stream: (file or -1, labelled)
        self.failure: _Failed | None = None
        self.tmpdir: str | None = None
        self.orphaned = False  # the launcher is gone

    def run(self, description: bytes) -> int:
        try:
            self._record()
            self._start(marshal.loads(description))
        except _Failed as exc:
            self.failure = exc
            self._kill_all(_signal.SIGKILL)
            self._emit(wire.STARTED, b"%r" % time.time())
            self._emit(wire.EXCEPTION, exc.note.encode())
            hold = 0.0
        else:
            self._emit(wire.STARTED, b"%r" % time.time())
            hold = time.monotonic() + START_HOLD
        sock = self.sock.fileno()
        self.poller.register(sock, select.POLLIN)
        poll = self.poller.poll
        while self.pipes or self.pidfds:
            ready = poll(0)
            if not ready:  # send what has gathered only when nothing more is ready
                wait = hold - time.monotonic() if self.records else 0.0
                if wait > 0:
                    ready = poll(wait * 1000)
                    if not ready:
                        hold = 0.0
                    continue
                self._flush()
                hold = 0.0
                ready = poll()
            for fd, _ in ready:
                if fd in self.pipes:
                    self._read(fd)
                elif fd in self.pidfds:
                    self._reap(fd)
                elif fd == sock:
                    self._from_launcher()
        self._kill_orphans()
        self._remove_tmpdir()
        code = self.failure.code if self.failure is not None else max(self.codes, default=0)
        self._emit(wire.EXITED, b"%d" % (code << 8))  # last: the job is over
        self._flush()
        return 1 if self.orphaned else 0  # 0: the status is reported, nobody need wait for us

    # --- setting up -------------------------------------------------------------------

    def _record(self) -> None:
        """Journal the session before any task exists, so a crash cannot lose track of it."""
        when = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
        line = journal.start_line(self.jobid, os.getpid(), when, self.ctx.boot)
        try:
            os.write(self.ctx.journal, line)
        except OSError as exc:
            raise _Failed(f"cannot record the job shell: {exc.strerror}", 1) from None

    def _start(self, description: tuple[Any, ...]) -> None:
        """Make the job's directory, go to its cwd, open its files and start its tasks."""
        argv, env, tasks, cwd, tmpdirs, host, *outputs = description
        self.host = host
        env["FLUX_JOB_TMPDIR"] = self._make_tmpdir(tmpdirs)
        if cwd is not None:
            try:
                os.chdir(cwd)
            except OSError as exc:
                raise _Failed(
                    f"host {host}: Could not change dir to {cwd}: {exc.strerror}", 1
                ) from None
        self._open_outputs(outputs)
        path = env.get("PATH")
        if path is not None and path != self.ctx.path:
            os.putenv("PATH", path)  # posix_spawnp searches the caller's PATH
        bound = None  # the shell stays where its last task is: its work is the job's
        last = len(tasks) - 1
        for index, (rank, local_id, cpus, gpus) in enumerate(tasks):
            if cpus != bound:
                self._bind(cpus or self.ctx.cpus)
                bound = cpus
            task_env = env if index == last else dict(env)
            task_env["FLUX_TASK_RANK"] = str(rank)
            task_env["FLUX_TASK_LOCAL_ID"] = str(local_id)
            task_env["CUDA_VISIBLE_DEVICES"] = gpus
            self._spawn(rank, argv, task_env)

    def _make_tmpdir(self, candidates: tuple[str, ...]) -> str:
        """FLUX_JOB_TMPDIR, named as flux-core names it; removed when the shell ends."""
        for path in candidates:
            try:
                os.mkdir(path, 0o700)
            except FileExistsError:
                pass
            except OSError:
                continue
            self.tmpdir = path
            return path
        raise _Failed("error creating FLUX_JOB_TMPDIR", 1)

    def _open_outputs(self, outputs: list[Any]) -> None:
        """Open the files output goes to; stdout and stderr share one open file when they can."""
        opened: dict[str, int] = {}
        for target in outputs:
            if target is None:
                self.targets.append((-1, False))
                continue
            path, append, labelled = target
            fd = opened.get(path)
            if fd is None:
                flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC
                flags |= os.O_APPEND if append else os.O_TRUNC
                try:
                    fd = opened[path] = os.open(path, flags, 0o666)
                except OSError as exc:
                    raise _Failed(f"error opening output file {path}: {exc.strerror}", 1) from None
            self.targets.append((fd, labelled))

    def _bind(self, cpus: tuple[int, ...]) -> None:
        """Bind the shell (and so the next task it starts) to ``cpus``."""
        try:
            os.sched_setaffinity(0, cpus)
        except OSError as exc:
            warn(f"job {self.jobid}: cannot bind to CPUs {list(cpus)}: {exc}")

    def _spawn(self, rank: int, argv: list[str], env: dict[str, str]) -> None:
        ends = []  # the task's stdout and stderr
        readers = []  # (the shell's end, its stream, the labelled file or -1)
        for stream, (file, labelled) in enumerate(self.targets):
            if file >= 0 and not labelled:
                ends.append(file)
                continue
            reader, writer = os.pipe()
            ends.append(writer)
            readers.append((reader, stream, file))
        try:
            pid = proc.spawn(argv, env, stdin=self.ctx.devnull, stdout=ends[0], stderr=ends[1])
        except OSError as exc:
            for reader, _, _ in readers:
                os.close(reader)
            raise _Failed(
                f"task {rank} (host {self.host}): start failed: {argv[0]}: {exc.strerror}",
                proc.start_failure_code(exc.errno or errno.EINVAL),
            ) from None
        finally:
            for _, stream, _ in readers:
                os.close(ends[stream])
        pidfd = os.pidfd_open(pid)
        self.pidfds[pidfd] = pid
        self.poller.register(pidfd, select.POLLIN)
        for reader, stream, file in readers:
            self.pipes[reader] = _Pipe(_STREAMS[stream] + rank.to_bytes(4, "big"), file, rank)
            self.poller.register(reader, select.POLLIN)

    # --- running ----------------------------------------------------------------------

    def _read(self, fd: int) -> None:
        pipe = self.pipes[fd]
        data = os.read(fd, READ_SIZE)
        if pipe.file < 0:
            self._emit(wire.OUTPUT if data else wire.EOF, pipe.tag + data)
        elif data:
            chunk = pipe.buffer.feed(data)
            if chunk:
                _write_all(pipe.file, label(pipe.prefix, chunk))
        else:
            rest = pipe.buffer.rest()
            if rest:
                _write_all(pipe.file, label(pipe.prefix, rest))
        if not data:
            self.poller.unregister(fd)
            os.close(fd)
            del self.pipes[fd]

    def _reap(self, pidfd: int) -> None:
        pid, status = os.waitpid(self.pidfds[pidfd], os.WNOHANG)
        if pid:
            self.codes.append(proc.exit_code(status))
            del self.pidfds[pidfd]
            self.poller.unregister(pidfd)
            os.close(pidfd)

    def _from_launcher(self) -> None:
        try:
            data = self.sock.recv(4096)
        except OSError:
            data = b""
        if not data:
            self._orphan()
            return
        records, _ = wire.split(data)
        for kind, _, payload in records:
            if kind == wire.KILL:
                self._kill_all(int(payload))

    def _orphan(self) -> None:
        """The launcher is gone: nobody will hear of the job, so it must not go on."""
        if not self.orphaned:
            self.orphaned = True
            self.records.clear()
            self.poller.unregister(self.sock.fileno())
            self._kill_all(_signal.SIGKILL)

    def _kill_all(self, signum: int) -> None:
        for pid in self.pidfds.values():
            proc.signal_task(pid, signum)

    # --- reporting --------------------------------------------------------------------

    def _emit(self, kind: bytes, payload: bytes = b"") -> None:
        if not self.orphaned:
            self.records.append(wire.record(kind, self.jobid, payload))
            self.pending += len(payload)
            if self.pending >= DATAGRAM:  # a busy task: send as much as a datagram holds
                self._flush()

    def _flush(self) -> None:
        """Send the records gathered, in datagrams of at most about DATAGRAM bytes."""
        records = self.records
        self.pending = 0
        while records and not self.orphaned:
            count, size = 1, len(records[0])
            while count < len(records) and size + len(records[count]) <= DATAGRAM:
                size += len(records[count])
                count += 1
            try:
                self.ctx.records.send(b"".join(records[:count]) if count > 1 else records[0])
            except OSError:  # job-exec is gone, and the launcher with it
                self._orphan()
                return
            del records[:count]

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

    def _remove_tmpdir(self) -> None:
        if self.tmpdir is None:
            return
        try:
            os.rmdir(self.tmpdir)  # most jobs leave it empty
        except OSError:
            import shutil

            shutil.rmtree(self.tmpdir, ignore_errors=True)
        self.tmpdir = None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def serve(ctx: Context, sock: socket) -> int:
    """Be a spare shell: lead a session, wait for a job, run it; the exit code.

    The launcher forks shells ahead of need, so that a job waits for one
    ``send`` rather than for a fork. A spare whose socket ends (the launcher
    retires it, or is gone) exits with 0, having run nothing.
    """
    os.setsid()
    if not proc.set_subreaper():
        warn("cannot adopt orphaned processes (PR_SET_CHILD_SUBREAPER)")
    try:
        data = sock.recv(SPAWN_CHUNK)
    except OSError:
        return 0
    if len(data) < wire.HEADER.size:
        return 0
    kind, jobid, length = wire.HEADER.unpack_from(data)
    while len(data) < wire.HEADER.size + length:  # a large description comes in pieces
        more = sock.recv(SPAWN_CHUNK)
        if not more:
            return 0
        data += more
    if kind != wire.SPAWN:
        return 0
    shell = Shell(jobid, ctx, sock)
    try:
        code = shell.run(data[wire.HEADER.size :])
    except BaseException as exc:  # a shell must end here, whatever happened
        _crashed(shell, exc)
        raise
    # The job is over and reported: tearing this process down is nobody's wait, so it
    # runs only when the CPUs have nothing better to do.
    os.sched_setscheduler(0, os.SCHED_IDLE, _IDLE)
    return code


def _crashed(shell: Shell, exc: BaseException) -> None:
    """The shell failed: say so, then die by SIGKILL, so that the launcher kills its tasks."""
    try:
        import traceback

        warn(f"job shell for job {shell.jobid} failed:")
        traceback.print_exception(exc)
        note = f"job shell failed: {exc!r}".encode()
        shell.ctx.records.send(wire.record(wire.EXCEPTION, shell.jobid, note))
    finally:
        os.kill(os.getpid(), _signal.SIGKILL)
