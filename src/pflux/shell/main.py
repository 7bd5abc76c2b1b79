"""The job shell's event loop: set up, start the tasks, pass their output on, report.

The shell talks to the broker over one connection, the blocking Handle driven
by this loop's selector:

- ``job-exec.shell-attach {id}`` (streaming), sent once the tasks are
  launched (or their launch has failed): job-exec takes it as the job's start
  and answers ``{"signal": N}`` for each signal the tasks must get;
- ``job-exec.shell-update {id, type, data}``, shaped like RFC 32's responses:
  ``exception {type, severity, note}`` when the tasks could not be launched,
  and last ``finish {status}``, a request whose response the shell waits for
  and then exits. ``finish`` also carries, as ``output`` and ``exec``, the
  events not committed yet, which job-exec commits with its own last events;
  the shell sends it only once its own commits are durable, so whoever sees
  the job finish finds all of its output (RFC 16);
- ``kvs.commit`` to the job's guest namespace (``output`` and
  ``exec.eventlog``) while the job runs, one at a time, each holding
  everything gathered while the previous one was in flight.

The status reported is the wait status of the task with the largest exit
code (128 + signal for a signalled task, so a task killed by a signal keeps
its signal), or the exit code for a launch failure shifted into a wait
status, as flux-core's shell exits 127 or 126.

A shell never leaves tasks behind: if the broker connection is lost it kills
its tasks and exits; whatever its tasks leave running is killed when they
end; and if the shell itself is killed, the launcher, which adopts its
orphans, kills them.

Every shell is forked from the launcher, and on a virtual machine each page
it writes costs a fault: the shell trusts the jobspec and R (job-ingest and
the scheduler validated them) and reads only what it needs, turning any
surprise into a job exception; it waits on pidfds and epoll rather than
installing signal handlers.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import shutil
import signal
import socket
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from pflux.broker.message import Message, RPCError
from pflux.client.handle import Handle
from pflux.errors import PfluxError
from pflux.shell import tasks as proc
from pflux.shell.layout import Layout, TaskPlace, cpu_set, layout, targets
from pflux.shell.output import (
    DEFAULT_LIMIT,
    DEFAULT_LIMIT_BYTES,
    KVSOutput,
    LineBuffer,
    OutputConfig,
    StreamConfig,
    event_line,
    output_config,
    render_path,
)
from pflux.spec.fluid import JobID
from pflux.spec.idset import IdSet
from pflux.spec.jobspec import Jobspec

__all__ = ["Shell", "run", "warn"]

STREAMS: Final = ("stdout", "stderr")
FINISH_TIMEOUT: Final = 60.0  # how long job-exec may take to accept the result
EXEC_EVENT_DELAY: Final = 0.01  # exec.eventlog entries are committed within this
FLUSH_BYTES: Final = 1 << 20  # commit at once when this much output is waiting
READ_SIZE: Final = 65536


def warn(message: str) -> None:
    """Tell the instance owner (the shell's stderr is the broker's).

    Not ``logging``: it imports threading, whose after-fork work every shell
    forked from the launcher would pay for.
    """
    sys.stderr.write(f"pflux-shell: {message}\n")


class _StartFailed(PfluxError):
    """The tasks cannot be launched: a note for the job exception and the shell's exit code."""

    def __init__(self, note: str, code: int) -> None:
        super().__init__(note)
        self.note = note
        self.code = code


class _Task:
    """A task's place and, once started, its process."""

    __slots__ = ("pid", "place", "status")

    def __init__(self, place: TaskPlace) -> None:
        self.place = place
        self.pid = 0
        self.status: int | None = None


