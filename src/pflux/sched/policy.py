"""The queue and the allocation policy: priority order, then submit order, EASY backfill.

Pure: a scheduling pass takes the time and returns what to do (allocations
and annotations); the service performs it.  A pass is cheap however long the
queue is: it allocates from the head while jobs fit, and once the head job is
blocked it looks at no more than ``depth`` jobs behind it, and none when the
pool has nothing free or the head job has no reservation.

EASY backfill (Mu'alem and Feitelson, 2001), as flux-core's sched-backfill
does it: the blocked head job gets a reservation, the earliest time enough
resources are free if running jobs end at their expirations.  A later job may
start now if it fits and either ends by then or keeps off the resources the
reservation needs.  A job without a duration never ends by then; when a
running job without an expiration holds what the head job needs, there is no
reservation, and nothing starts ahead of the head job.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterator
from operator import attrgetter
from typing import Any

from pflux.sched.pool import Pool, Reservation, ResourceRequest
from pflux.spec.resource import ResourceSet

__all__ = ["DEFAULT_DEPTH", "MAX_PRIORITY", "PassResult", "PendingJob", "Policy", "Queue"]

MAX_PRIORITY = 4294967295
DEFAULT_DEPTH = 32
"""Jobs behind a blocked head job considered for backfill per pass (fluxion's queue-depth)."""

REASON_BLOCKED = "insufficient resources"  # flux-core's sched.reason_pending wording

_key = attrgetter("key")


class PendingJob:
    """One job waiting for resources.

    ``key`` orders the queue: higher priority first, then earlier submit
    time, then lower id.  ``sent`` holds the ``sched`` annotations the job
    manager has been told and not told to forget.  ``tag`` is the caller's
    (the service keeps the request to answer there).
    """

    __slots__ = ("id", "key", "priority", "request", "sent", "shape", "shape_id", "t_submit", "tag")

    def __init__(
        self,
        jobid: int,
        priority: int,
        t_submit: float,
        request: ResourceRequest,
        tag: Any = None,
    ) -> None:
        self.id = jobid
        self.priority = priority
        self.t_submit = t_submit
        self.request = request
        self.shape = request.shape
        self.shape_id = 0  # the queue's number for the shape (cheaper to hash than it)
        self.tag = tag
        self.key = (-priority, t_submit, jobid)
        self.sent: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"PendingJob({self.id}, priority={self.priority})"


class Queue:
    """Pending jobs in scheduling order, found by id."""

    def __init__(self) -> None:
        self._jobs: list[PendingJob] = []
        self._by_id: dict[int, PendingJob] = {}
        self._shapes: dict[ResourceRequest, int] = {}

    def __len__(self) -> int:
        return len(self._jobs)

    def __iter__(self) -> Iterator[PendingJob]:
        return iter(self._jobs)

    def __contains__(self, jobid: object) -> bool:
        return jobid in self._by_id

    def get(self, jobid: int) -> PendingJob | None:
        return self._by_id.get(jobid)

    def add(self, job: PendingJob) -> None:
        """Queue ``job``; its id must not be queued already."""
        if job.id in self._by_id:
            raise ValueError(f"job {job.id} is already queued")
        job.shape_id = self._shapes.setdefault(job.shape, len(self._shapes))
        self._by_id[job.id] = job
        jobs = self._jobs
        if not jobs or jobs[-1].key < job.key:
            jobs.append(job)  # the usual case: submitted after everything queued
        else:
            insort(jobs, job, key=_key)

    def remove(self, jobid: int) -> PendingJob | None:
        """Take ``jobid`` out of the queue; None if it is not queued."""
        job = self._by_id.pop(jobid, None)
        if job is not None:
            del self._jobs[bisect_left(self._jobs, job.key, key=_key)]
        return job

    def reprioritize(self, jobid: int, priority: int) -> bool:
        """Give a queued job a new priority; False if it is not queued."""
        job = self._by_id.get(jobid)
        if job is None:
            return False
        if priority != job.priority:
            del self._jobs[bisect_left(self._jobs, job.key, key=_key)]
            job.priority = priority
            job.key = (-priority, job.t_submit, job.id)
            insort(self._jobs, job, key=_key)
        return True

    def head(self, n: int) -> list[PendingJob]:
        """The first ``n`` jobs in order."""
        return self._jobs[:n]

    def _drop(self, taken: set[int], end: int) -> None:
        """Remove the jobs ``taken``, all among the first ``end``."""
        self._jobs[:end] = [job for job in self._jobs[:end] if job.id not in taken]
        for jobid in taken:
            del self._by_id[jobid]


class PassResult:
    """What a scheduling pass decided.

    ``allocated``: jobs that got resources (now out of the queue) and their
    R.  ``annotations``: changes to jobs' ``sched`` annotations, a value of
    None deleting the key (RFC 27's merge rule).  ``closed``: see
    :meth:`Policy.schedule`.
    """

    __slots__ = ("allocated", "annotations", "closed")

    def __init__(self) -> None:
        self.allocated: list[tuple[PendingJob, ResourceSet]] = []
        self.annotations: dict[PendingJob, dict[str, Any]] = {}
        self.closed = -1

    def note(self, job: PendingJob, key: str, value: Any) -> None:
        """Set a ``sched`` annotation of ``job`` unless it already has that value."""
        if value is None:
            if key not in job.sent:
                return
            del job.sent[key]
        elif key in job.sent and job.sent[key] == value:
            return
        else:
            job.sent[key] = value
        self.annotations.setdefault(job, {})[key] = value


class Policy:
    """The queue and the passes that allocate from it."""

    def __init__(self, pool: Pool, *, depth: int = DEFAULT_DEPTH) -> None:
        if depth < 0:
            raise ValueError(f"depth must be 0 or more, got {depth}")
        self.pool = pool
        self.queue = Queue()
        self.depth = depth
        self._estimated: PendingJob | None = None  # the job carrying a t_estimate
        self._reasoned: list[PendingJob] = []  # the jobs carrying a reason_pending
        self._cache: tuple[int, PendingJob | None, Reservation | None] = (-1, None, None)

    def schedule(self, now: float) -> PassResult:
        """Allocate what can start at ``now``; annotate the blocked jobs looked at.

        The result's ``closed`` is the highest priority a job queued after
        this pass may have and still not start in the next pass, if nothing
        but such jobs joining the queue changes meanwhile (-1: a job of any
        priority might).  Run again with nothing changed, a pass starts no
        more than it did: its head stays blocked, and the jobs it looked at
        behind the head fail again (with time, fewer end before the
        reservation) unless backfilling some let it look further.  A new job
        can only change that by becoming the head, or by falling within
        ``depth`` jobs of it.  The simulator skips such passes.
        """
        result = PassResult()
        pool = self.pool
        jobs = self.queue._jobs
        i = 0
        while i < len(jobs) and pool.free_cores:
            job = jobs[i]
            resources = pool.alloc(job.id, job.request, now)
            if resources is None:
                break
            result.allocated.append((job, resources))
            i += 1
        taken = {job.id for job, _ in result.allocated}
        end = i
        blocked: list[PendingJob] = []
        if i < len(jobs):
            end = self._blocked(i, now, result, taken, blocked)
        self._move_reasons(blocked, taken, result)
        backfilled = len(taken) > i
        if taken:
            self.queue._drop(taken, end)
        if not backfilled:
            result.closed = self._closed()
        return result

    def _closed(self) -> int:
        """After a pass that backfilled nothing: see ``schedule``."""
        jobs = self.queue._jobs
        if not self.pool.free_cores:
            return MAX_PRIORITY  # no job can start before something ends
        if not jobs:
            return -1
        head = jobs[0]
        if self._cache[2] is None:  # no reservation: nothing may pass the head
            return head.priority
        return jobs[self.depth].priority if len(jobs) > self.depth else -1

    def _move_reasons(self, blocked: list[PendingJob], taken: set[int], result: PassResult) -> None:
        """``blocked`` (found so by this pass) carry reason_pending; the jobs still queued
        that carried it and are not among them lose it (a new head after an urgency
        change, flux-core's annotation following the head), as t_estimate does."""
        if not blocked and not self._reasoned:
            return
        for job in blocked:
            result.note(job, "reason_pending", REASON_BLOCKED)
        now_blocked = {job.id for job in blocked}
        queue = self.queue
        for job in self._reasoned:
            if job.id not in now_blocked and job.id not in taken and queue.get(job.id) is job:
                result.note(job, "reason_pending", None)
        self._reasoned = blocked

    def _blocked(
        self, i: int, now: float, result: PassResult, taken: set[int], blocked: list[PendingJob]
    ) -> int:
        """The head job (at ``i``) is blocked: list it in ``blocked`` and backfill behind
        it (listing the jobs that did not fit).

        Returns the end of the part of the queue looked at.
        """
        jobs = self.queue._jobs
        head = jobs[i]
        blocked.append(head)
        reservation = self._reservation(head)
        estimate = reservation.time if reservation is not None else None
        previous = self._estimated
        if (
            previous is not None
            and previous is not head
            and previous.id not in taken
            and self.queue.get(previous.id) is previous
        ):
            result.note(previous, "t_estimate", None)
        self._estimated = head
        result.note(head, "t_estimate", estimate)
        if reservation is None:
            return i + 1
        end = min(len(jobs), i + 1 + self.depth)
        pool = self.pool
        # shapes that did not fit: allocating only takes more away, so jobs alike cannot fit
        misfits: set[int] = set()  # shape id * 2 + whether the job ends in time
        shadow = reservation.time
        for k in range(i + 1, end):
            if not pool.free_cores:
                return k
            job = jobs[k]
            request = job.request
            ends_in_time = 0 < request.duration <= shadow - now
            shape = job.shape_id * 2 + ends_in_time
            resources = None
            if shape not in misfits:
                avoid = None if ends_in_time else reservation.resources
                resources = pool.alloc(job.id, request, now, avoid=avoid)
            if resources is not None:
                result.allocated.append((job, resources))
                taken.add(job.id)
                continue
            misfits.add(shape)
            blocked.append(job)
        return end

    def _reservation(self, head: PendingJob) -> Reservation | None:
        """The head job's reservation, recomputed only when the pool or head changed."""
        generation, job, reservation = self._cache
        if generation != self.pool.generation or job is not head:
            reservation = self.pool.reservation(head.request)
            self._cache = (self.pool.generation, head, reservation)
        return reservation

    def cancel(self, jobid: int) -> PendingJob | None:
        """Take ``jobid`` out of the queue (None if it is not queued)."""
        job = self.queue.remove(jobid)
        if job is not None and self._estimated is job:
            self._estimated = None
        return job
