"""The simulator: replays a trace in simulated time, as the instance's execution service.

Loaded when the configuration has ``[simulator]`` (``pflux start --simulate
TRACE`` writes it): ``trace``, the file (``pflux.sim.trace``), and ``epoch``,
the simulated time at which the replay starts, in seconds since the Unix
epoch (by default the real time at start-up, in whole seconds).

It says ``exec-hello`` after job-exec has, so it overrides job-exec (RFC 32:
"execution service override by the Flux simulator"), and steps through time.
Each step is one instant T, the earliest of the trace's next submit and the
next end of a job or node it runs:

1. jobs whose time is up at T finish (``finish``, then the final ``release``),
   nodes whose time is up are released (``release``, ``final: false``), and
   the trace's jobs due at T are submitted (``job-ingest.submit``);
2. ``job-manager.quiescent``: every event is committed and every free has
   reached the scheduler;
3. ``sched.sim-time {time: T}``: the scheduler moves its clock to T, runs
   its pass (``pflux.sched.clock``) and names the jobs it allocated;
4. the step ends once each of those has had its start request answered here
   (so its end is on the calendar), or, should one never come (an exception
   raised on it first), once the job manager is quiescent again.

An instant at which nothing ends and every job submitted is of a priority
the last pass closed to (``Policy.schedule``) needs no pass, which would
start nothing: its jobs are submitted and the next instant is played
(steps 2 to 4 then wait for every submission to be answered).

Each phase goes on from the answer to the one before, in the answer's
callback: no task, no future.  A start request is answered ``start`` at
once and the job's end is taken from ``pflux.sim.run``, counted from T
(with R's expiration).  A job killed (``simulator.kill``, or a
fatal exception on it) ends at once, and the instant is stepped again so that
the scheduler sees its resources back.  Eventlog timestamps stay real (RFC 18:
when the event was posted); R's starttime and expiration are simulated.

The replay ends when no submit is left and no job will end by itself;
``simulator.wait`` answers then, with every trace job's simulated times.
Jobs submitted by others during the replay are scheduled with it; once it
has ended, the clock stops and the scheduler runs no more passes.  A trace
is replayed into a new instance only (one with no jobs yet).
"""

from __future__ import annotations

import errno
import heapq
import logging
import math
import signal
import time
from collections.abc import Callable
from typing import Any, ClassVar

from pflux.broker.config import ConfigError, Declared
from pflux.broker.router import Broker, Request, Service, method
from pflux.errors import PfluxError, RPCError
from pflux.exec.job import TIMELIMIT_NOTE
from pflux.protocol.decode import decode
from pflux.protocol.exec import (
    ExceptionRequest,
    ExecExpirationRequest,
    ExecResponse,
    KillRequest,
    StartRequest,
    response,
)
from pflux.protocol.manager import Empty, ExecHelloRequest
from pflux.protocol.message import Message
from pflux.protocol.sched import SimTimeRequest
from pflux.sim.run import SimRun, plan
from pflux.sim.trace import TraceJob, load
from pflux.spec.fluid import JobID
from pflux.spec.idset import IdSet
from pflux.spec.layout import targets
from pflux.spec.states import priority

__all__ = ["Simulator"]

log = logging.getLogger("pflux.simulator")


class SimJob:
    """A job the simulator runs: its start stream, the ranks it still holds, how it ends."""

    __slots__ = ("end", "id", "index", "ranks", "req", "run", "status", "timelimit")

    def __init__(self, jobid: int, req: Request, ranks: IdSet, index: int | None) -> None:
        self.id = jobid
        self.req = req
        self.ranks = ranks
        self.index = index  # its place in the trace, if it is a trace job
        self.run = SimRun(math.inf, 0, (), None)  # how it runs, from its start
        self.end = math.inf  # when it ends by itself: the run's end, or R's expiration
        self.status = 0  # its status then
        self.timelimit = False  # it ends then because R expires

    def respond(self, kind: ExecResponse, data: dict[str, Any] | None = None) -> None:
        self.req.respond(response(self.id, kind, data))


def _settings(config: dict[str, Any]) -> tuple[str, float | None]:
    section = config.get("simulator")
    if not isinstance(section, dict):
        raise ConfigError("simulator", None, f"must be a table, got {section!r}")
    trace = section.get("trace")
    if not isinstance(trace, str) or not trace:
        raise ConfigError("simulator", "trace", "must be the path of a trace file")
    epoch = section.get("epoch")
    if epoch is not None and (
        isinstance(epoch, bool) or not isinstance(epoch, int | float) or not 0 < epoch < 2**40
    ):
        raise ConfigError(
            "simulator", "epoch", f"must be a time in seconds since 1970, got {epoch!r}"
        )
    return trace, None if epoch is None else float(epoch)


