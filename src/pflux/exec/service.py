"""job-exec: the RFC 32 execution service.

The job-manager sends ``job-exec.start {id, userid, jobspec, reattach, R}``
for each allocated job and reads the stream of ``{id, type, data}``
responses: ``start`` once the tasks run, ``exception``, ``finish {status}``
and, always last, ``release {ranks: "all", final: true}``. Every response
has errnum 0; a conventional error response means job-exec itself is broken
(a malformed request, or a second start for a running job).

A job runs in test mode (``pflux.exec.testexec``: one timer, no process)
when its jobspec asks, and otherwise in a job shell forked by the shell
launcher (``pflux.exec.launcher``). For a real job, job-exec creates the
guest namespace ``job-<id>`` over ``job.<kvs id>.guest`` and posts ``init``
and ``starting`` to its ``exec.eventlog``; the shell adds ``shell.init`` and
``shell.start``; once the shell is gone job-exec posts ``complete {status}``
and ``done``, removes the namespace (its keys stay as the final snapshot,
RFC 16), and only then answers ``finish`` and ``release``.

Shells talk to job-exec through ``job-exec.shell-attach {id}``, sent once
the tasks are launched (job-exec answers ``start``; the stream's responses
``{signal}`` carry signals for the tasks), and ``job-exec.shell-update {id,
type, data}`` (``exception``, then ``finish {status}`` with the output not
yet committed; see ``pflux.shell.main``).

Signals and time, as flux-core's job-exec: a fatal exception (``job-exec.exception``
severity 0, or one job-exec raises) sends SIGTERM to the tasks, SIGKILL
every ``kill-timeout`` (5 s; ``[exec] kill-timeout`` in the config) after
that, and after five kill timeouts SIGKILL to the shell itself, backing off
up to 300 s. When R's expiration passes, job-exec raises a ``timelimit``
exception (RFC 21's name; flux-core says ``timeout``) with flux-core's note
``resource allocation expired`` and sends SIGALRM, then SIGKILL after the
kill timeout. A job whose tasks all succeeded but which had a fatal
exception finishes with status 256 (exit code 1), as in flux-core.

Reattach (``reattach: true`` after an instance restart) is not supported
yet: the job gets a fatal ``exec`` exception noting that it was running when
the instance restarted, anything left of its shell is killed, and it is
released.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Coroutine
from typing import Any, Final, Protocol, TypeGuard

from pflux.broker.message import Message, RPCError
from pflux.broker.router import Broker, Request, Service, method
from pflux.errors import DurationError, PfluxError
from pflux.exec.launcher import Launcher, kill_recorded
from pflux.exec.testexec import MockRun, mock_config
from pflux.shell.output import event_line
from pflux.spec import duration
from pflux.spec.exec_protocol import ExecResponse, response
from pflux.spec.fluid import JobID

__all__ = ["ExecJob", "JobExec", "ShellRun"]

log = logging.getLogger("pflux.job-exec")

DEFAULT_KILL_TIMEOUT: Final = 5.0
MAX_KILL_TIMEOUT: Final = 300.0
SHELL_KILL_FACTOR: Final = 5  # the shell itself is killed after this many kill timeouts
MAX_START_DELAY_PERCENT: Final = 25.0
MAX_JOBID: Final = (1 << 64) - 1
RESTART_NOTE: Final = "job was running when the instance restarted"
TIMELIMIT_NOTE: Final = "resource allocation expired"


class Execution(Protocol):
    """What runs a job: a simulated run (``MockRun``) or a job shell (``ShellRun``)."""

    def start(self) -> None: ...

    def kill(self, signum: int) -> None: ...

    def kill_shell(self, signum: int) -> None: ...

    def finalize(self, finished: bool, status: int) -> Coroutine[Any, Any, None] | None: ...


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _r_times(R: Any) -> tuple[float, float]:  # noqa: N803 (R is the RFC's name)
    """R's (starttime, expiration), 0 when unset; PfluxError if they are not numbers."""
    execution = R.get("execution") if isinstance(R, dict) else None
    if not isinstance(execution, dict):
        raise PfluxError("R: execution must be an object")
    times = []
    for key in ("starttime", "expiration"):
        value = execution.get(key, 0.0)
        if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
            raise PfluxError(f"R: execution.{key} must be a number >= 0, not {value!r}")
        times.append(float(value))
    return times[0], times[1]


