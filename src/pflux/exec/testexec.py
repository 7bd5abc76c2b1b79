"""Test execution: a job's run simulated with one timer and no process (flux-core's testexec).

A jobspec with ``attributes.system.exec.test`` (an object, possibly empty)
runs in test mode. Its keys, as flux-core's ``job-exec/testexec.c`` reads them:

- ``run_duration`` (FSD string, e.g. ``"0.01s"``): how long the job runs;
  by default the jobspec's ``duration``. 0 means until it is killed, as in
  flux-core (a timer is set only for a positive duration).
- ``wait_status`` (integer): the status of the ``finish`` response (default 0).
- ``mock_exception`` (``"init"`` or ``"run"``): raise a fatal ``exec``
  exception before the job starts (no ``start``, no ``finish``) or just after
  it starts (the job is then killed).
- ``override`` (integer): when nonzero the job starts only when told to by
  ``job-exec.override {jobid, event: "start"}``, and a job of no duration
  finishes only on ``{event: "finish", status}`` or an exception.
- ``reattach_finish`` (integer): when nonzero a job taken over after a
  restart finishes at once.

A job taken over after a restart (``reattach``) runs for what is left of
its run time, counted from its ``start`` event, or finishes at once if none
is left, as flux-core's testexec does.
- ``node_durations`` (list of FSD strings, pflux's own): how long the job
  runs on each node of R, in rank order; a node whose time is up before the
  job's is released then (a ``release`` response with ``final: false``), so
  its resources go back to the scheduler while the job runs on elsewhere
  (RFC 32's partial release). The simulator (``pflux.sim``) honours it too.

A signal to a running test job ends it at once with the signal as its wait
status, as flux-core's testexec does: a canceled job finishes with status 15
(SIGTERM), one whose time limit expired with 14 (SIGALRM).
"""

from __future__ import annotations

import asyncio
import errno
import functools
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pflux.errors import DurationError, EventlogError, PfluxError, RPCError
from pflux.protocol.exec import ExecResponse
from pflux.protocol.kvs import GetRequest, value_of
from pflux.spec import duration
from pflux.spec.eventlog import parse
from pflux.spec.idset import IdSet
from pflux.spec.kvs_keys import job_key
from pflux.spec.layout import targets

if TYPE_CHECKING:
    from pflux.exec.host import RunJob

__all__ = ["SimulatedRun", "SimulationConfig", "simulation_config"]


@dataclass(frozen=True, slots=True)
class SimulationConfig:
    """A test-mode job's settings (see the module docstring)."""

    run_duration: float
    wait_status: int = 0
    mock_exception: str | None = None
    override: bool = False
    reattach_finish: bool = False
    node_durations: tuple[float, ...] = ()

    def early_releases(self, ranks: Sequence[int]) -> list[tuple[float, IdSet]]:
        """(seconds after the start, ranks) of the nodes released before the job ends.

        ``ranks`` are R's, in order: node i is ``ranks[i]``.
        """
        run = self.run_duration
        by_time: dict[float, list[int]] = {}
        for rank, seconds in zip(ranks, self.node_durations, strict=False):
            if run <= 0 or seconds < run:
                by_time.setdefault(seconds, []).append(rank)
        return [(seconds, IdSet(by_time[seconds])) for seconds in sorted(by_time)]


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def simulation_config(jobspec: Mapping[str, Any]) -> SimulationConfig | None:
    """The test settings of ``jobspec``, or None when it does not ask for test mode.

    Settings of the wrong type raise PfluxError naming the key.
    """
    system = jobspec.get("attributes", {}).get("system", {})
    test = system.get("exec", {}).get("test") if isinstance(system, Mapping) else None
    if test is None:
        return None
    if type(test) is dict and test.keys() <= _RUN_DURATION_ONLY:
        try:  # the usual test job, as flux's throughput.py submits it thousands of times
            return _run_only(system.get("duration", 0), test.get("run_duration"))
        except TypeError:  # unhashable: the long way, which says what is wrong
            pass
    return _full_config(system, test)


_RUN_DURATION_ONLY = frozenset(("run_duration",))


@functools.lru_cache(maxsize=64)
def _run_only(job_duration: Any, run_duration: Any) -> SimulationConfig:
    """The settings of a test that names at most ``run_duration`` (they are immutable)."""
    return _full_config({"duration": job_duration}, {"run_duration": run_duration})


