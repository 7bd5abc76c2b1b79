"""One job as RFC 32 sees it in job-exec: its start stream, exceptions, signals, timers.

``ExecJob`` chooses how its job runs (a simulated run in test mode,
``pflux.exec.testexec``, or a job shell, ``pflux.exec.shellrun``), answers the
job manager's ``job-exec.start`` stream as the run goes, and follows
flux-core's job-exec for signals and time (``kill-timeout``, ``timelimit`` at
R's expiration, the ``signal`` option). It uses job-exec only through
``JobHost`` (``pflux.exec.host``).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, Final, Protocol

from pflux.errors import PfluxError
from pflux.exec.shellrun import ShellRun
from pflux.exec.testexec import SimulatedRun, simulation_config
from pflux.protocol.exec import ExecResponse, response
from pflux.spec.fluid import JobID

if TYPE_CHECKING:
    from pflux.broker.router import Request
    from pflux.exec.host import JobHost
    from pflux.exec.leftovers import Leftover

__all__ = ["ExecJob", "Execution"]

log = logging.getLogger("pflux.job-exec")

MAX_KILL_TIMEOUT: Final = 300.0
SHELL_KILL_FACTOR: Final = 5  # the shell itself is killed after this many kill timeouts
MAX_START_DELAY_PERCENT: Final = 25.0
TIMELIMIT_NOTE: Final = "resource allocation expired"


class Execution(Protocol):
    """What runs a job: a simulated run (``SimulatedRun``) or a job shell (``ShellRun``)."""

    def start(self) -> None: ...

    def kill(self, signum: int) -> None: ...

    def kill_shell(self, signum: int) -> None: ...

    def finalize(self, finished: bool, status: int) -> bool:
        """Clean up after the run; True if that wrote to the KVS (with this turn's writes)."""


#: without ``[exec] imp`` a guest's job is refused: it would run as the instance's uid, with
#: the owner's rights, since no privileged helper runs it as its submitter (flux-core
#: refuses it too, with no IMP configured)
GUEST_NOTE = "unable to run a guest's job: no privileged helper runs jobs as their submitters"


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
        service: JobHost,
        req: Request,
        *,
        jobid: int,
        userid: int,
        jobspec: dict[str, Any],
        R: dict[str, Any],  # noqa: N803
        reattach: bool,
        J: str | None = None,  # noqa: N803 (RFC 15's name)
    ) -> None:
        self.service = service
        self.loop = service.broker.loop
        self.req = req
        self.id = jobid
        self.userid = userid
        self.jobspec = jobspec
        self.R = R
        self.reattach = reattach
        self.J = J  # a guest's, from the start request; None: read from the KVS at its start
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
        self.held_releases: list[str] = []  # partial releases that wait for the start
        self._warning: asyncio.TimerHandle | None = None
        # the answers of this turn, from the start on, that wait for its writes (set_running)
        self._after_writes: list[tuple[ExecResponse, dict[str, Any]]] | None = None

    def __repr__(self) -> str:
        return f"ExecJob({JobID(self.id)})"

    # --- the start stream ---------------------------------------------------------------

    def respond(self, kind: ExecResponse, data: dict[str, Any]) -> None:
        held = self._after_writes
        if held is not None:
            held.append((kind, data))
        else:
            self.req.respond(response(self.id, kind, data))

    def _answer_held(self) -> None:
        """This turn's writes are sent: the answers held for them, in order."""
        held, self._after_writes = self._after_writes, None
        for kind, data in held or ():
            self.respond(kind, data)

    def begin(self, leftovers: Mapping[int, Leftover], *, maybe_ran: bool = False) -> None:
        """Choose how the job runs and start it, or take over what an earlier job-exec ran
        (``leftovers``: of its shells, by rank; ``maybe_ran``: it may have run, with nothing
        left of it but its guest keys)."""
        self.taken_over = bool(leftovers) or self.reattach
        guest = self.userid != self.service.owner
        if guest and self.service.imp is None and not (self.taken_over or maybe_ran):
            self.fatal(GUEST_NOTE)
            return
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
        if leftovers or self.reattach or maybe_ran:
            run.taken = leftovers  # from now on, the launcher's word of a shell's end goes there
            self.service.track(run.resume(leftovers))
        else:
            run.start()

    def set_running(self, *, after_writes: bool = False) -> None:
        """The tasks run: answer ``start`` (unless the job-manager has it); arm the time limit.

        ``after_writes``: this turn writes the run's records (``service.writes``), and
        ``start``, with every answer after it in this turn, goes out at the turn's end
        once they are sent, in order: a short job's shell reports its start and its end
        together, and its ``start``, ``finish`` and ``release`` then reach the job
        manager in one turn, posted and committed together.
        """
        if self.running or self.finalizing:
            return
        self.running = True
        self._arm_expiration()
        if after_writes:
            self._after_writes = []
            self.service.writes.after_flush(self._answer_held)
        if not self.reattach:
            self.respond(ExecResponse.START, {})
        for ranks in self.held_releases:
            self.respond(ExecResponse.RELEASE, {"ranks": ranks, "final": False})
        self.held_releases.clear()

    def release(self, ranks: str) -> None:
        """Give ``ranks`` back before the job ends (RFC 32's partial release): their shells
        are done. Not before ``start`` (held until then), nor once the final release is
        under way."""
        if self.finalizing:
            return
        if self.running:
            self.respond(ExecResponse.RELEASE, {"ranks": ranks, "final": False})
        else:
            self.held_releases.append(ranks)

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
        after them (a job's end is one transaction: ``pflux.broker.turn``).
        """
        if self.finalizing:
            return
        self.finalizing = True
        self.stop_timers()
        finished = self.running
        if self.impl is not None and self.impl.finalize(finished, self.status):
            self.service.writes.after_flush(partial(self._answer_end, finished))
        else:
            self._answer_end(finished)

    def _answer_end(self, finished: bool) -> None:
        if finished:
            self.respond(ExecResponse.FINISH, {"status": self.status})
        self.respond(ExecResponse.RELEASE, {"ranks": "all", "final": True})
        self.service.ended(self.id)
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