class ExecJob:
    """One job as RFC 32 sees it: its start stream, exceptions, signals and timers."""

    def __init__(
        self,
        service: JobExec,
        req: Request,
        *,
        jobid: int,
        userid: int,
        jobspec: dict[str, Any],
        R: dict[str, Any],  # noqa: N803
        reattach: bool,
    ) -> None:
        self.service = service
        self.loop = service.broker.loop
        self.req = req
        self.id = jobid
        self.userid = userid
        self.jobspec = jobspec
        self.R = R
        self.reattach = reattach
        self.impl: Execution | None = None
        self.started = False  # execution has begun: tasks may exist
        self.running = False  # the start response has been sent
        self.exception = False  # a fatal exception is in progress
        self.finalizing = False
        self.status = 0
        self.t0 = time.time()
        self.times = (0.0, 0.0)  # R's starttime and expiration
        self.kill_timeout = service.kill_timeout
        self._expiration: asyncio.TimerHandle | None = None
        self._kill_timer: asyncio.TimerHandle | None = None
        self._shell_timer: asyncio.TimerHandle | None = None

    def __repr__(self) -> str:
        return f"ExecJob({JobID(self.id)})"

    # --- the start stream ---------------------------------------------------------------

    def respond(self, kind: ExecResponse, data: dict[str, Any]) -> None:
        self.req.respond(response(self.id, kind, data))

    def begin(self) -> None:
        """Choose how the job runs and start it."""
        if self.reattach:
            self.impl = Leftover(self)
            self.fatal(RESTART_NOTE)
            return
        try:
            self.times = _r_times(self.R)
            config = mock_config(self.jobspec)
        except PfluxError as exc:
            self.fatal(str(exc))
            return
        self.impl = MockRun(self, config) if config is not None else ShellRun(self)
        self.impl.start()

    def set_running(self) -> None:
        """The tasks run: answer ``start`` and arm the time limit."""
        if self.running or self.finalizing:
            return
        self.running = True
        self._arm_expiration()
        self.respond(ExecResponse.START, {})

    def raise_exception(self, kind: str, severity: int, note: str) -> None:
        """Raise an exception; severity 0 is fatal and ends the job."""
        if severity == 0:
            self.fatal(note, kind)
        else:
            self.respond(ExecResponse.EXCEPTION, {"severity": severity, "type": kind, "note": note})

    def fatal(self, note: str, kind: str = "exec") -> None:
        """A fatal exception (raised once per job): kill the tasks, or end a job not begun."""
        if not self.exception:
            self.exception = True
            log.info("job %s: exception type=%s: %s", JobID(self.id), kind, note)
            self.respond(ExecResponse.EXCEPTION, {"severity": 0, "type": kind, "note": note})
        if self.started:
            self.cancel()
        else:
            self.finalize()

    def complete(self, status: int) -> None:
        """Every task is done; ``status`` is the largest wait status."""
        self.status = max(self.status, status)
        if self.exception and self.status == 0:
            self.status = 1 << 8
        self.finalize()

    def finalize(self) -> None:
        """Clean up after the implementation; answer ``finish`` (if started), then ``release``."""
        if self.finalizing:
            return
        self.finalizing = True
        self.stop_timers()
        finished = self.running
        cleanup = self.impl.finalize(finished, self.status) if self.impl is not None else None
        if cleanup is None:
            self._release(finished)
        else:
            self.service.track(self._release_after(cleanup, finished))

    async def _release_after(self, cleanup: Coroutine[Any, Any, None], finished: bool) -> None:
        try:
            await cleanup
        finally:
            self._release(finished)

    def _release(self, finished: bool) -> None:
        if finished:
            self.respond(ExecResponse.FINISH, {"status": self.status})
        self.respond(ExecResponse.RELEASE, {"ranks": "all", "final": True})
        self.service.jobs.pop(self.id, None)

    # --- exceptions and signals -------------------------------------------------------

    def on_exception(self, kind: str, severity: int) -> None:
        """The job-manager saw an exception on this job (``job-exec.exception``)."""
        if severity != 0 or self.finalizing:
            return
        if self.exception:
            if self.impl is not None and self.started:
                self.impl.kill(self.service.term_signal)
            return
        self.exception = True
        log.debug("job %s: aborted due to exception type=%s", JobID(self.id), kind)
        if self.started:
            self.cancel()
        else:
            self.finalize()

    def kill(self, signum: int) -> None:
        """Signal every task (``job-exec.kill``)."""
        if self.impl is not None and self.started and not self.finalizing:
            self.impl.kill(signum)

    def cancel(self) -> None:
        """SIGTERM the tasks, then SIGKILL them after the kill timeout (once per job)."""
        if self._kill_timer is not None or self.finalizing:
            return
        assert self.impl is not None
        self.impl.kill(self.service.term_signal)
        self._arm_kill_timers()

    def _arm_kill_timers(self) -> None:
        if self.finalizing:
            return
        if self._kill_timer is None:
            self._kill_timer = self.loop.call_later(self.kill_timeout, self._kill_tick)
        if self._shell_timer is None:
            self._shell_timer = self.loop.call_later(
                self.kill_timeout * SHELL_KILL_FACTOR, self._kill_shell_tick
            )

    def _kill_tick(self) -> None:
        assert self.impl is not None
        log.debug(
            "job %s: sending signal %d to the tasks", JobID(self.id), self.service.kill_signal
        )
        self.impl.kill(self.service.kill_signal)
        self._kill_timer = self.loop.call_later(self.kill_timeout, self._kill_tick)

    def _kill_shell_tick(self) -> None:
        """The tasks outlived SIGKILL: kill the shell itself, again with back-off."""
        assert self.impl is not None
        log.warning("job %s: killing its job shell", JobID(self.id))
        self.impl.kill_shell(self.service.kill_signal)
        if self._kill_timer is not None:
            self._kill_timer.cancel()
        self.kill_timeout = min(self.kill_timeout * 2, MAX_KILL_TIMEOUT)
        self._shell_timer = self.loop.call_later(self.kill_timeout, self._kill_shell_tick)

    def _arm_expiration(self) -> None:
        starttime, expiration = self.times
        if not expiration:
            return
        if starttime > 0 and expiration > starttime:
            # a start long delayed relative to a short job's duration extends it (flux-core)
            delay = self.t0 - starttime
            if delay / (expiration - starttime) * 100 > MAX_START_DELAY_PERCENT:
                expiration += delay
        self._expiration = self.loop.call_later(max(0.0, expiration - time.time()), self._expired)

    def _expired(self) -> None:
        self._expiration = None
        assert self.impl is not None
        log.info("job %s: time limit reached", JobID(self.id))
        self.respond(
            ExecResponse.EXCEPTION, {"severity": 0, "type": "timelimit", "note": TIMELIMIT_NOTE}
        )
        self.exception = True
        self.impl.kill(signal.SIGALRM)
        self._arm_kill_timers()

    def stop_timers(self) -> None:
        for timer in (self._expiration, self._kill_timer, self._shell_timer):
            if timer is not None:
                timer.cancel()
        self._expiration = self._kill_timer = self._shell_timer = None