class Shell:
    """One job's shell; ``run()`` returns its exit code (0: the result was reported)."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.jobid = JobID(spec["id"])
        self.uri: str = spec["uri"]
        self.namespace: str = spec["namespace"]
        self.spec = spec
        self.record: str | None = spec.get("record")
        self.tmp_parent: str = spec.get("tmpdir") or os.environ.get("TMPDIR") or "/tmp"
        self.hostname = socket.gethostname()
        self.jobspec = Jobspec({})  # read in _prepare, where a problem can be reported
        self.layout = Layout((), ())
        self.config: OutputConfig | None = None
        self.tasks: list[_Task] = []
        self.running: dict[int, _Task] = {}  # by pid, until reaped
        self.failure: _StartFailed | None = None
        self.out = KVSOutput(DEFAULT_LIMIT_BYTES, DEFAULT_LIMIT)
        self.exec_events: list[str] = []
        self.eof_pending: set[tuple[str, int]] = set()
        self.targets: dict[str, tuple[StreamConfig, int]] = {}  # stream -> (config, file fd or -1)
        self.poller = select.epoll()
        self.handlers: dict[int, Callable[[], None]] = {}  # what to do when an fd is readable
        self.h: Handle | None = None
        self.pipes = 0  # output pipes still open
        self.due: float | None = None  # when the gathered events must be committed
        self.inflight = False
        self.terminating = False
        self.tmpdir: str | None = None
        self.files: list[int] = []
        self.devnull = -1

    # --- top level --------------------------------------------------------------------

    def run(self) -> int:
        if not proc.set_subreaper():
            warn(f"job {self.jobid}: cannot adopt orphaned processes (PR_SET_CHILD_SUBREAPER)")
        try:
            try:
                self.h = Handle(self.uri)
            except PfluxError as exc:
                warn(f"job {self.jobid}: {exc}")
                return 1
            return self._run(self.h)
        except RPCError as exc:
            warn(f"job {self.jobid}: {exc}: killing its tasks")
            self._kill_all(signal.SIGKILL)
            self._wait_all()
            self._kill_orphans()
            return 1
        finally:
            self._cleanup()

    def _run(self, h: Handle) -> int:
        self._watch(h.fileno(), self._on_broker)
        try:
            self._prepare()
            self._start_tasks()
        except _StartFailed as exc:
            self.failure = exc
            self._kill_all(signal.SIGKILL)
        attach = h.rpc("job-exec.shell-attach", {"id": int(self.jobid)}, streaming=True)
        attach.then(self._on_attach)
        if self.failure is not None:
            self._update("exception", {"type": "exec", "severity": 0, "note": self.failure.note})
        else:
            first = self.layout.tasks[0].broker_rank
            self._exec_event("shell.init", {"leader-rank": first, "size": 1})
            self._exec_event("shell.start", {"taskmap": self.layout.taskmap()})
        h.flush()
        while self.running or self.pipes:
            self._step()
        self._kill_orphans()
        return self._finish(h)

    def _step(self) -> None:
        timeout = None
        if self.due is not None and not self.inflight:
            timeout = max(0.0, self.due - time.monotonic())
        for fd, _ in self.poller.poll(-1 if timeout is None else timeout):
            handler = self.handlers.get(fd)
            if handler is not None:
                handler()
        self._maybe_commit()

    def _watch(self, fd: int, handler: Callable[[], None]) -> None:
        self.handlers[fd] = handler
        self.poller.register(fd, select.EPOLLIN)

    def _unwatch(self, fd: int) -> None:
        del self.handlers[fd]
        self.poller.unregister(fd)

    def _finish(self, h: Handle) -> int:
        """Report the result with whatever output is left, once earlier commits are durable."""
        for stream, rank in sorted(self.eof_pending):
            self.out.eof(stream, rank)
        self.eof_pending.clear()
        self.out.close()
        deadline = time.monotonic() + FINISH_TIMEOUT
        while self.inflight:
            if not h.process(max(0.0, deadline - time.monotonic())):
                warn(f"job {self.jobid}: output commit timed out")
                break
        payload: dict[str, Any] = {
            "id": int(self.jobid),
            "type": "finish",
            "data": {"status": self._status()},
        }
        if self.out:
            payload["output"] = self.out.take()
        if self.exec_events:
            payload["exec"] = "".join(self.exec_events)
            self.exec_events.clear()
        self._remove_tmpdir()
        h.rpc("job-exec.shell-update", payload).get(FINISH_TIMEOUT)
        return 0

    def _status(self) -> int:
        """The job's wait status: see the module docstring."""
        if self.failure is not None:
            return self.failure.code << 8
        worst = 0
        worst_code = -1
        for task in self.tasks:
            if task.status is not None and proc.exit_code(task.status) > worst_code:
                worst, worst_code = task.status, proc.exit_code(task.status)
        return worst

    # --- setting up -------------------------------------------------------------------

    def _prepare(self) -> None:
        """Read the job, then make its directory, go to its cwd and open its output files."""
        try:
            jobspec = Jobspec(self.spec["jobspec"])
            ntasks = jobspec.ntasks
            self.layout = layout(jobspec, targets(self.spec["R"]))
            self.config = output_config(jobspec.shell_options.get("output", {}))
            cwd = jobspec.cwd
            name = jobspec.name
        except PfluxError as exc:
            raise _StartFailed(f"invalid job: {exc}", 1) from None
        except (LookupError, TypeError, ValueError, AttributeError) as exc:
            raise _StartFailed(f"invalid jobspec: {exc!r}", 1) from None
        self.jobspec = jobspec
        self.tasks = [_Task(place) for place in self.layout.tasks]
        self.out.set_limit(self.config.limit, self.config.limit_text)
        self.out.header(ntasks)
        self.eof_pending = {(stream, rank) for stream in STREAMS for rank in range(ntasks)}
        self._due_in(EXEC_EVENT_DELAY)
        self._make_tmpdir()
        if cwd is not None:
            try:
                os.chdir(cwd)
            except OSError as exc:
                raise _StartFailed(
                    f"host {self.hostname}: Could not change dir to {cwd}: {exc.strerror}", 1
                ) from None
        self._open_outputs(ntasks, name)
        self.devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)

    def _make_tmpdir(self) -> None:
        """FLUX_JOB_TMPDIR, named as flux-core names it; removed when the shell ends."""
        name = f"jobtmp-0-{self.jobid.f58}"
        for parent in (self.tmp_parent, os.environ.get("TMPDIR") or "/tmp"):
            path = os.path.join(parent, name)
            try:
                os.mkdir(path, 0o700)
            except FileExistsError:
                pass
            except OSError:
                continue
            self.tmpdir = path
            return
        raise _StartFailed("error creating FLUX_JOB_TMPDIR", 1)

    def _open_outputs(self, ntasks: int, name: str) -> None:
        """Open the files output goes to; stdout and stderr share one open file when they can."""
        assert self.config is not None
        opened: dict[str, int] = {}
        ranks = IdSet.range(0, ntasks - 1).encode(brackets=True)
        for stream in STREAMS:
            conf: StreamConfig = getattr(self.config, stream)
            if conf.type != "file":
                self.targets[stream] = (conf, -1)
                continue
            self.eof_pending.difference_update((stream, rank) for rank in range(ntasks))
            assert conf.path is not None
            path = render_path(conf.path, self.jobid, name)
            fd = opened.get(path)
            if fd is None:
                flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC
                flags |= os.O_APPEND if conf.mode == "append" else os.O_TRUNC
                try:
                    fd = os.open(path, flags, 0o666)
                except OSError as exc:
                    raise _StartFailed(
                        f"error opening output file {path}: {exc.strerror}", 1
                    ) from None
                opened[path] = fd
                self.files.append(fd)
            self.targets[stream] = (conf, fd)
            self.out.redirect(stream, ranks, path)

    def _environment(self) -> dict[str, str]:
        """The environment every task shares: the jobspec's and flux's job variables."""
        env = dict(self.jobspec.environment)
        env["FLUX_JOB_ID"] = self.jobid.f58
        env["FLUX_JOB_SIZE"] = str(len(self.tasks))
        env["FLUX_JOB_NNODES"] = str(self.layout.nnodes)
        if self.tmpdir is not None:
            env["FLUX_JOB_TMPDIR"] = self.tmpdir
        env["PFLUX_URI"] = self.uri
        env["PFLUX_KVS_NAMESPACE"] = self.namespace
        if "HOSTNAME" in env:
            env["HOSTNAME"] = self.hostname
        return env

    def _start_tasks(self) -> None:
        base = self._environment()
        if "PATH" in base:
            # posix_spawnp searches the caller's PATH: make it the job's
            os.environ["PATH"] = base["PATH"]
        argv = self.jobspec.command
        cpus = sorted(os.sched_getaffinity(0))
        bound: set[int] | None = None
        for task in self.tasks:
            place = task.place
            want = cpu_set(place.cores, cpus)
            if want != bound:
                bound = want if self._bind(want) else bound
            env = dict(base)
            env["FLUX_TASK_RANK"] = str(place.rank)
            env["FLUX_TASK_LOCAL_ID"] = str(place.local_id)
            env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, place.gpus)) if place.gpus else "-1"
            self._spawn(task, argv, env)
        if bound is not None and bound != set(cpus):
            self._bind(set(cpus))  # the shell itself may run anywhere again

    def _bind(self, cpus: set[int]) -> bool:
        """Bind the shell (and so the next task it starts) to ``cpus``."""
        try:
            os.sched_setaffinity(0, cpus)
        except OSError as exc:
            warn(f"job {self.jobid}: cannot bind to CPUs {sorted(cpus)}: {exc}")
            return False
        return True

    def _spawn(self, task: _Task, argv: list[str], env: dict[str, str]) -> None:
        child: dict[str, int] = {}
        readers: dict[str, int] = {}
        for stream in STREAMS:
            conf, fd = self.targets[stream]
            if fd >= 0 and not conf.label:
                child[stream] = fd
            else:
                readers[stream], child[stream] = os.pipe()
        try:
            task.pid = proc.spawn(
                argv, env, stdin=self.devnull, stdout=child["stdout"], stderr=child["stderr"]
            )
        except OSError as exc:
            for fd in readers.values():
                os.close(fd)
            code = proc.start_failure_code(exc.errno or errno.EINVAL)
            raise _StartFailed(
                f"task {task.place.rank} (host {self.hostname}): start failed:"
                f" {argv[0]}: {exc.strerror}",
                code,
            ) from None
        finally:
            for stream in readers:
                os.close(child[stream])
        self.running[task.pid] = task
        self._watch_exit(task)
        for stream, fd in readers.items():
            self._watch_output(task, stream, fd)

    # --- events -----------------------------------------------------------------------

    def _watch_exit(self, task: _Task) -> None:
        """Reap the task when it exits (a pidfd: no SIGCHLD handler, so nothing to undo)."""
        pidfd = os.pidfd_open(task.pid)

        def exited() -> None:
            pid, status = os.waitpid(task.pid, os.WNOHANG)
            if pid:
                task.status = status
                del self.running[task.pid]
                self._unwatch(pidfd)
                os.close(pidfd)

        self._watch(pidfd, exited)

    def _on_broker(self) -> None:
        assert self.h is not None
        self.h.process()

    def _on_attach(self, msg: Message) -> None:
        if msg.errnum:
            if msg.errnum != errno.ENODATA and not self.terminating:
                warn(f"job {self.jobid}: job-exec refused the shell: {msg.errstr}")
                self.terminating = True
                self._kill_all(signal.SIGKILL)
            return
        signum = msg.payload.get("signal") if isinstance(msg.payload, dict) else None
        if isinstance(signum, int):
            self._kill_all(signum)

    def _watch_output(self, task: _Task, stream: str, fd: int) -> None:
        conf, file_fd = self.targets[stream]
        buffer = LineBuffer(conf.buffer == "line" or conf.label)
        rank = task.place.rank
        prefix = f"{rank}: ".encode()

        def write(data: bytes) -> None:
            if file_fd >= 0:
                _write_all(file_fd, _label(prefix, data))
            else:
                self._output(stream, rank, data)

        def readable() -> None:
            data = os.read(fd, READ_SIZE)
            if data:
                chunk = buffer.feed(data)
                if chunk:
                    write(chunk)
                return
            rest = buffer.rest()
            if rest:
                write(rest)
            self._unwatch(fd)
            os.close(fd)
            self.pipes -= 1
            if file_fd < 0:
                self.out.eof(stream, rank)
                self.eof_pending.discard((stream, rank))

        self._watch(fd, readable)
        self.pipes += 1

    def _output(self, stream: str, rank: int, data: bytes) -> None:
        self.out.data(stream, rank, data)
        self._due_in(self.config.batch_timeout if self.config else 0.0)

    # --- reporting --------------------------------------------------------------------

    def _update(self, kind: str, data: dict[str, Any]) -> None:
        assert self.h is not None
        self.h.send("job-exec.shell-update", {"id": int(self.jobid), "type": kind, "data": data})

    def _exec_event(self, name: str, context: dict[str, Any]) -> None:
        self.exec_events.append(event_line(name, context))
        self._due_in(EXEC_EVENT_DELAY)

    def _due_in(self, delay: float) -> None:
        due = time.monotonic() + delay
        if self.due is None or due < self.due:
            self.due = due

    def _maybe_commit(self) -> None:
        """Send what has gathered if it is due and no commit is in flight."""
        if self.inflight or not (self.out or self.exec_events):
            return
        if (
            self.due is not None
            and time.monotonic() < self.due
            and self.out.pending_bytes < FLUSH_BYTES
        ):
            return
        assert self.h is not None
        ops: list[list[str]] = []
        if self.exec_events:
            ops.append(["append", "exec.eventlog", "".join(self.exec_events)])
            self.exec_events.clear()
        if self.out:
            ops.append(["append", "output", self.out.take()])
        self.inflight = True
        self.due = None
        self.h.rpc("kvs.commit", {"ops": ops, "namespace": self.namespace}).then(self._committed)
        self.h.flush()

    def _committed(self, msg: Message) -> None:
        self.inflight = False
        if msg.errnum:
            warn(f"job {self.jobid}: output commit failed: {msg.errstr}")

    # --- ending -----------------------------------------------------------------------

    def _kill_all(self, signum: int) -> None:
        for pid in self.running:
            proc.signal_task(pid, signum)

    def _wait_all(self) -> None:
        for pid, task in list(self.running.items()):
            with contextlib.suppress(ChildProcessError):
                _, task.status = os.waitpid(pid, 0)
            del self.running[pid]

    def _kill_orphans(self) -> None:
        """Kill what the tasks left running (the shell adopts it, as a subreaper), and reap it."""
        while orphans := proc.children():
            for pid in orphans:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            for pid in orphans:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, 0)

    def _remove_tmpdir(self) -> None:
        if self.tmpdir is not None:
            try:
                os.rmdir(self.tmpdir)  # most jobs leave it empty
            except OSError:
                shutil.rmtree(self.tmpdir, ignore_errors=True)
            self.tmpdir = None

    def _cleanup(self) -> None:
        self._remove_tmpdir()
        for fd in self.files:
            os.close(fd)
        self.files.clear()
        if self.devnull >= 0:
            os.close(self.devnull)
            self.devnull = -1
        if self.h is not None:
            self.h.close()
        self.poller.close()
        if self.record is not None and not self.running:
            # nothing of the job runs any more: the launcher need not remember it
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.record)


def _label(prefix: bytes, data: bytes) -> bytes:
    """Prefix every line of ``data`` with ``prefix`` (``label`` output, as flux-core's)."""
    lines = data.split(b"\n")
    last = lines.pop()
    out = b"".join(prefix + line + b"\n" for line in lines)
    return out + prefix + last if last else out


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def run(spec: Mapping[str, Any]) -> int:
    """Run the shell for ``spec`` (see ``pflux.exec.launcher``); the shell's exit code."""
    try:
        shell = Shell(spec)
    except (LookupError, TypeError, PfluxError) as exc:
        warn(f"bad job description: {exc!r}")
        return 1
    return shell.run()
