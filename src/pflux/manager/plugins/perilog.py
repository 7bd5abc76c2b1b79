"""Prolog and epilog: instance-owner commands run before a job starts and before it frees.

Configured as flux-core's perilog plugin is (TOML), with the same keys:

    [job-manager.prolog]
    command = ["/usr/local/bin/prolog", "arg"]
    timeout = "30m"             # default 30m for the prolog, none ("0") for the epilog
    kill-timeout = 60           # seconds from SIGTERM to giving up (default 60)
    cancel-on-exception = true  # default true for the prolog, false for the epilog
    per-rank = false            # accepted; an instance has one broker rank
    [job-manager.epilog]
    command = ["/usr/local/bin/epilog"]
    [job-manager.perilog]
    log-ignore = ["^debug:"]    # regexes of output lines not to log

The prolog runs once the job has resources (RUN), bracketed by ``prolog-start``
and ``prolog-finish {description: "job-manager.prolog", status}`` (status is
a wait status, as flux-core posts it); the job manager sends no start request
while it runs. If it fails, a fatal ``prolog`` exception is raised before
``prolog-finish``, so the job never starts, with flux-core's note
(``prolog exited with code=1 on HOST (rank 0)``, ``killed by signal N``,
``timed out``, ``canceled then timed out``). A fatal exception while the
prolog runs (``pflux cancel``) sends it SIGTERM when ``cancel-on-exception``;
one still running ``kill-timeout`` after a SIGTERM is SIGKILLed (flux-core
drains the node instead; here there is no other node to run on) and the job
gets the ``canceled then timed out`` exception.

The epilog runs, as in flux-core, for a job that finished (a ``finish``
event) or whose prolog ran, once its shells are done and before its
resources go back to the scheduler (``epilog-start`` / ``epilog-finish``). Its
failure raises a non-fatal ``epilog`` exception (severity 2), so the job's
result stays that of its tasks.

Both run as the instance owner, in a session of their own, with
``FLUX_JOB_ID`` (f58), ``FLUX_JOB_USERID`` and ``FLUX_JOB_RANKS`` in their
environment; what they print is logged, one line at a time, prefixed by the
job id.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import re
import signal
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from pflux.broker.config import ConfigError
from pflux.broker.sigdefault import preexec
from pflux.errors import DurationError, PfluxError
from pflux.manager.job import Job
from pflux.manager.plugins import Host, Plugin
from pflux.spec import duration
from pflux.spec.fluid import JobID
from pflux.spec.states import State

if TYPE_CHECKING:
    from pflux.manager.job import Ended
    from pflux.spec.eventlog import Event

log = logging.getLogger("pflux.job-manager")

PROLOG: Final = "job-manager.prolog"
EPILOG: Final = "job-manager.epilog"
DEFAULT_KILL_TIMEOUT: Final = 60.0  # flux-core's
READ_SIZE: Final = 65536
# the keys of [job-manager.prolog] and [job-manager.epilog] (the job manager declares them)
KEYS: Final = ("command", "timeout", "kill-timeout", "per-rank", "cancel-on-exception")


@dataclass(frozen=True, slots=True)
class PerilogCommand:
    """One configured command: the prolog or the epilog."""

    kind: str  # "prolog" or "epilog"
    command: tuple[str, ...]
    timeout: float  # seconds; 0: none
    kill_timeout: float
    cancel_on_exception: bool

    @property
    def description(self) -> str:
        """What the events name it (flux-core's ``job-manager.prolog``)."""
        return f"job-manager.{self.kind}"


def _action(config: dict[str, Any], kind: str) -> PerilogCommand | None:
    """The ``[job-manager.KIND]`` table as a PerilogCommand; ConfigError naming the key if bad."""
    section = f"job-manager.{kind}"
    manager = config.get("job-manager", {})
    if not isinstance(manager, dict):
        raise ConfigError("job-manager", None, f"must be a table, got {manager!r}")
    table = manager.get(kind)
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ConfigError(section, None, f"must be a table, got {table!r}")
    if "command" not in table:
        raise ConfigError(section, None, "no command specified")
    command = table["command"]
    if not isinstance(command, list):
        raise ConfigError(section, "command", "must be an array")
    if not command or not all(isinstance(arg, str) for arg in command):
        raise ConfigError(section, "command", f"malformed {kind} command: {command!r}")
    timeout = _timeout(table.get("timeout", "30m" if kind == "prolog" else "0"), section, kind)
    kill_timeout = table.get("kill-timeout", DEFAULT_KILL_TIMEOUT)
    if isinstance(kill_timeout, bool) or not isinstance(kill_timeout, int | float):
        raise ConfigError(section, "kill-timeout", f"must be seconds, not {kill_timeout!r}")
    for key in ("per-rank", "cancel-on-exception"):
        if not isinstance(table.get(key, False), bool):
            raise ConfigError(section, key, f"must be true or false, not {table[key]!r}")
    return PerilogCommand(
        kind,
        tuple(command),
        timeout,
        float(kill_timeout) if kill_timeout > 0 else DEFAULT_KILL_TIMEOUT,  # flux-core's rule
        table.get("cancel-on-exception", kind == "prolog"),
    )


def _timeout(value: object, section: str, kind: str) -> float:
    """An FSD (or a number of seconds); 0 and infinity mean none, as in flux-core."""
    try:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise DurationError(f"not a duration: {value!r}")
        seconds = duration.parse(value) if isinstance(value, str) else float(value)
        if not seconds >= 0:
            raise DurationError("must not be negative")
    except DurationError as exc:
        raise ConfigError(section, "timeout", f"invalid {kind} timeout: {exc}") from None
    return 0.0 if seconds == float("inf") else seconds


def _log_ignore(config: dict[str, Any]) -> list[re.Pattern[str]]:
    manager = config.get("job-manager", {})
    table = manager.get("perilog", {}) if isinstance(manager, dict) else {}
    if not isinstance(table, dict):
        raise ConfigError("job-manager.perilog", None, f"must be a table, got {table!r}")
    patterns = table.get("log-ignore", [])
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        raise ConfigError("job-manager.perilog", "log-ignore", "must be an array of regexes")
    compiled = [re.compile(r"^\s*$")]  # empty lines, always (flux-core)
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise ConfigError(
                "job-manager.perilog", "log-ignore", f"Failed to compile regex {pattern!r}: {exc}"
            ) from None
    return compiled


class _Run:
    """One prolog or epilog process of one job."""

    __slots__ = (
        "action",
        "canceled",
        "job",
        "kill_timed_out",
        "kill_timer",
        "pid",
        "task",
        "timed_out",
        "timer",
    )

    def __init__(self, job: Job, action: PerilogCommand) -> None:
        self.job = job
        self.action = action
        self.pid = 0  # its process (and process group), once started
        self.canceled = False  # SIGTERM sent for a fatal job exception
        self.timed_out = False  # SIGTERM sent for the timeout
        self.kill_timed_out = False  # still there kill-timeout after SIGTERM
        self.timer: asyncio.TimerHandle | None = None
        self.kill_timer: asyncio.TimerHandle | None = None
        self.task: asyncio.Task[None] | None = None

    def signal(self, signum: int) -> None:
        if self.pid:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signum)

    def stop_timers(self) -> None:
        for timer in (self.timer, self.kill_timer):
            if timer is not None:
                timer.cancel()

    def note(self, status: int, host: str) -> str:
        """Why it failed, in flux-core's words."""
        kind = self.action.kind
        where = f"on {host} (rank 0)"
        if self.kill_timed_out:
            return f"{kind} canceled then timed out {where}"
        if self.timed_out:
            return f"{kind} timed out {where}"
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
        if os.WIFSIGNALED(status) or code > 128:
            signum = os.WTERMSIG(status) if os.WIFSIGNALED(status) else code - 128
            return f"{kind} killed by signal {signum} {where}"
        return f"{kind} exited with code={code} {where}"