class ShellRun:
    """A real run: the guest namespace, a job shell from the launcher, and its messages.

    The KVS applies the writes that arrive in one loop turn in order, in one
    transaction (``pflux.kvs.service``), so job-exec sends the namespace's
    creation with its first commit, and its last commit with the removal,
    and waits only for the second of each pair.
    """

    def __init__(self, job: ExecJob) -> None:
        self.job = job
        self.service = job.service
        self.namespace = f"job-{job.id}"
        self.created: asyncio.Future[bool] | None = None  # the namespace exists
        self.attach: Request | None = None
        self.pending: list[int] = []  # signals for a shell not attached yet
        self.spawned = False
        self.exited = False
        self.reported: int | None = None  # the status the shell reported
        self.leftover: list[list[str]] = []  # the shell's last events, committed at the end

    def start(self) -> None:
        self.created = self.job.loop.create_future()
        self.service.track(self._start(self.created))

    async def _start(self, created: asyncio.Future[bool]) -> None:
        job = self.job
        failed: list[str] = []

        def create_done(msg: Message) -> None:
            if msg.errnum:
                failed.append(msg.errstr or os.strerror(msg.errnum))

        namespace = {
            "name": self.namespace,
            "owner": job.userid,
            "prefix": f"{JobID(job.id).kvs}.guest",
        }
        self.service.broker.send("kvs.namespace-create", namespace, create_done)
        try:
            await self._commit([self._exec_op(event_line("init") + event_line("starting"))])
        except RPCError as exc:
            created.set_result(not failed)
            reason = f"failed to create guest namespace: {failed[0]}" if failed else None
            job.fatal(reason or f"failed to write exec.eventlog: {exc.errstr}")
            return
        created.set_result(True)
        if self._abandoned():
            return
        job.started = True
        self.spawned = True
        self.service.spawn(
            job.id,
            {
                "id": job.id,
                "userid": job.userid,
                "jobspec": job.jobspec,
                "R": job.R,
                "uri": self.service.uri,
                "namespace": self.namespace,
                "tmpdir": self.service.rundir,
            },
        )

    def _abandoned(self) -> bool:
        """An exception ended the job while its start was under way."""
        return self.job.finalizing

    def _exec_op(self, text: str) -> list[str]:
        return ["append", "exec.eventlog", text]

    async def _commit(self, ops: list[list[str]]) -> None:
        await self.service.broker.call("kvs.commit", {"ops": ops, "namespace": self.namespace})

    def kill(self, signum: int) -> None:
        if self.attach is not None:
            self.attach.respond({"signal": signum})
        elif not self.exited:
            self.pending.append(signum)

    def kill_shell(self, signum: int) -> None:
        if self.spawned and not self.exited:
            self.service.kill_shell(self.job.id, signum)

    def on_attach(self, req: Request) -> None:
        """The shell has launched the tasks (or failed to): the job has started."""
        if self.attach is not None or self.exited:
            raise RPCError(errno.EEXIST, f"job {JobID(self.job.id)} already has a shell")
        self.attach = req
        self.job.set_running()
        for signum in self.pending:
            req.respond({"signal": signum})
        self.pending.clear()

    def on_update(self, req: Request, kind: str, data: dict[str, Any]) -> None:
        if kind == "exception":
            severity = data.get("severity", 0)
            note = data.get("note", "")
            exc_type = data.get("type", "exec")
            if not _is_int(severity) or not isinstance(note, str) or not isinstance(exc_type, str):
                raise RPCError(errno.EPROTO, "shell-update: malformed exception")
            self.job.raise_exception(exc_type, severity, note)
        elif kind == "finish":
            status = data.get("status")
            output = req.payload.get("output")
            events = req.payload.get("exec")
            if not _is_int(status):
                raise RPCError(errno.EPROTO, "shell-update: finish status must be an integer")
            if isinstance(output, str) and output:
                self.leftover.append(["append", "output", output])
            if isinstance(events, str) and events:
                self.leftover.append(self._exec_op(events))
            self.reported = status
            self._end_attach()
        else:
            raise RPCError(errno.EPROTO, f"shell-update: unknown type {kind!r}")
        req.respond({})

    def on_exit(self, status: int, error: str | None = None) -> None:
        """The launcher reaped the shell (``status`` -1: it never started)."""
        if self.exited:
            return
        self.exited = True
        self._end_attach()
        job = self.job
        if self.reported is not None:
            job.complete(self.reported)
            return
        if error is None:
            error = f"job shell exited unexpectedly ({_describe(status)})"
        job.fatal(error)
        job.complete(status if status > 0 else 1 << 8)

    def _end_attach(self) -> None:
        if self.attach is not None:
            self.attach.end()
            self.attach = None

    async def finalize(self, finished: bool, status: int) -> None:
        """Commit the last events and remove the namespace (its keys stay as the snapshot)."""
        self._end_attach()
        if self.created is None or not await self.created:
            return
        text = event_line("done")
        if finished:
            text = event_line("complete", {"status": status}) + text
        jobid = JobID(self.job.id)

        def committed(msg: Message) -> None:
            if msg.errnum:
                log.error("job %s: last exec.eventlog commit: %s", jobid, msg.errstr)

        ops = [*self.leftover, self._exec_op(text)]
        self.service.broker.send("kvs.commit", {"ops": ops, "namespace": self.namespace}, committed)
        try:
            await self.service.broker.call("kvs.namespace-remove", {"name": self.namespace})
        except RPCError as exc:
            log.error("job %s: namespace-remove: %s", jobid, exc.errstr)