class Simulator(Service):
    """The simulator service (see the module docstring)."""

    name = "simulator"
    config_keys: ClassVar[Declared] = {"simulator": ("trace", "epoch")}

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker)
        path, epoch = _settings(broker.config)
        self.trace: list[TraceJob] = load(path)
        self.epoch = float(int(time.time())) if epoch is None else epoch
        self.now = self.epoch
        self.jobs: dict[int, SimJob] = {}  # running
        self.records: list[dict[str, Any]] = [{} for _ in self.trace]  # by trace index
        self.index_of: dict[int, int] = {}  # job id -> trace index
        self.calendar: list[tuple[float, int, int, IdSet | None]] = []  # when, seq, id, ranks
        self.steps = 0
        self.done = False
        self.seconds = (0.0, 0.0)  # the replay's wall-clock and broker CPU time
        self._seq = 0
        self._upcoming = 0  # next trace job to submit
        self._again = False  # a job ended outside a step: play the instant again
        self._waiters: list[Request] = []
        self._clock = (0.0, 0.0)  # real and CPU time when the replay began
        self._started_ids: set[int] = set()  # jobs started in this step
        self._awaited: set[int] = set()  # jobs this step allocated and not yet started
        self._closed = -1  # the last pass's "closed" (pflux.sched.policy.Policy.schedule)
        self._submitting = 0  # submissions not answered yet
        self._then: Callable[[], None] | None = None  # what waits for them
        self.skipped = 0  # instants that needed no pass

    async def start(self) -> None:
        info = await self.broker.call("job-manager.getinfo", Empty())
        if info.get("max_jobid"):
            raise PfluxError(
                "simulator: this instance already has jobs (restarted from its state"
                " directory?); a trace is replayed into a new instance only"
            )
        self.broker.send("job-manager.exec-hello", ExecHelloRequest(self.name), self._hello)

    # --- stepping (each phase goes on from the answer to the one before) ------------------

    def _hello(self, msg: Message) -> None:
        if msg.errnum:  # RFC 32: a refused hello is fatal
            self.broker.fatal(f"simulator: exec-hello refused: {msg.errstr}")
            return
        log.info("replaying %d jobs from %.0f", len(self.trace), self.epoch)
        self._clock = (time.monotonic(), time.process_time())
        self._step()

    def _step(self) -> None:
        """Play instants until one needs a pass: end and submit what is due, then ask for
        quiescence (once every submission is answered)."""
        while True:
            when = self.now if self._again else self._next_time()
            if when is None:
                self._after_submissions(self._finish)
                return
            quiet = not self._again and self._quiet(when)
            self.now = when
            self._again = False
            self._end_due(when)
            self._submit_due(when)
            if not quiet:
                self._after_submissions(self._submitted)
                return
            self.skipped += 1

    def _quiet(self, when: float) -> bool:
        """Whether the pass at ``when`` would start nothing, so the instant needs none.

        Nothing ends then, and every job submitted then is of a priority the last
        pass closed to: such jobs queue behind where the pass looks, and with no
        other change a pass starts nothing more later (``Policy.schedule``).  The
        offline replay runs the pass, and starts nothing either.
        """
        if self._closed < 0 or (self.calendar and self.calendar[0][0] <= when):
            return False
        trace = self.trace
        upcoming = self._upcoming
        while upcoming < len(trace) and self.epoch + trace[upcoming].submit <= when:
            if priority(trace[upcoming].urgency) > self._closed:
                return False
            upcoming += 1
        return True

    def _after_submissions(self, then: Callable[[], None]) -> None:
        if self._submitting:
            self._then = then
        else:
            then()

    def _submitted(self) -> None:
        self.broker.send("job-manager.quiescent", Empty(), self._quiescent)

    def _quiescent(self, msg: Message) -> None:
        if self._failed(msg):
            return
        self._started_ids.clear()
        self.broker.send("sched.sim-time", SimTimeRequest(self.now), self._passed)

    def _passed(self, msg: Message) -> None:
        """The pass at this instant is done: wait for the jobs it allocated to start here."""
        if self._failed(msg):
            return
        self._closed = msg.payload.get("closed", -1)
        self._awaited = set(msg.payload.get("allocated") or []) - self._started_ids
        step = self.steps
        if not self._awaited:
            self._stepped(step)
            return
        # a job the job manager never asks to start (an exception came first) must not hang
        # the replay: its quiescence ends the step too
        self.broker.send("job-manager.quiescent", Empty(), lambda msg: self._stepped(step))

    def _start_seen(self, jobid: int) -> None:
        self._started_ids.add(jobid)
        if jobid in self._awaited:
            self._awaited.discard(jobid)
            if not self._awaited:
                self._stepped(self.steps)

    def _stepped(self, step: int) -> None:
        """Step ``step`` is over (once: its starts and its fallback may both say so)."""
        if step == self.steps:
            self.steps += 1
            self._step()

    def _failed(self, msg: Message) -> bool:
        if msg.errnum:
            self.broker.fatal(f"simulator: {msg.errstr}")
        return bool(msg.errnum)

    def _finish(self) -> None:
        self.done = True
        self.seconds = (
            time.monotonic() - self._clock[0],
            time.process_time() - self._clock[1],
        )
        log.info(
            "replay done: %d steps to %.0f s of simulated time in %.1f s (%.1f s of CPU)",
            self.steps,
            self.now - self.epoch,
            *self.seconds,
        )
        waiters, self._waiters = self._waiters, []
        for req in waiters:
            req.respond(self._report())

    def _stale(self, entry: tuple[float, int, int, IdSet | None]) -> SimJob | None:
        """The job a calendar entry is still due for (None: it ended, or its end moved)."""
        when, _, jobid, ranks = entry
        job = self.jobs.get(jobid)
        if job is None:
            return None
        due = when == job.end if ranks is None else when < job.end  # a node then goes with it
        return job if due else None

    def _next_time(self) -> float | None:
        calendar = self.calendar
        while calendar and self._stale(calendar[0]) is None:
            heapq.heappop(calendar)
        when = calendar[0][0] if calendar else math.inf
        if self._upcoming < len(self.trace):
            when = min(when, self.epoch + self.trace[self._upcoming].submit)
        return None if when == math.inf else when

    def _end_due(self, when: float) -> None:
        calendar = self.calendar
        while calendar and calendar[0][0] <= when:
            entry = heapq.heappop(calendar)
            job = self._stale(entry)
            ranks = entry[3]
            if job is None:
                continue
            if ranks is None:
                self._end(job)
            else:
                job.ranks = job.ranks - ranks
                job.respond(ExecResponse.RELEASE, {"ranks": ranks.encode(), "final": False})

    def _submit_due(self, when: float) -> None:
        """Submit the trace's jobs due by ``when`` (``_after_submissions`` waits for them)."""
        trace = self.trace
        while self._upcoming < len(trace) and self.epoch + trace[self._upcoming].submit <= when:
            job = trace[self._upcoming]
            self._upcoming += 1
            self._submitting += 1
            self.records[job.index].update(index=job.index, submit=when)
            payload = {"jobspec": job.jobspec, "urgency": job.urgency}
            self.broker.send("job-ingest.submit", payload, _bind(self._answered, job))

    def _answered(self, job: TraceJob, msg: Message) -> None:
        record = self.records[job.index]
        if msg.errnum:
            log.error("trace job %d was refused: %s", job.index, msg.errstr)
            record["error"] = msg.errstr
        else:
            self.index_of[msg.payload["id"]] = job.index
            record["id"] = msg.payload["id"]
        self._submitting -= 1
        if not self._submitting and self._then is not None:
            then, self._then = self._then, None
            then()

    # --- jobs -------------------------------------------------------------------------

    def _end(self, job: SimJob) -> None:
        """``job``'s time is up: (its time limit's exception,) ``finish``, the final ``release``."""
        if job.timelimit:
            exception = {"severity": 0, "type": "timelimit", "note": TIMELIMIT_NOTE}
            job.respond(ExecResponse.EXCEPTION, exception)
        job.respond(ExecResponse.FINISH, {"status": job.status})
        self._release(job)

    def _release(self, job: SimJob) -> None:
        job.respond(ExecResponse.RELEASE, {"ranks": job.ranks.encode(), "final": True})
        del self.jobs[job.id]
        if job.index is not None:
            self.records[job.index]["end"] = self.now

    def _add(self, when: float, jobid: int, ranks: IdSet | None) -> None:
        self._seq += 1
        heapq.heappush(self.calendar, (when, self._seq, jobid, ranks))

    @method("start")
    def start_job(self, req: Request) -> None:
        start = decode(req.topic, req.payload, StartRequest)
        if not req.owner:
            raise RPCError(errno.EPERM, "simulator.start: only the instance owner may start jobs")
        if start.id in self.jobs:
            raise RPCError(errno.EEXIST, f"job {JobID(start.id)}: already started")
        self._begin(req, start.id, start.jobspec, start.R)
        self._start_seen(start.id)  # last: it may end the step and play the next instant

    def _begin(
        self,
        req: Request,
        jobid: int,
        jobspec: dict[str, Any],
        R: dict[str, Any],  # noqa: N803
    ) -> None:
        """Answer ``start`` (or fail the job) and put its end on the calendar."""
        index = self.index_of.get(jobid)
        try:
            ranks = [target.rank for target in targets(R)]
            execution = R["execution"]
            expiration = float(execution.get("expiration") or 0)
            run = plan(jobspec, self.now, ranks)
        except (PfluxError, KeyError, TypeError, ValueError) as exc:
            job = self.jobs[jobid] = SimJob(jobid, req, IdSet(), index)
            self._fail(job, f"cannot simulate the job: {exc}")
            return
        job = self.jobs[jobid] = SimJob(jobid, req, IdSet(ranks), index)
        if run.exception == "init":
            self._fail(job, "mock initialization exception generated")
            return
        if index is not None:
            self.records[index]["start"] = execution.get("starttime")
        job.respond(ExecResponse.START)
        if run.exception == "run":
            self._fail(job, "mock run exception generated", signal.SIGTERM)
            return
        job.run = run
        self._ends(job, expiration)
        for when, released in run.releases:
            self._add(when, jobid, released)

    def _ends(self, job: SimJob, expiration: float) -> None:
        """Put the job's end on the calendar, as its run and R's ``expiration`` have it."""
        job.end, job.status, job.timelimit = job.run.ending(expiration)
        job.end = max(job.end, self.now)  # an expiration already past ends it now
        if job.end < math.inf:
            self._add(job.end, job.id, None)

    def _fail(self, job: SimJob, note: str, status: int | None = None) -> None:
        """A fatal ``exec`` exception: the job ends now (with ``status`` if it started)."""
        job.respond(ExecResponse.EXCEPTION, {"severity": 0, "type": "exec", "note": note})
        if status is not None:
            job.respond(ExecResponse.FINISH, {"status": status})
        self._release(job)
        self._again = True

    @method("kill")
    def kill(self, req: Request) -> None:
        kill = decode(req.topic, req.payload, KillRequest)
        job = self._running(req, kill.id)
        if not 0 < kill.signum < signal.NSIG:
            raise RPCError(errno.EINVAL, f"kill: invalid signal number {kill.signum!r}")
        self._stop(job, kill.signum)
        req.respond({})

    @method("exception")
    def exception(self, req: Request) -> None:
        exception = decode(req.topic, req.payload, ExceptionRequest)
        job = self.jobs.get(exception.id)
        if job is not None and exception.severity == 0:
            self._stop(job, signal.SIGTERM)
        req.respond({})

    @method("expiration")
    def expiration(self, req: Request) -> None:
        """A running job's new expiration (``pflux update``): it may end earlier, or later."""
        update = decode(req.topic, req.payload, ExecExpirationRequest)
        self._ends(self._running(req, update.id), float(update.expiration))
        req.respond({})

    def _stop(self, job: SimJob, signum: int) -> None:
        """A signal ends a simulated job at once, with the signal as its status (as testexec)."""
        job.respond(ExecResponse.FINISH, {"status": signum})
        self._release(job)
        self._again = True

    def _running(self, req: Request, jobid: int) -> SimJob:
        job = self.jobs.get(jobid)
        if job is None:
            raise RPCError(errno.ENOENT, f"job {JobID(jobid)}: not running")
        if not req.owner:
            raise RPCError(errno.EPERM, f"job {JobID(jobid)}: permission denied")
        return job

    # --- results ----------------------------------------------------------------------

    @method("wait")
    def wait(self, req: Request) -> None:
        """Answer once the replay is over, with every trace job's simulated times."""
        if self.done:
            req.respond(self._report())
        else:
            self._waiters.append(req)

    def _report(self) -> dict[str, Any]:
        return {
            "epoch": self.epoch,
            "time": self.now,
            "steps": self.steps,
            "skipped": self.skipped,
            "wall": self.seconds[0],
            "cpu": self.seconds[1],
            "jobs": self.records,
        }


def _bind(fn: Callable[[TraceJob, Message], None], job: TraceJob) -> Callable[[Message], None]:
    return lambda msg: fn(job, msg)