class Perilog(Plugin):
    """Runs the configured prolog and epilog of every job."""

    name = "perilog"
    events = frozenset(("alloc", "exception"))

    def __init__(self, host: Host, config: dict[str, Any]) -> None:
        super().__init__(host)
        self.prolog = _action(config, "prolog")
        self.epilog = _action(config, "epilog")
        self.log_ignore = _log_ignore(config)
        self.hostname = socket.gethostname()
        self.runs: dict[int, _Run] = {}  # by job id: at most one at a time per job
        self._readers: set[asyncio.Task[None]] = set()

    @property
    def active(self) -> bool:
        return bool(self.prolog or self.epilog)

    def restarted(self, job: Job) -> None:
        """An action that was running when the instance died is gone: say so and end it."""
        for description in list(job.perilog):
            kind = "prolog" if description == PROLOG else "epilog"
            note = f"{kind} was running when the instance restarted"
            self.host.raise_exception(job, kind, note, 0 if kind == "prolog" else 2)
            self.host.post(job, f"{kind}-finish", {"description": description, "status": 1 << 8})

    def event(self, job: Job | Ended, event: Event) -> None:
        if not isinstance(job, Job):
            return
        if event.name == "alloc":
            if self.prolog and job.state is State.RUN:
                self._start(job, self.prolog)
            return
        run = self.runs.get(job.id)
        severity = (event.context or {}).get("severity")
        if run is None or severity != 0 or not run.action.cancel_on_exception:
            return
        if not run.canceled and not run.kill_timed_out:
            run.canceled = True
            self._terminate(run)

    def before_free(self, job: Job) -> bool:
        """Start the epilog before the job's resources are freed; True if it started.

        As in flux-core, only a job that finished or whose prolog ran has one,
        and only once (the eventlog says whether it has run, across restarts).
        """
        if self.epilog is None or "epilog-start" in job.history:
            return False
        if job.finish_status is None and "prolog-start" not in job.history:
            return False
        self._start(job, self.epilog)
        return True

    async def stop(self) -> None:
        """The instance is stopping: end what runs (a restart fails the actions cut short)."""
        for run in list(self.runs.values()):
            run.stop_timers()
            run.signal(signal.SIGKILL)
            if run.task is not None:
                run.task.cancel()
        for task in list(self._readers):
            task.cancel()

    # --- running -------------------------------------------------------------------------

    def _start(self, job: Job, action: PerilogCommand) -> None:
        self.host.post(job, f"{action.kind}-start", {"description": action.description})
        run = _Run(job, action)
        self.runs[job.id] = run
        run.task = self.host.loop.create_task(self._execute(run))

    async def _execute(self, run: _Run) -> None:
        job = run.job
        command = run.action.command
        jobid = JobID(job.id)
        env = dict(
            os.environ,
            FLUX_JOB_ID=str(jobid),
            FLUX_JOB_USERID=str(job.userid),
            FLUX_JOB_RANKS=_ranks(job.R),
        )
        try:
            proc = await asyncio.create_subprocess_exec(
                *command,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                preexec_fn=preexec(),
            )
        except OSError as exc:
            log.error("%s: %s: %s: %s", jobid, run.action.kind, command[0], exc.strerror)
            code = {errno.ENOENT: 127, errno.EACCES: 126, errno.EPERM: 126}.get(exc.errno or 0, 1)
            self._finished(run, code << 8)
            return
        run.pid = proc.pid
        if run.kill_timer is not None:  # canceled while it was being started
            run.signal(signal.SIGTERM)
        for stream, reader in (("stdout", proc.stdout), ("stderr", proc.stderr)):
            assert reader is not None
            task = self.host.loop.create_task(self._relay(run, stream, reader))
            self._readers.add(task)
            task.add_done_callback(self._readers.discard)
        if run.action.timeout:
            run.timer = self.host.loop.call_later(run.action.timeout, self._timed_out, run)
        returncode = await proc.wait()
        self._finished(run, -returncode if returncode < 0 else returncode << 8)

    async def _relay(self, run: _Run, stream: str, reader: asyncio.StreamReader) -> None:
        """Log what the command prints, a line at a time, as flux-core copies it to its log."""
        level = logging.ERROR if stream == "stderr" else logging.INFO
        prefix = f"{JobID(run.job.id)}: {run.action.kind}: {self.hostname} (rank 0): {stream}:"
        pending = b""
        while chunk := await reader.read(READ_SIZE):
            *lines, pending = (pending + chunk).split(b"\n")
            if len(pending) >= READ_SIZE:  # a line that long is logged in pieces
                lines.append(pending)
                pending = b""
            for line in lines:
                self._log(level, prefix, line)
        if pending:
            self._log(level, prefix, pending)

    def _log(self, level: int, prefix: str, line: bytes) -> None:
        text = line.decode(errors="replace")
        if not any(pattern.search(text) for pattern in self.log_ignore):
            log.log(level, "%s %s", prefix, text)

    def _timed_out(self, run: _Run) -> None:
        run.timer = None
        run.timed_out = True
        self._terminate(run)

    def _terminate(self, run: _Run) -> None:
        """SIGTERM, and SIGKILL if still there after the kill timeout (once)."""
        if run.kill_timer is not None:
            return
        log.info("%s: sending SIGTERM to its %s", JobID(run.job.id), run.action.kind)
        run.signal(signal.SIGTERM)
        run.kill_timer = self.host.loop.call_later(run.action.kill_timeout, self._kill, run)

    def _kill(self, run: _Run) -> None:
        log.error(
            "%s: timed out waiting for SIGTERM to terminate %s", JobID(run.job.id), run.action.kind
        )
        run.kill_timed_out = True
        run.signal(signal.SIGKILL)

    def _finished(self, run: _Run, status: int) -> None:
        """Raise the exception a failure calls for, then post the finish event."""
        run.stop_timers()
        self.runs.pop(run.job.id, None)
        job = run.job
        action = run.action
        if (status and not run.canceled) or run.kill_timed_out:
            note = run.note(status, self.hostname)
            log.error("%s: %s", JobID(job.id), note)
            # the prolog's exception comes first, so the job is never half started
            self.host.raise_exception(job, action.kind, note, 0 if action.kind == "prolog" else 2)
        self.host.post(
            job, f"{action.kind}-finish", {"description": action.description, "status": status}
        )


def _ranks(R: dict[str, Any] | None) -> str:  # noqa: N803 (R is the RFC's name)
    """The job's broker ranks, as an idset (``FLUX_JOB_RANKS``)."""
    from pflux.spec.idset import IdSet

    ranks: set[int] = set()
    execution = R.get("execution", {}) if isinstance(R, dict) else {}
    for entry in execution.get("R_lite", []) if isinstance(execution, dict) else []:
        try:
            ranks.update(IdSet.decode(str(entry.get("rank", ""))))
        except (PfluxError, AttributeError):
            continue
    return IdSet(ranks).encode()