class Leftover:
    """A job that was running when the instance restarted: kill what is left of it."""

    def __init__(self, job: ExecJob) -> None:
        self.job = job

    def start(self) -> None:
        """Nothing is started again."""

    def kill(self, signum: int) -> None:
        """Nothing runs."""

    def kill_shell(self, signum: int) -> None:
        """Nothing runs."""

    async def finalize(self, finished: bool, status: int) -> None:
        service = self.job.service
        if await asyncio.to_thread(kill_recorded, service.record_dir, self.job.id):
            log.warning("job %s: killed its shell left from before the restart", JobID(self.job.id))
        try:
            await service.broker.call("kvs.namespace-remove", {"name": f"job-{self.job.id}"})
        except RPCError as exc:
            if exc.errnum != errno.ENOENT:
                log.error("job %s: namespace-remove: %s", JobID(self.job.id), exc.errstr)


def _run_parent(broker: Broker) -> str:
    """Where the jobs' temporary directories go: the broker's rundir, else a tmpfs if any.

    A tmpfs, because creating and removing a directory for every job on a
    disk-backed /tmp costs about a millisecond here (ext4), a tmpfs 10 us;
    flux-core puts them in the broker's rundir, also usually a tmpfs.
    """
    rundir = broker.attrs.get("rundir")
    if rundir:
        return rundir
    for candidate in (os.environ.get("XDG_RUNTIME_DIR"), "/dev/shm"):
        if candidate and os.path.isdir(candidate) and os.access(candidate, os.W_OK | os.X_OK):
            return candidate
    return tempfile.gettempdir()


