"""job-exec: the RFC 32 execution service.

The job manager sends ``job-exec.start {id, userid, jobspec, reattach, R}``
for each allocated job and reads the stream of ``{id, type, data}``
responses: ``start``, ``exception``, ``finish {status}`` and, always last,
``release {ranks: "all", final: true}``; a conventional error response
means job-exec itself is broken. A job runs in test mode
(``pflux.exec.testexec``) or in a job shell from the launcher
(``pflux.exec.link``), driven by ``pflux.exec.shellrun``.

Writes to the KVS are batched: everything one loop turn appends to any
job's guest keys goes in one ``kvs.commit``, after the turn's namespace
creations and before its removals (a batch that fails whole is retried job
by job). A job's ``finish`` and final ``release`` go out at the end of the
turn that sends its last writes, in a commit of its own, without waiting
for it: the KVS applies requests in order, so the job manager's ``finish``
is never durable without them. Signals and time follow flux-core's
job-exec (``kill-timeout``, ``timelimit`` at R's expiration, the ``signal``
option); a starting job-exec takes over what an earlier one left
(``pflux.exec.leftovers``) and restarts a launcher that dies, up to
``LAUNCHER_RESTARTS`` in a row. The whole story is in
``docs/architecture.md``, "job-exec", and the protocol in
``docs/interfaces.md``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import logging
import os
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Callable, Coroutine, Hashable, Iterable, Mapping
from functools import partial
from typing import Any, ClassVar, Final, Protocol, TypeGuard, TypeVar

from pflux.broker.message import Message, RPCError
from pflux.broker.router import Broker, Request, Service, method
from pflux.config import ConfigError, Declared
from pflux.errors import DurationError, PfluxError
from pflux.exec import wire
from pflux.exec.journal import kill_recorded, live
from pflux.exec.leftovers import Leftover, survey
from pflux.exec.link import LauncherLink, Survivors
from pflux.exec.shellrun import ShellRun
from pflux.exec.testexec import SimulatedRun, simulation_config
from pflux.exec.wire import ALL_RECORDS, EXITED_SPOOLED
from pflux.protocol.decode import decode
from pflux.protocol.exec import (
    ExceptionRequest,
    ExecExpirationRequest,
    ExecResponse,
    KillRequest,
    OverrideRequest,
    StartRequest,
    WinsizeRequest,
    response,
)
from pflux.spec import duration
from pflux.spec.fluid import JobID

__all__ = ["ExecJob", "ExecService"]

log = logging.getLogger("pflux.job-exec")

DEFAULT_KILL_TIMEOUT: Final = 5.0
MAX_KILL_TIMEOUT: Final = 300.0
SHELL_KILL_FACTOR: Final = 5  # the shell itself is killed after this many kill timeouts
MAX_START_DELAY_PERCENT: Final = 25.0
TIMELIMIT_NOTE: Final = "resource allocation expired"
LAUNCHER_RESTARTS: Final = 5  # launchers started in a row after one died, before giving up
LAUNCHER_BACKOFF: Final = 0.5  # seconds before the second restart in a row, doubled for each
LAUNCHER_SETTLED: Final = 60.0  # seconds a launcher must live for the count to start again
_RECORD: Final = wire.HEADER.size


Run = TypeVar("Run", bound=Hashable)  # a ShellRun; anything hashable in tests


class Execution(Protocol):
    """What runs a job: a simulated run (``SimulatedRun``) or a job shell (``ShellRun``)."""

    def start(self) -> None: ...

    def kill(self, signum: int) -> None: ...

    def kill_shell(self, signum: int) -> None: ...

    def finalize(self, finished: bool, status: int) -> bool:
        """Clean up after the run; True if that wrote to the KVS (with this turn's writes)."""


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _r_times(R: Any) -> tuple[float, float]:  # noqa: N803 (R is the RFC's name)
    """R's (starttime, expiration), 0 when unset; PfluxError if they are not numbers."""
    execution = R.get("execution") if isinstance(R, dict) else None
    if not isinstance(execution, dict):
        raise PfluxError("R: execution must be an object")
    return _r_time(execution, "starttime"), _r_time(execution, "expiration")


def _r_time(execution: dict[str, Any], key: str) -> float:
    value = execution.get(key, 0.0)
    if type(value) is float and value >= 0.0:  # what the scheduler writes
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise PfluxError(f"R: execution.{key} must be a number >= 0, not {value!r}")
    return float(value)


class ExecJob:
    """One job as RFC 32 sees it: its start stream, exceptions, signals and timers."""

    def __init__(
        self,
        service: ExecService,
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
        self.taken_over = False  # an earlier job-exec started it: its R times stand as they are
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
        self.warning: tuple[int, float] | None = None  # (signal, seconds before expiration)
        self._warning: asyncio.TimerHandle | None = None

    def __repr__(self) -> str:
        return f"ExecJob({JobID(self.id)})"

    # --- the start stream ---------------------------------------------------------------

    def respond(self, kind: ExecResponse, data: dict[str, Any]) -> None:
        self.req.respond(response(self.id, kind, data))

    def begin(self, leftover: Leftover | None, *, maybe_ran: bool = False) -> None:
        """Choose how the job runs and start it, or take over what an earlier job-exec ran
        (``maybe_ran``: it may have, with nothing left of it but its guest keys)."""
        self.taken_over = leftover is not None or self.reattach
        try:
            self.times = _r_times(self.R)
            config = simulation_config(self.jobspec)
        except PfluxError as exc:
            self.fatal(str(exc))
            return
        if config is not None:
            mock = self.impl = SimulatedRun(self, config)
            if self.reattach:
                self.service.track(mock.reattach())
            else:
                mock.start()
            return
        run = self.impl = ShellRun(self)
        if leftover is not None or self.reattach or maybe_ran:
            self.service.track(run.resume(leftover))
        else:
            run.start()

    def set_running(self) -> None:
        """The tasks run: answer ``start`` (unless the job-manager has it); arm the time limit."""
        if self.running or self.finalizing:
            return
        self.running = True
        self._arm_expiration()
        if not self.reattach:
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
        """Clean up after the implementation; answer ``finish`` (if started), then ``release``.

        The answers need not wait for the implementation's last writes to be
        durable, only to be sent: they go at the end of the turn, after those
        writes, so whatever the job-manager commits on hearing them is applied
        after them (see the module docstring).
        """
        if self.finalizing:
            return
        self.finalizing = True
        self.stop_timers()
        finished = self.running
        if self.impl is not None and self.impl.finalize(finished, self.status):
            self.service.broker.at_turn_end(partial(self._answer_end, finished))
        else:
            self._answer_end(finished)

    def _answer_end(self, finished: bool) -> None:
        if finished:
            self.respond(ExecResponse.FINISH, {"status": self.status})
        self.respond(ExecResponse.RELEASE, {"ranks": "all", "final": True})
        self.service.jobs.pop(self.id, None)
        # the run refers to the job: without this cycle, a job is freed as it ends, not by
        # the garbage collector, which would first have examined it (and its manager's Job)
        self.impl = None

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
        if starttime > 0 and expiration > starttime and not self.taken_over:
            # a start long delayed relative to a short job's duration extends it (flux-core)
            delay = self.t0 - starttime
            if delay / (expiration - starttime) * 100 > MAX_START_DELAY_PERCENT:
                expiration += delay
        self._expiration = self.loop.call_later(max(0.0, expiration - time.time()), self._expired)
        if self.warning is not None:
            signum, before = self.warning
            wait = max(0.0, expiration - before - time.time())
            self._warning = self.loop.call_later(wait, self._warn, signum)

    def _warn(self, signum: int) -> None:
        """The ``signal`` option's time before the expiration has come: signal the tasks."""
        self._warning = None
        log.info("job %s: sending signal %d before its time limit", JobID(self.id), signum)
        if self.impl is not None:
            self.impl.kill(signum)

    def update_expiration(self, expiration: float) -> None:
        """R's expiration changed (``job-exec.expiration``): re-arm the time limit."""
        self.times = (self.times[0], expiration)
        execution = self.R.get("execution")
        self.R = {**self.R, "execution": {**(execution or {}), "expiration": expiration}}
        for timer in (self._expiration, self._warning):
            if timer is not None:
                timer.cancel()
        self._expiration = self._warning = None
        if self.running and not self.exception and not self.finalizing:
            self._arm_expiration()
        log.debug("job %s: updated expiration to %.2f", JobID(self.id), expiration)

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
        for timer in (self._expiration, self._kill_timer, self._shell_timer, self._warning):
            if timer is not None:
                timer.cancel()
        self._expiration = self._kill_timer = self._shell_timer = self._warning = None


def _job_rundir(broker: Broker, state_dir: str, *, fresh: bool) -> str:
    """The instance's directory for its jobs' FLUX_JOB_TMPDIR; ``fresh``: emptied first.

    Named after the state directory, so that a restart after a crash finds
    what the earlier run left and removes it, unless its jobs still run.
    """
    digest = hashlib.sha1(os.path.abspath(state_dir).encode()).hexdigest()[:16]
    path = os.path.join(_run_parent(broker), f"pflux-jobs-{os.getuid()}-{digest}")
    if fresh:
        shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path, 0o700, exist_ok=True)
    return path


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
        raise ConfigError("exec", key, str(exc)) from None
    if not 0 < seconds < float("inf"):
        raise ConfigError("exec", key, f"must be more than 0 and finite, not {value!r}")
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
    raise ConfigError("exec", key, f"not a signal: {value!r}")


def split_commits(
    new: Mapping[str, tuple[Run, list[str]]],
    appends: Mapping[str, tuple[Run, list[str]]],
    finals: Iterable[Run],
) -> list[tuple[list[list[str]], list[Run]]]:
    """A turn's commits, each as (ops, the job of each op): the new keys' puts, then
    the appends, then one commit for each job of ``finals``, holding all of its ops,
    its puts first."""
    own: dict[Run, list[list[str]]] = {run: [] for run in finals}
    commits: list[tuple[list[list[str]], list[Run]]] = []
    for op, batch in (("put", new), ("append", appends)):
        ops: list[list[str]] = []
        runs: list[Run] = []
        for key, (run, texts) in batch.items():
            entry = [op, key, "".join(texts)]
            last = own.get(run)
            if last is None:
                ops.append(entry)
                runs.append(run)
            else:
                last.append(entry)
        if ops:
            commits.append((ops, runs))
    commits += [(ops, [run] * len(ops)) for run, ops in own.items() if ops]
    return commits


class ExecService(Service):
    """The job-exec service (see the module docstring)."""

    name = "job-exec"
    config_keys: ClassVar[Declared] = {"exec": ("kill-timeout", "term-signal", "kill-signal")}

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker)
        conf = broker.config.get("exec", {})
        if not isinstance(conf, dict):
            raise ConfigError("exec", None, f"must be a table, got {conf!r}")
        self.kill_timeout = _config_seconds(conf, "kill-timeout", DEFAULT_KILL_TIMEOUT)
        self.term_signal = _config_signal(conf, "term-signal", signal.SIGTERM)
        self.kill_signal = _config_signal(conf, "kill-signal", signal.SIGKILL)
        self.state_dir = broker.attrs.get("state-dir") or tempfile.gettempdir()
        self.exec_dir = os.path.join(self.state_dir, "exec")
        self.journal = os.path.join(self.exec_dir, "journal")
        self.spool_dir = os.path.join(self.exec_dir, "spool")
        self.owner = broker.owner
        self.rundir = ""  # the parent of the jobs' FLUX_JOB_TMPDIR, made at start
        self.tmp_parents: tuple[str, ...] = ()  # where FLUX_JOB_TMPDIR may go, best first
        self.uri = broker.attrs.get("uri", "")
        self.hostname = socket.gethostname()  # the shells' host, which notes name
        self.cpus = tuple(sorted(os.sched_getaffinity(0)))  # the launcher's, inherited
        self.jobs: dict[int, ExecJob] = {}
        self.leftovers: dict[int, Leftover] = {}  # what earlier job-execs left, by job
        # jobs in RUN when this job-exec started: an earlier one may have run them to the
        # end (their guest keys written, the job manager's events not), so their start,
        # even without reattach, first looks at what the KVS holds of them
        self.maybe_ran: set[int] = set()
        self.launcher: LauncherLink | None = None
        self.launched = 0.0  # when the launcher was started (monotonic)
        self.restarts = 0  # launchers started in a row after one died
        self.rejoining: set[int] = set()  # jobs whose shells' launcher died, until they rejoin
        self._restart: asyncio.TimerHandle | None = None  # a launcher to start after a backoff
        self._held = bytearray()  # records for that launcher
        self.stopping = False
        self._tasks: set[asyncio.Task[None]] = set()
        # the KVS writes of this loop turn (see the module docstring)
        self._creates: list[ShellRun] = []
        self._new: dict[str, tuple[ShellRun, list[str]]] = {}  # primary key -> texts
        self._appends: dict[str, tuple[ShellRun, list[str]]] = {}
        self._removes: list[ShellRun] = []
        self._applied: set[ShellRun] = set()  # runs that applied shell records this turn
        self._after: list[Callable[[], None]] = []  # to call once this turn's writes are in
        self._flush_due = False

    async def start(self) -> None:
        os.makedirs(self.spool_dir, mode=0o700, exist_ok=True)
        self.launcher = LauncherLink(self.exec_dir, self.on_records, self._launcher_lost)
        survivors = await self.launcher.attach(self.broker.loop)
        if survivors is None:
            self.rundir = _job_rundir(self.broker, self.state_dir, fresh=True)
        else:
            log.info("took over the job shell launcher (pid %s)", self.launcher.pid)
            self.rundir = _job_rundir(self.broker, self.state_dir, fresh=False)
        self.leftovers, self.maybe_ran = await survey(self, survivors)
        fallback = os.environ.get("TMPDIR") or "/tmp"
        self.tmp_parents = (self.rundir, fallback) if fallback != self.rundir else (self.rundir,)
        if survivors is None:
            self._start_launcher()
        self.broker.send("job-manager.exec-hello", {"service": self.name}, self._hello_done)

    def _hello_done(self, msg: Any) -> None:
        if msg.errnum:
            log.error("job-manager.exec-hello failed: %s (no jobs will be started)", msg.errstr)

    async def stop(self) -> None:
        self.stopping = True
        if self._restart is not None:
            self._restart.cancel()
        for job in list(self.jobs.values()):
            job.stop_timers()
        if self.launcher is not None:
            await self.launcher.stop()
        if self._flush_due:
            self._flush()
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
        """Start a launcher (the same link, and so the same ``exec/sock``, as the last)."""
        if self.launcher is None:
            self.launcher = LauncherLink(self.exec_dir, self.on_records, self._launcher_lost)
        self.launcher.start(self.broker.loop)
        self.launched = time.monotonic()

    def send_launcher(self, data: bytes) -> None:
        """Send records to the launcher, starting it again if it has died."""
        if self.launcher is None or not self.launcher.running:
            if self.stopping:
                return
            if self._restart is not None:  # one starts after a backoff: it gets them then
                self._held += data
                return
            self._start_launcher()
        assert self.launcher is not None
        self.launcher.send(data)

    def on_records(self, records: list[wire.Record], from_shell: bool) -> None:
        """Records from the shells (counted: they are the offsets ACK names) or the launcher."""
        jobs = self.jobs
        for kind, jobid, payload in records:
            job = jobs.get(jobid)
            run = job.impl if job is not None else None
            if not isinstance(run, ShellRun):
                if kind == wire.LIVE and not from_shell:  # jobid is the launcher's pid
                    self._rejoined(Survivors(payload).running)
                if kind != wire.EXITED:
                    continue
                if from_shell:  # a shell whose job is over: let it go
                    self.send_launcher(wire.record(wire.ACK, jobid, b"%d" % ALL_RECORDS))
                elif jobid in self.leftovers:  # a shell to take over has ended meanwhile
                    self.leftovers[jobid].ended(payload, self.spool_dir)
                elif payload.startswith(
                    b"%d " % EXITED_SPOOLED
                ):  # the job is over: nobody reads it
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(os.path.join(self.spool_dir, str(jobid)))
                continue
            if from_shell:
                run.applied += _RECORD + len(payload)
                if not self._applied:
                    self._flush_soon()
                self._applied.add(run)
            try:
                run.on_record(kind, payload)
            except (LookupError, ValueError) as exc:  # a bug in the shell or launcher
                log.error("job %s: bad %r record: %r", JobID(jobid), kind, exc)

    def _launcher_lost(self) -> None:
        """Start another launcher, which the shells rejoin; after too many, fail their jobs."""
        if self.stopping:
            return
        runs = [
            job.impl
            for job in self.jobs.values()
            if isinstance(job.impl, ShellRun) and job.started and not job.impl.exited
        ]
        if time.monotonic() - self.launched >= LAUNCHER_SETTLED:
            self.restarts = 0
        if self.restarts >= LAUNCHER_RESTARTS:
            log.error(
                "the job shell launcher died %d times in a row; failing the jobs it was running",
                self.restarts + 1,
            )
            self.restarts = 0
            self.rejoining.clear()
            assert self.launcher is not None
            self.launcher.close_listener()  # its shells cannot rejoin: they end their tasks
            self.track(self._fail_runs(runs))
            return
        delay = LAUNCHER_BACKOFF * 2 ** (self.restarts - 1) if self.restarts else 0.0
        self.restarts += 1
        log.error("the job shell launcher died; starting another in %g s", delay)
        self.rejoining = {run.job.id for run in runs if run.live}
        self._restart = self.broker.loop.call_later(delay, self._relaunch)

    def _relaunch(self) -> None:
        """Start the launcher again and give it what was held, having ended the jobs whose
        shells will not rejoin it."""
        self._restart = None
        if self.stopping:
            return
        self._unjournalled()
        self._start_launcher()
        held, self._held = self._held, bytearray()
        if held:
            self.send_launcher(bytes(held))

    def _unjournalled(self) -> None:
        """End the jobs waiting to rejoin whose shells the journal does not name.

        A shell journals itself before its first task: one not there never
        started the job (its launcher died first), and will not rejoin. The
        journal is read before the new launcher, which appends to it, starts;
        it is short (the launcher compacts it), and a launcher seldom dies.
        """
        recorded = live(self.journal)
        for jobid in sorted(self.rejoining - recorded.keys()):
            self.rejoining.discard(jobid)
            job = self.jobs.get(jobid)
            if job is not None and isinstance(job.impl, ShellRun):
                job.impl.on_exit(-1, wire.LAUNCHER_DIED)

    def _rejoined(self, jobids: Iterable[int]) -> None:
        """Shells of a launcher that died have rejoined the new one: resume them.

        From the records job-exec has applied: those the shells sent on the dead
        launcher's socket after that are sent again. A job being taken over
        (``ShellRun.resume``) is resumed as that goes on; a shell whose job is
        not running here any more is let go.
        """
        for jobid in jobids:
            self.rejoining.discard(jobid)
            if jobid in self.leftovers:  # its start request, to come, resumes it
                continue
            job = self.jobs.get(jobid)
            if job is not None and not job.finalizing:
                run = job.impl
                if isinstance(run, ShellRun) and run.live and not run.exited:
                    self.send_launcher(wire.record(wire.RESUME, jobid, b"%d" % run.applied))
                continue
            log.warning("job %s: its shell rejoined, but the job is over", JobID(jobid))
            self.send_launcher(wire.record(wire.RESUME, jobid, b"%d" % ALL_RECORDS))
            self.send_launcher(wire.record(wire.TERMINATE, jobid, b"%d" % signal.SIGKILL))

    async def _fail_runs(self, runs: list[ShellRun]) -> None:
        """Kill what is left of the shells of a launcher that died, then end their jobs."""
        _, survivors = await asyncio.to_thread(
            kill_recorded, self.journal, [run.job.id for run in runs]
        )
        if survivors:
            log.error("processes %s of job shells survive SIGKILL", survivors)
        for run in runs:
            run.spool = os.path.join(self.spool_dir, str(run.job.id))  # it may have begun one
            run.on_exit(-1, wire.LAUNCHER_DIED)

    # --- the guest namespaces, one commit a turn ------------------------------------------

    def create_namespace(self, run: ShellRun) -> None:
        self._creates.append(run)
        self._flush_soon()

    def append(self, run: ShellRun, name: str, text: str, *, new: bool = False) -> None:
        """Append ``text`` to the guest key ``name`` of ``run``'s job, with this turn's batch.

        ``new``: the key does not exist yet. New keys are made with ``put`` in a
        commit of their own, before the turn's other appends, which then all grow
        existing values: the KVS applies those in one statement, and makes a new
        key with fewer than it needs to find that an append's key is missing.
        """
        key = run.key + name
        batch = self._new if new else self._appends
        pending = batch.get(key)
        if pending is None:
            batch[key] = (run, [text])
            self._flush_soon()
        else:
            pending[1].append(text)

    def remove_namespace(self, run: ShellRun) -> None:
        """Remove ``run``'s namespace after this turn's writes, which are the job's last."""
        self._removes.append(run)
        self._flush_soon()

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once this turn's writes are committed."""
        self._after.append(callback)
        self._flush_soon()

    def committed(self) -> asyncio.Future[None]:
        """Resolved once this turn's writes are committed."""
        future: asyncio.Future[None] = self.broker.loop.create_future()

        def resolve() -> None:
            if not future.done():
                future.set_result(None)

        self.after_commit(resolve)
        return future

    def _flush_soon(self) -> None:
        if not self._flush_due:
            self._flush_due = True
            self.broker.at_turn_end(self._flush)

    def _flush(self) -> None:
        """Send this turn's creations, its commits, then its removals, in that order.

        The put of each running job's resume state goes with the new keys; the KVS
        applies the turn's commits in one transaction, so it is durable exactly when
        the output it describes is. A job whose namespace is removed this turn has
        its writes in a commit of its own, after the others, so that no other job's
        failed batch can hold back its last events.
        """
        self._flush_due = False
        applied, self._applied = self._applied, set()
        for run in applied:
            state = run.state()
            if state is not None:
                self._new[run.state_key] = (run, [state])
        creates, self._creates = self._creates, []
        new, self._new = self._new, {}
        appends, self._appends = self._appends, {}
        removes, self._removes = self._removes, []
        after, self._after = self._after, []
        send = self.broker.send
        for run in creates:
            job = run.job
            namespace = {"name": run.namespace, "owner": job.userid, "prefix": run.key[:-1]}
            send("kvs.namespace-create", namespace, run.on_created)
        commits = split_commits(new, appends, removes)
        for i, (ops, runs) in enumerate(commits):
            done = partial(self._done, applied, after) if i == len(commits) - 1 else None
            send("kvs.commit", {"ops": ops}, partial(self._committed, ops, runs, done))
        if not commits:
            self._done(applied, after)
        for run in removes:
            send("kvs.namespace-remove", {"name": run.namespace}, run.on_removed)

    @staticmethod
    def _done(applied: set[ShellRun], after: list[Callable[[], None]]) -> None:
        """The turn's writes are in: acknowledge the shells, then whoever waited."""
        for run in applied:
            if not run.retries:
                run.on_committed()
        for callback in after:
            callback()

    def _committed(
        self,
        ops: list[list[str]],
        runs: list[ShellRun],
        done: Callable[[], None] | None,
        msg: Message,
    ) -> None:
        """A turn's commit is answered; if it failed, commit each job's part on its own.

        The retries reach the KVS with what the job-manager commits on hearing of any
        job finalized the turn after the batch was sent, so they are applied no later.
        """
        if not msg.errnum:
            if done is not None:
                done()
            return
        log.warning("job-exec: a batched commit failed (%s); retrying job by job", msg.errstr)
        by_run: dict[ShellRun, list[list[str]]] = {}
        for op, run in zip(ops, runs, strict=True):
            by_run.setdefault(run, []).append(op)
        for run, own in by_run.items():
            run.retries += 1
            self.broker.send("kvs.commit", {"ops": own}, run.on_retried)
        if done is not None:
            done()

    # --- requests -----------------------------------------------------------------------

    def _job(self, req: Request) -> ExecJob:
        """The job ``req``'s ``id`` names (``job-exec.stdin``, whose data RFC 24 reads)."""
        payload = req.payload
        jobid = payload.get("id") if isinstance(payload, dict) else None
        if not _is_int(jobid):
            raise RPCError(errno.EPROTO, f"{req.topic}: id must be an integer")
        return self._lookup(req, jobid)

    def _lookup(self, req: Request, jobid: int) -> ExecJob:
        job = self.jobs.get(jobid)
        if job is None:
            raise RPCError(errno.ENOENT, f"job {JobID(jobid)}: not running")
        if not req.owner and req.userid != job.userid:
            raise RPCError(errno.EPERM, f"job {JobID(jobid)}: permission denied")
        return job

    @method("start")
    def start_job(self, req: Request) -> None:
        start = decode(req.topic, req.payload, StartRequest)
        if not req.owner:
            raise RPCError(errno.EPERM, "job-exec.start: only the instance owner may start jobs")
        jobid = start.id
        if jobid in self.jobs:
            raise RPCError(errno.EEXIST, f"job {JobID(jobid)}: already started")
        job = ExecJob(
            self,
            req,
            jobid=jobid,
            userid=start.userid,
            jobspec=start.jobspec,
            R=start.R,
            reattach=start.reattach,
        )
        self.jobs[jobid] = job
        maybe_ran = jobid in self.maybe_ran
        self.maybe_ran.discard(jobid)
        job.begin(self.leftovers.pop(jobid, None), maybe_ran=maybe_ran)

    @method("kill")
    def kill(self, req: Request) -> None:
        kill = decode(req.topic, req.payload, KillRequest)
        job = self._lookup(req, kill.id)
        if not 0 < kill.signum < signal.NSIG:
            raise RPCError(errno.EINVAL, f"kill: invalid signal number {kill.signum!r}")
        job.kill(kill.signum)
        req.respond({})

    @method("expiration")
    def expiration(self, req: Request) -> None:
        """A running job's new expiration (after its ``resource-update``), from the job manager."""
        if not req.owner:
            raise RPCError(errno.EPERM, "job-exec.expiration: only the instance owner")
        update = decode(req.topic, req.payload, ExecExpirationRequest)
        self._lookup(req, update.id).update_expiration(float(update.expiration))
        req.respond({})

    @method("exception")
    def exception(self, req: Request) -> None:
        exception = decode(req.topic, req.payload, ExceptionRequest)
        job = self.jobs.get(exception.id)
        if job is not None:
            job.on_exception(exception.type, exception.severity)
        req.respond({})

    @method("stdin")
    def stdin(self, req: Request) -> None:
        """Standard input for a running job's tasks (``pflux job attach``), as RFC 24 data."""
        job = self._job(req)
        if not isinstance(job.impl, ShellRun):
            raise RPCError(errno.ENOSYS, f"job {JobID(job.id)}: takes no input")
        job.impl.stdin(req, req.payload)

    @method("winsize")
    def winsize(self, req: Request) -> None:
        """A new size for a running job's ptys (``pflux run -o pty.interactive``)."""
        size = decode(req.topic, req.payload, WinsizeRequest)
        job = self._lookup(req, size.id)
        if not isinstance(job.impl, ShellRun):
            raise RPCError(errno.ENOSYS, f"job {JobID(job.id)}: has no pty")
        job.impl.winsize(req, size.rows, size.cols)

    @method("override")
    def override(self, req: Request) -> None:
        override = decode(req.topic, req.payload, OverrideRequest)
        job = self._lookup(req, override.jobid)
        if not isinstance(job.impl, SimulatedRun):
            raise RPCError(errno.EINVAL, "Job not in exec override mode")
        job.impl.override(override.event, override.status)
        req.respond({})