def _full_config(system: Mapping[str, Any], test: Any) -> SimulationConfig:
    where = "attributes.system.exec.test"
    if not isinstance(test, Mapping):
        raise PfluxError(f"{where} must be an object")
    run_duration = float(system.get("duration", 0) or 0)
    text = test.get("run_duration")
    if text is not None:
        if not isinstance(text, str):
            raise PfluxError(f"{where}.run_duration must be a duration string such as 0.1s")
        try:
            run_duration = duration.parse(text)
        except DurationError as exc:
            raise PfluxError(f"{where}.run_duration: {exc}") from None
    nodes = test.get("node_durations", [])
    if not isinstance(nodes, list) or not all(isinstance(d, str) for d in nodes):
        raise PfluxError(f"{where}.node_durations must be a list of duration strings")
    try:
        node_durations = tuple(duration.parse(d) for d in nodes)
    except DurationError as exc:
        raise PfluxError(f"{where}.node_durations: {exc}") from None
    wait_status = test.get("wait_status", 0)
    if not _is_int(wait_status):
        raise PfluxError(f"{where}.wait_status must be an integer")
    mock = test.get("mock_exception")
    if mock is not None and not isinstance(mock, str):
        raise PfluxError(f"{where}.mock_exception must be a string")
    override = test.get("override", 0)
    if not _is_int(override):
        raise PfluxError(f"{where}.override must be an integer")
    finish = test.get("reattach_finish", 0)
    if not _is_int(finish):
        raise PfluxError(f"{where}.reattach_finish must be an integer")
    return SimulationConfig(
        run_duration, wait_status, mock, bool(override), bool(finish), node_durations
    )


class SimulatedRun:
    """One test-mode job's simulated execution."""

    __slots__ = ("config", "job", "releases", "timer")

    def __init__(self, job: RunJob, config: SimulationConfig) -> None:
        self.job = job
        self.config = config
        self.timer: asyncio.TimerHandle | None = None
        self.releases: list[asyncio.TimerHandle] = []  # nodes released before the end

    def start(self) -> None:
        if self.config.mock_exception == "init":
            self.job.fatal("mock initialization exception generated")
            return
        self.job.started = True
        if not self.config.override:
            self._run()
        if self.config.mock_exception == "run":
            self.job.fatal("mock run exception generated")

    async def reattach(self) -> None:
        """Go on after a restart for what is left of the run time (see the module docstring)."""
        job = self.job
        job.started = True
        left = 0.0
        if not self.config.reattach_finish:
            try:
                reply = await job.service.broker.call(
                    "kvs.get", GetRequest(job_key(job.id, "eventlog"))
                )
                start = next(e.timestamp for e in parse(value_of(reply)) if e.name == "start")
            except (RPCError, EventlogError, StopIteration):
                start = 0.0
            left = start + self.config.run_duration - time.time()
        if job.finalizing:
            return
        self._run(max(left, 1e-5))

    def _run(self, seconds: float | None = None) -> None:
        """Run for ``seconds``, or the whole run time; a reattached run releases no node
        early (what it released before the restart is not known): its final release does."""
        fresh = seconds is None
        if seconds is None:
            seconds = self.config.run_duration
        loop = self.job.loop
        if seconds > 0:
            self.timer = loop.call_later(seconds, self._finished)
        if fresh and self.config.node_durations:
            ranks = [target.rank for target in targets(self.job.R)]
            for delay, released in self.config.early_releases(ranks):
                self.releases.append(loop.call_later(delay, self._release, released))
        self.job.set_running()

    def _release(self, ranks: IdSet) -> None:
        if not self.job.finalizing:
            self.job.respond(ExecResponse.RELEASE, {"ranks": ranks.encode(), "final": False})

    def _finished(self) -> None:
        self.timer = None
        self._stop_releases()
        self.job.complete(self.config.wait_status)

    def _stop_releases(self) -> None:
        for timer in self.releases:
            timer.cancel()
        self.releases = []

    def kill(self, signum: int) -> None:
        """End the run now, with the signal as its wait status."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self._stop_releases()
        if self.job.started:
            self.job.complete(signum)

    def kill_shell(self, signum: int) -> None:
        """There is no shell to kill."""

    def finalize(self, finished: bool, status: int) -> bool:
        """Nothing to clean up, nothing written."""
        return False

    def override(self, event: str, status: int) -> None:
        """``job-exec.override``: start the job, or finish it with ``status``."""
        if not self.config.override:
            raise RPCError(errno.EINVAL, "Job not in exec override mode")
        if event == "start":
            if self.job.running:
                raise RPCError(errno.EINVAL, "Job already running")
            self._run()
        elif event == "finish":
            if not self.job.running:
                raise RPCError(errno.EINVAL, "Job not running")
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None
            self._stop_releases()
            self.job.complete(status)
        else:
            raise RPCError(errno.EINVAL, "Invalid event")