def _describe(status: int) -> str:
    if status < 0:
        return "never started"
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit code {os.WEXITSTATUS(status)}"


def _config_seconds(conf: dict[str, Any], key: str, default: float) -> float:
    value = conf.get(key, default)
    try:
        if isinstance(value, str):
            seconds = duration.parse(value)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            seconds = float(value)
        else:
            raise DurationError(f"not a duration: {value!r}")
    except DurationError as exc:
        raise PfluxError(f"[exec] {key}: {exc}") from None
    if not 0 < seconds < float("inf"):
        raise PfluxError(f"[exec] {key}: must be more than 0 and finite, not {value!r}")
    return seconds


def _config_signal(conf: dict[str, Any], key: str, default: int) -> int:
    value = conf.get(key, default)
    if _is_int(value) and 0 < value < signal.NSIG:
        return int(value)
    if isinstance(value, str):
        name = value.upper() if value.upper().startswith("SIG") else "SIG" + value.upper()
        member = getattr(signal.Signals, name, None)
        if member is not None:
            return int(member)
    raise PfluxError(f"[exec] {key}: not a signal: {value!r}")


class JobExec(Service):
    """The job-exec service (see the module docstring)."""

    name = "job-exec"

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker)
        conf = broker.config.get("exec", {})
        if not isinstance(conf, dict):
            raise PfluxError("[exec] must be a table")
        self.kill_timeout = _config_seconds(conf, "kill-timeout", DEFAULT_KILL_TIMEOUT)
        self.term_signal = _config_signal(conf, "term-signal", signal.SIGTERM)
        self.kill_signal = _config_signal(conf, "kill-signal", signal.SIGKILL)
        self.state_dir = broker.attrs.get("state-dir") or tempfile.gettempdir()
        self.record_dir = os.path.join(self.state_dir, "exec")
        self.rundir = ""  # the parent of the jobs' FLUX_JOB_TMPDIR, made at start
        self.uri = broker.attrs.get("uri", "")
        self.jobs: dict[int, ExecJob] = {}
        self.launcher: Launcher | None = None
        self.stopping = False
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        leftovers = await asyncio.to_thread(kill_recorded, self.record_dir)
        if leftovers:
            log.warning("killed job shells left from an earlier run: %s", leftovers)
        os.makedirs(self.record_dir, exist_ok=True)
        self.rundir = tempfile.mkdtemp(prefix="pflux-jobs-", dir=_run_parent(self.broker))
        self._start_launcher()
        self.broker.send("job-manager.exec-hello", {"service": self.name}, self._hello_done)

    def _hello_done(self, msg: Any) -> None:
        if msg.errnum:
            log.error("job-manager.exec-hello failed: %s (no jobs will be started)", msg.errstr)

    async def stop(self) -> None:
        self.stopping = True
        for job in list(self.jobs.values()):
            job.stop_timers()
        if self.launcher is not None:
            await self.launcher.stop()
        for task in list(self._tasks):
            task.cancel()
        if self.rundir:
            shutil.rmtree(self.rundir, ignore_errors=True)

    def track(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` as a task the service owns (kept until done, logged if it fails)."""
        task = self.broker.loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("job-exec task failed", exc_info=task.exception())

    # --- the launcher -------------------------------------------------------------------

    def _start_launcher(self) -> None:
        self.launcher = Launcher(self.record_dir, self._shell_exited, self._launcher_lost)
        self.launcher.start(self.broker.loop)

    def spawn(self, jobid: int, spec: dict[str, Any]) -> None:
        if self.launcher is None or not self.launcher.running:
            self._start_launcher()
        assert self.launcher is not None
        self.launcher.spawn(jobid, spec)

    def kill_shell(self, jobid: int, signum: int) -> None:
        if self.launcher is not None:
            self.launcher.kill(jobid, signum)

    def _shell_exited(self, jobid: int, status: int, error: str | None) -> None:
        job = self.jobs.get(jobid)
        if job is not None and isinstance(job.impl, ShellRun):
            job.impl.on_exit(status, error)

    def _launcher_lost(self) -> None:
        if self.stopping:
            return
        log.error("the job shell launcher died; failing the jobs it was running")
        for job in list(self.jobs.values()):
            run = job.impl
            if isinstance(run, ShellRun) and run.spawned and not run.exited:
                kill_recorded(self.record_dir, job.id)
                run.on_exit(-1, "job shell launcher died")

    # --- requests -----------------------------------------------------------------------

    def _job(self, req: Request, key: str = "id") -> ExecJob:
        payload = req.payload
        jobid = payload.get(key) if isinstance(payload, dict) else None
        if not _is_int(jobid):
            raise RPCError(errno.EPROTO, f"{req.topic}: {key} must be an integer")
        job = self.jobs.get(jobid)
        if job is None:
            raise RPCError(errno.ENOENT, f"job {JobID(jobid)}: not running")
        if not req.owner and req.userid != job.userid:
            raise RPCError(errno.EPERM, f"job {JobID(jobid)}: permission denied")
        return job

    @method("start")
    def start_job(self, req: Request) -> None:
        payload = req.payload
        if not isinstance(payload, dict):
            raise RPCError(errno.EPROTO, "job-exec.start: payload must be an object")
        jobid = payload.get("id")
        userid = payload.get("userid")
        jobspec = payload.get("jobspec")
        reattach = payload.get("reattach")
        R = payload.get("R")  # noqa: N806
        if not _is_int(jobid) or not 0 <= jobid <= MAX_JOBID or not _is_int(userid):
            raise RPCError(errno.EPROTO, "job-exec.start: id and userid must be integers")
        if not isinstance(jobspec, dict) or not isinstance(R, dict):
            raise RPCError(errno.EPROTO, "job-exec.start: jobspec and R must be objects")
        if not isinstance(reattach, bool):
            raise RPCError(errno.EPROTO, "job-exec.start: reattach must be a boolean")
        if not req.owner:
            raise RPCError(errno.EPERM, "job-exec.start: only the instance owner may start jobs")
        if jobid in self.jobs:
            raise RPCError(errno.EEXIST, f"job {JobID(jobid)}: already started")
        job = ExecJob(
            self, req, jobid=jobid, userid=userid, jobspec=jobspec, R=R, reattach=reattach
        )
        self.jobs[jobid] = job
        job.begin()

    @method("kill")
    def kill(self, req: Request) -> None:
        job = self._job(req)
        signum = req.payload.get("signum")
        if not _is_int(signum) or not 0 < signum < signal.NSIG:
            raise RPCError(errno.EINVAL, f"kill: invalid signal number {signum!r}")
        job.kill(signum)
        req.respond({})

    @method("exception")
    def exception(self, req: Request) -> None:
        payload = req.payload
        jobid = payload.get("id") if isinstance(payload, dict) else None
        job = self.jobs.get(jobid) if _is_int(jobid) else None
        if job is not None:
            severity = payload.get("severity")
            kind = payload.get("type")
            if _is_int(severity) and isinstance(kind, str):
                job.on_exception(kind, severity)
        req.respond({})

    @method("override")
    def override(self, req: Request) -> None:
        job = self._job(req, "jobid")
        event = req.payload.get("event")
        status = req.payload.get("status", 0)
        if not isinstance(event, str) or not _is_int(status):
            raise RPCError(errno.EPROTO, "override: event must be a string, status an integer")
        if not isinstance(job.impl, MockRun):
            raise RPCError(errno.EINVAL, "Job not in exec override mode")
        job.impl.override(event, status)
        req.respond({})

    @method("shell-attach")
    def shell_attach(self, req: Request) -> None:
        job = self._job(req)
        if not isinstance(job.impl, ShellRun) or not req.streaming:
            raise RPCError(errno.EPROTO, f"job {JobID(job.id)}: not run by a shell")
        job.impl.on_attach(req)

    @method("shell-update")
    def shell_update(self, req: Request) -> None:
        job = self._job(req)
        kind = req.payload.get("type")
        data = req.payload.get("data", {})
        if not isinstance(job.impl, ShellRun) or not isinstance(kind, str):
            raise RPCError(errno.EPROTO, "shell-update: needs a job run by a shell and a type")
        if not isinstance(data, dict):
            raise RPCError(errno.EPROTO, "shell-update: data must be an object")
        job.impl.on_update(req, kind, data)
