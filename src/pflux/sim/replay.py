"""The schedule a trace gets, computed offline by the scheduler's own pool and policy.

A discrete-event replay with no instance: at each instant at which something
happens, first the jobs (and nodes) whose time is up give back their
resources, then the jobs submitted then join the queue (a job that could
never fit is denied), then one scheduling pass runs at that instant; a job
killed as it starts (``mock_exception``) gives its resources back at once
and the instant is played again.  That is the order in which the simulator
(``pflux.sim.service``) delivers the same events to the scheduler, and both
take run times from ``pflux.sim.run``, so the simulator must produce exactly
this schedule.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import NamedTuple

from pflux.sched.policy import DEFAULT_DEPTH, PendingJob, Policy
from pflux.sched.pool import Pool, ResourceRequest
from pflux.sim.run import plan
from pflux.sim.trace import TraceJob
from pflux.spec.idset import IdSet
from pflux.spec.resource import ResourceSet
from pflux.spec.states import priority

__all__ = ["TraceOutcome", "replay"]


class TraceOutcome(NamedTuple):
    """When a trace job started and ended (None: it never started)."""

    start: float | None
    end: float | None


def replay(
    jobs: Sequence[TraceJob],
    resources: ResourceSet,
    *,
    epoch: float,
    depth: int = DEFAULT_DEPTH,
) -> dict[int, TraceOutcome]:
    """Each trace job's outcome, by its index, with the simulation starting at ``epoch``."""
    state = _Replay(jobs, resources, epoch, depth)
    when = state.next_time()
    while when is not None:
        state.end_due(when)
        state.submit_due(when)
        again = state.schedule(when)
        when = when if again else state.next_time()
    return state.outcome


class _Replay:
    """The pool, the queue and the calendar of ends of one replay."""

    def __init__(
        self, jobs: Sequence[TraceJob], resources: ResourceSet, epoch: float, depth: int
    ) -> None:
        self.pool = Pool(resources)
        self.policy = Policy(self.pool, depth=depth)
        self.epoch = epoch
        self.outcome = {job.index: TraceOutcome(None, None) for job in jobs}
        self.jobs = {job.index: job for job in jobs}
        self.order = sorted(jobs, key=lambda job: (job.submit, job.index))
        self.upcoming = 0  # the next job of ``order`` to submit
        self.ends: dict[int, float] = {}  # when each running job ends
        self.calendar: list[tuple[float, int, int, IdSet | None]] = []  # when, seq, index, ranks
        self.seq = 0

    def next_time(self) -> float | None:
        when = self.calendar[0][0] if self.calendar else math.inf
        if self.upcoming < len(self.order):
            when = min(when, self.epoch + self.order[self.upcoming].submit)
        return None if when == math.inf else when

    def end_due(self, when: float) -> None:
        """Give back what jobs and nodes ending by ``when`` hold."""
        calendar = self.calendar
        while calendar and calendar[0][0] <= when:
            due, _, index, ranks = heapq.heappop(calendar)
            if ranks is None:
                self.pool.free(index)
                del self.ends[index]
                self.outcome[index] = self.outcome[index]._replace(end=when)
            elif due < self.ends.get(index, -math.inf):  # else it goes with its job, at its end
                held = self.pool.held(index).targets
                part = {rank: held[rank] for rank in ranks if rank in held}
                self.pool.free(index, ResourceSet(part), final=False)

    def submit_due(self, when: float) -> None:
        """Queue the jobs submitted by ``when`` (a job that could never fit is denied)."""
        order = self.order
        while self.upcoming < len(order) and self.epoch + order[self.upcoming].submit <= when:
            job = order[self.upcoming]
            self.upcoming += 1
            request = ResourceRequest.from_jobspec(job.jobspec)
            if self.pool.unsatisfiable(request) is None:
                self.policy.queue.add(PendingJob(job.index, priority(job.urgency), when, request))

    def schedule(self, when: float) -> bool:
        """One pass at ``when``; True if a job it started gave its resources back at once."""
        again = False
        for pending, granted in self.policy.schedule(when).allocated:
            job = self.jobs[pending.id]
            run = plan(job.jobspec, when, list(granted.targets))
            if run.exception is not None:
                self.pool.free(job.index)  # killed as it starts
                again = True
                if run.exception == "run":
                    self.outcome[job.index] = TraceOutcome(when, when)
                continue
            self.outcome[job.index] = TraceOutcome(when, None)
            end, _, _ = run.ending(granted.expiration)
            self.ends[job.index] = end
            for time, ranks in run.releases:
                self._add(time, job.index, ranks)
            if end < math.inf:
                self._add(end, job.index, None)
        return again

    def _add(self, when: float, index: int, ranks: IdSet | None) -> None:
        self.seq += 1
        heapq.heappush(self.calendar, (when, self.seq, index, ranks))
