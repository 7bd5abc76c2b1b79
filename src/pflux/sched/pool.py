"""The resource pool: which cores and GPUs of which rank are free, and until when.

Pure bookkeeping with no I/O, so the scheduler's policy can be tested (and
simulated forward in time for backfill) without a broker.  Every execution
target is named by its rank, as R names them; nothing here assumes one rank.

Allocation follows flux-core's Rv1 pool (sched-simple): candidate ranks are
tried worst-fit (most free cores first, then most free GPUs, then lowest rank)
and the lowest free ids of a rank are taken.  A request without a node level
may spread its slots over ranks, each slot within one rank; a node-level
request takes ``nslots / nnodes`` slots on each of ``nnodes`` ranks, and an
``exclusive`` one takes whole ranks that are entirely free.  A request with
``ranks`` (those meeting the job's constraints, RFC 31, its queue's
``requires`` among them) is placed on those ranks only.

A scheduling pass tries many requests against the same free resources, so
the pool keeps its ranks in worst-fit order as they change, and works out
the free resources less a reservation once per change.

A drained rank (``drain``) keeps what its jobs hold until they free it, but
what it has free, and whatever they free later, is set aside rather than
offered: to the rest of the pool the rank has nothing free.  A rank that is
down (``set_down``: its broker was lost) is set aside the same way until it is
up again (``set_up``) and not drained.  Ranks join as their brokers say hello (``add``); an
instance of ``size`` ranks of which some have not joined yet denies only a
request for more nodes than it could ever have.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

from pflux.errors import JobspecError, ResourceError
from pflux.spec.fluid import JobID
from pflux.spec.idset import IdSet
from pflux.spec.jobspec import JobspecView, validate
from pflux.spec.resource import ResourceSet, Target

__all__ = ["Pool", "Reservation", "ResourceRequest"]

_EMPTY = IdSet()
# what a rank has free (or what a job holds there): (cores, gpus)
Holding = tuple[IdSet, IdSet]
# how many of them: (cores, gpus)
Counts = tuple[int, int]
# a rank's place in the worst-fit order: (-free cores, -free GPUs, rank)
FitKey = tuple[int, int, int]


class ResourceRequest(NamedTuple):
    """What one job asks for, as the pool needs it (from the jobspec, RFC 25).

    ``nnodes`` is 0 when the jobspec has no node level; ``ranks`` the only
    ranks it may have (None: any); ``duration`` is in seconds, 0 for none.
    """

    nslots: int
    cores_per_slot: int
    gpus_per_slot: int = 0
    nnodes: int = 0
    exclusive: bool = False
    duration: float = 0.0
    ranks: frozenset[int] | None = None

    @property
    def shape(self) -> ResourceRequest:
        """What it needs, not for how long (without ``_replace``, slow for a tuple this
        small: a scheduler asks twice a job)."""
        if not self.duration:
            return self
        return tuple.__new__(ResourceRequest, (*self[:5], 0.0, self.ranks))

    @classmethod
    def from_jobspec(cls, data: Any) -> ResourceRequest:
        """Read the request from a decoded jobspec; JobspecError names what is wrong.

        The job manager forwards jobspecs that ingest has validated, so only
        the fields used here are checked; full validation runs only to
        explain a failure.
        """
        try:
            spec = JobspecView(data)
            nnodes = spec.nnodes
            request = cls(
                spec.nslots,
                spec.cores_per_slot,
                spec.gpus_per_slot,
                0 if nnodes is None else nnodes,
                spec.exclusive,
                spec.duration,
            )
        except (KeyError, IndexError, TypeError, AttributeError, ValueError, OverflowError):
            request = None
        if request is None or not request._sane():
            validate(data)  # raises JobspecError with every problem
            raise JobspecError([("resources", "cannot be read as a resource request")])
        return request

    def _sane(self) -> bool:
        return (
            type(self.nslots) is int
            and type(self.cores_per_slot) is int
            and type(self.gpus_per_slot) is int
            and type(self.nnodes) is int
            and self.nslots >= 1
            and self.cores_per_slot >= 1
            and self.gpus_per_slot >= 0
            and self.nnodes >= 0
            and math.isfinite(self.duration)
            and self.duration >= 0
        )

    @property
    def slots_per_node(self) -> int:
        return self.nslots // self.nnodes if self.nnodes else self.nslots


class Reservation(NamedTuple):
    """When a blocked request could start, and the resources it would get then."""

    time: float
    resources: Mapping[int, Holding]


class _Held:
    """What one job holds, until when, and whether its R only partly fit the pool."""

    __slots__ = ("damaged", "expiration", "ranks", "sizes")

    def __init__(self, ranks: dict[int, Holding], expiration: float, damaged: bool) -> None:
        self.ranks = ranks
        self.expiration = expiration
        self.damaged = damaged
        self.sizes = _sizes(ranks)  # (rank, cores, gpus) counts, for reservations


class Pool:
    """Free and allocated cores and GPUs per rank, and each job's allocation."""

    def __init__(self, resources: ResourceSet, size: int = 0) -> None:
        self.all = resources
        self._targets: dict[int, Target] = dict(resources.targets)
        self._hosts = {rank: target.hostname for rank, target in self._targets.items()}
        self._free: dict[int, Holding] = {
            rank: (target.cores, target.gpus) for rank, target in self._targets.items()
        }
        self._counts: dict[int, Counts] = {
            rank: (len(cores), len(gpus)) for rank, (cores, gpus) in self._free.items()
        }
        self._jobs: dict[int, _Held] = {}
        self._never: dict[ResourceRequest, str | None] = {}  # unsatisfiable(), by shape
        self.free_cores = resources.ncores()
        self.free_gpus = resources.ngpus()
        self._ending: list[tuple[float, int]] = []  # (expiration, job) of jobs that expire
        self.generation = 0  # bumped on every change, for callers' caches
        # every rank's (-free cores, -free GPUs, rank), kept sorted: the worst-fit order
        self._by_fit: list[FitKey] = _worst_fit(self._counts)
        self._avoiding: _View | None = None  # the free resources less a reservation
        self._aside: dict[int, Holding] = {}  # what a drained or down rank has set aside
        self._drained: set[int] = set()
        self._down: set[int] = set()
        # ranks of the instance not in the pool yet (they join with ``add``)
        self._missing = max(0, size - len(self._targets))
        self._size = size

    # --- queries ----------------------------------------------------------------------

    def __contains__(self, jobid: object) -> bool:
        return jobid in self._jobs

    def __len__(self) -> int:
        return len(self._jobs)

    def held(self, jobid: int) -> ResourceSet:
        """What ``jobid`` holds (empty if nothing), with its expiration."""
        job = self._jobs.get(jobid)
        if job is None:
            return ResourceSet({})
        return ResourceSet(self._targets_of(job.ranks), expiration=job.expiration)

    def damaged(self, jobid: int) -> bool:
        """Whether ``jobid``'s R only partly fit the pool when it was adopted."""
        return self._job(jobid).damaged

    def expiration(self, jobid: int) -> float:
        """When ``jobid``'s allocation ends (0: never); ResourceError if it holds nothing."""
        return self._job(jobid).expiration

    def available(self) -> ResourceSet:
        """The free resources."""
        return ResourceSet(self._targets_of(self._free))

    def allocated(self) -> ResourceSet:
        """The resources some job holds."""
        used = {}
        for rank, target in self._targets.items():
            cores, gpus = self._free[rank]
            aside = self._aside.get(rank)
            if aside is not None:
                cores, gpus = cores | aside[0], gpus | aside[1]
            used[rank] = (target.cores - cores, target.gpus - gpus)
        return ResourceSet(self._targets_of(used))

    @property
    def drained(self) -> frozenset[int]:
        """The drained ranks."""
        return frozenset(self._drained)

    def busy(self, rank: int) -> bool:
        """Whether some job holds part of ``rank``."""
        target = self._targets[rank]
        cores, gpus = self._free[rank]
        aside = self._aside.get(rank, (_EMPTY, _EMPTY))
        return len(cores) + len(aside[0]) < len(target.cores) or len(gpus) + len(aside[1]) < len(
            target.gpus
        )

    def unsatisfiable(self, request: ResourceRequest) -> str | None:
        """Why ``request`` could never be met by the whole pool, or None if it could.

        The wording is flux-core's (sched-simple's Rv1 pool).  The answer is
        kept for each shape of request until a rank joins the pool.
        """
        shape = request.shape
        if shape not in self._never:
            self._never[shape] = self._never_why(shape)
        return self._never[shape]

    def _never_why(self, request: ResourceRequest) -> str | None:
        spn = request.slots_per_node
        cores, gpus = spn * request.cores_per_slot, spn * request.gpus_per_slot
        allowed = request.ranks
        targets = [t for r, t in self._targets.items() if allowed is None or r in allowed]
        if request.nnodes:
            eligible = sum(1 for t in targets if len(t.cores) >= cores and len(t.gpus) >= gpus)
            if allowed is None:
                eligible += self._missing  # a rank yet to join may be
            if eligible >= request.nnodes:
                return None
            if request.exclusive:
                return (
                    f"unsatisfiable request: need {request.nnodes} exclusive node(s),"
                    f" only {eligible} eligible"
                )
            with_gpus = f" and {gpus} GPUs" if gpus else ""
            return (
                f"unsatisfiable request: need {request.nnodes} node(s) with {cores} cores"
                f"{with_gpus} each, only {eligible} eligible"
            )
        if self._missing and allowed is None:
            return None  # the ranks yet to join may hold any number of slots
        cps, gps = request.cores_per_slot, request.gpus_per_slot
        slots = sum(len(t.cores) // cps for t in targets)
        if slots < request.nslots:
            return (
                f"unsatisfiable request: need {request.nslots} slot(s) of {cps} core(s),"
                f" only {slots} such slot(s) available (total cores: {self.all.ncores()})"
            )
        if gps:
            slots = sum(min(len(t.cores) // cps, len(t.gpus) // gps) for t in targets)
            if slots < request.nslots:
                return (
                    f"unsatisfiable request: need {request.nslots} slot(s) with {gps} GPU(s)"
                    f" each, only {slots} available (total GPUs: {self.all.ngpus()})"
                )
        return None

    # --- changes ----------------------------------------------------------------------

    def add(self, rank: int, target: Target) -> None:
        """A rank joins the pool with what it offers (its broker said hello); it is set
        aside if it is drained or down.  What running jobs hold there (``adopt``) is
        not free."""
        if rank in self._targets:
            raise ResourceError(f"rank {rank} is already in the pool")
        cores, gpus = target.cores, target.gpus
        if self._aside.pop(rank, None) is not None:  # adopted jobs hold part of it
            for job in self._jobs.values():
                held = job.ranks.get(rank)
                if held is not None:
                    cores, gpus = cores - held[0], gpus - held[1]
        self._targets[rank] = target
        self._hosts[rank] = target.hostname
        # ranks join in any order; R lists them ascending (ResourceSet trusts its caller)
        targets = dict(sorted({**self.all.targets, rank: target}.items()))
        self.all = ResourceSet(targets, properties=self.all.properties)
        self._free[rank] = (cores, gpus)
        self._counts[rank] = counts = (len(cores), len(gpus))
        insort(self._by_fit, (-counts[0], -counts[1], rank))
        self.free_cores += counts[0]
        self.free_gpus += counts[1]
        self._missing = max(0, self._missing - 1)
        self._never.clear()
        self.generation += 1
        if rank in self._drained or rank in self._down:
            self._set_aside(rank)

    def drain(self, rank: int) -> None:
        """Offer nothing of ``rank`` to new jobs; the jobs there keep what they hold.
        A rank not in the pool yet is drained when it joins."""
        self._drained.add(rank)
        self._set_aside(rank)

    def undrain(self, rank: int) -> None:
        """Offer ``rank``'s free resources again (if it is up)."""
        self._drained.discard(rank)
        if rank not in self._down:
            self._offer(rank)

    def set_down(self, rank: int) -> None:
        """``rank`` is lost: offer nothing of it, as if drained, until :meth:`set_up`."""
        self._down.add(rank)
        self._set_aside(rank)

    def set_up(self, rank: int) -> None:
        """``rank`` is back: offer its free resources again (unless it is drained)."""
        self._down.discard(rank)
        if rank not in self._drained:
            self._offer(rank)

    def _set_aside(self, rank: int) -> None:
        if rank in self._aside or rank not in self._free:
            return
        cores, gpus = self._free[rank]
        self._aside[rank] = (cores, gpus)
        self._free[rank] = (_EMPTY, _EMPTY)
        self._count(rank, (0, 0))
        self.free_cores -= len(cores)
        self.free_gpus -= len(gpus)
        self.generation += 1

    def _offer(self, rank: int) -> None:
        aside = self._aside.pop(rank, None)
        if aside is None:
            return
        self._free[rank] = aside
        self._count(rank, (len(aside[0]), len(aside[1])))
        self.free_cores += len(aside[0])
        self.free_gpus += len(aside[1])
        self.generation += 1

    def alloc(
        self,
        jobid: int,
        request: ResourceRequest,
        now: float,
        *,
        avoid: Mapping[int, Holding] | None = None,
    ) -> ResourceSet | None:
        """Allocate ``request`` to ``jobid`` now, or return None if it does not fit yet.

        The result is R valid from ``now`` for the request's duration (no
        expiration without one).  With ``avoid``, resources it names are not
        used (a backfilled job keeps off a reservation).
        """
        if jobid in self._jobs:
            raise ResourceError(f"job {JobID(jobid)} already holds resources")
        if (
            request.nslots * request.cores_per_slot > self.free_cores
            or request.nslots * request.gpus_per_slot > self.free_gpus
        ):
            return None
        if avoid is None:
            chosen = self._select(request, self._free, self._by_fit)
        else:
            view = self._without(avoid)
            if request.nslots * request.cores_per_slot > view.ncores:
                return None
            chosen = self._select(request, view.free, view.order())
        if chosen is None:
            return None
        expiration = 0.0
        if request.duration > 0:
            expiration = now + request.duration
            if expiration <= now:  # a duration too small to move the clock
                expiration = math.nextafter(now, math.inf)
        self._take(jobid, chosen, expiration, damaged=False)
        nslots = request.slots_per_node * len(chosen) if request.nnodes else request.nslots
        return ResourceSet(self._targets_of(chosen), now, expiration, nslots)

    def adopt(self, jobid: int, resources: ResourceSet | None) -> ResourceSet:
        """Mark a running job's R allocated (the scheduler restarted); return what did not fit.

        The part of R outside the pool or already held by another job is
        returned and not taken; ``None`` stands for an R that could not be
        read.  A job that did not fit whole is *damaged*: its later free may
        name resources it never got here.  The part on a rank of the instance
        that has not joined yet is taken as R says (the rank is down until it
        joins): its broker and the job's shell there are still running.
        """
        if jobid in self._jobs:
            raise ResourceError(f"job {JobID(jobid)} already holds resources")
        if resources is None:
            self._take(jobid, {}, 0.0, damaged=True)
            return ResourceSet({})
        taken: dict[int, Holding] = {}
        from_aside: dict[int, Holding] = {}  # on a drained or down rank, or one yet to join
        for rank, target in resources.targets.items():
            if rank not in self._targets and 0 <= rank < self._size:
                # a rank yet to join: held on trust, taken from what it offers once it does
                self._down.add(rank)
                self._aside.setdefault(rank, (_EMPTY, _EMPTY))
                self._hosts.setdefault(rank, target.hostname)
                from_aside[rank] = (target.cores, target.gpus)
                continue
            free = self._aside.get(rank) or self._free.get(rank)
            if free is None:
                continue
            cores, gpus = target.cores & free[0], target.gpus & free[1]
            if not cores and not gpus:
                continue
            if rank in self._aside:
                from_aside[rank] = (cores, gpus)
                self._aside[rank] = (free[0] - cores, free[1] - gpus)
            else:
                taken[rank] = (cores, gpus)
        held = ResourceSet(self._targets_of({**taken, **from_aside}))
        lost = resources.difference(held)
        self._take(jobid, taken, resources.expiration, damaged=bool(lost))
        if from_aside:
            job = self._jobs[jobid]
            job.ranks.update(from_aside)
            job.sizes = _sizes(job.ranks)
        return lost

    def free(self, jobid: int, resources: ResourceSet | None = None, final: bool = True) -> None:
        """Return ``resources`` (all that ``jobid`` holds when None) to the pool.

        ``final`` releases whatever the job still holds and forgets it.  R
        naming resources the job does not hold is a ResourceError and
        changes nothing (unless the job is damaged, see :meth:`adopt`).
        """
        job = self._job(jobid)
        release = job.ranks
        if resources is not None:
            release = {}
            for rank, target in resources.targets.items():
                held = job.ranks.get(rank, (_EMPTY, _EMPTY))
                cores, gpus = target.cores & held[0], target.gpus & held[1]
                missing = len(cores) < len(target.cores) or len(gpus) < len(target.gpus)
                if missing and not job.damaged:
                    raise ResourceError(
                        f"job {JobID(jobid)} does not hold rank {rank}"
                        f" {_describe(target.cores - cores, target.gpus - gpus)}"
                    )
                if cores or gpus:
                    release[rank] = (cores, gpus)
        if final:
            release = job.ranks
        for rank, (cores, gpus) in release.items():
            aside = self._aside.get(rank)
            if aside is not None:
                self._aside[rank] = (aside[0] | cores, aside[1] | gpus)
                continue
            free_cores, free_gpus = self._free[rank]
            ncores, ngpus = self._counts[rank]
            if gpus:
                free_gpus = free_gpus | gpus
                self.free_gpus += len(gpus)
                ngpus += len(gpus)
            self._free[rank] = (free_cores | cores, free_gpus)
            self._count(rank, (ncores + len(cores), ngpus))
            self.free_cores += len(cores)
        if final:
            del self._jobs[jobid]
            if job.expiration:
                self._unexpire(job.expiration, jobid)
        else:
            job.ranks = _minus(job.ranks, release, drop_empty=True)
            job.sizes = _sizes(job.ranks)
        self.generation += 1

    def set_expiration(self, jobid: int, expiration: float) -> None:
        """Change when ``jobid``'s allocation ends (0: never)."""
        job = self._job(jobid)
        if job.expiration:
            self._unexpire(job.expiration, jobid)
        if expiration:
            insort(self._ending, (expiration, jobid))
        job.expiration = expiration
        self.generation += 1

    # --- time ---------------------------------------------------------------------------

    def reservation(self, request: ResourceRequest) -> Reservation | None:
        """The earliest time ``request`` fits, if every job ends at its expiration.

        None when it never would: some resource it needs is held by jobs
        without an expiration.  Only the ending jobs are simulated, in time
        order, so the cost grows with the number of running jobs, not the queue.
        """
        ending = self._ending
        if not ending:
            return None
        jobs = self._jobs
        counts = dict(self._counts)
        # how much of the request each rank could hold: it fits once the total does
        fit = self._fitter(request)
        total = sum(fit(rank, cores, gpus) for cores, gpus, rank in self._counted())
        need = request.nnodes or request.nslots
        drained = self._aside
        for i, (when, jobid) in enumerate(ending):
            for rank, cores, gpus in jobs[jobid].sizes:
                if rank in drained:
                    continue  # what a job frees there is set aside
                have_cores, have_gpus = counts[rank]
                counts[rank] = (have_cores + cores, have_gpus + gpus)
                total += fit(rank, have_cores + cores, have_gpus + gpus)
                total -= fit(rank, have_cores, have_gpus)
            if i + 1 < len(ending) and ending[i + 1][0] == when:
                continue  # release everything ending at the same moment first
            if total >= need:
                released = [jobs[ended].ranks for _, ended in ending[: i + 1]]
                free = _Freed(self._free, released, drained)
                chosen = self._select(request, free, _worst_fit(counts))
                if chosen is not None:
                    return Reservation(when, chosen)
        return None

    # --- internals ------------------------------------------------------------------------

    def _job(self, jobid: int) -> _Held:
        job = self._jobs.get(jobid)
        if job is None:
            raise ResourceError(f"job {JobID(jobid)} holds no resources")
        return job

    def _take(
        self, jobid: int, chosen: dict[int, Holding], expiration: float, *, damaged: bool
    ) -> None:
        for rank, (cores, gpus) in chosen.items():
            free_cores, free_gpus = self._free[rank]
            ncores, ngpus = self._counts[rank]
            if gpus:
                free_gpus = free_gpus - gpus
                self.free_gpus -= len(gpus)
                ngpus -= len(gpus)
            self._free[rank] = (free_cores - cores, free_gpus)
            self._count(rank, (ncores - len(cores), ngpus))
            self.free_cores -= len(cores)
        self._jobs[jobid] = _Held(chosen, expiration, damaged)
        if expiration:
            insort(self._ending, (expiration, jobid))
        self.generation += 1

    def _unexpire(self, expiration: float, jobid: int) -> None:
        ending = self._ending
        del ending[bisect_left(ending, (expiration, jobid))]

    def _targets_of(self, ranks: Mapping[int, Holding]) -> dict[int, Target]:
        hosts = self._hosts
        if len(ranks) == 1:  # the common case, without sorting
            for rank, (cores, gpus) in ranks.items():
                return {rank: Target(hosts[rank], cores, gpus)} if cores or gpus else {}
        return {
            rank: Target(hosts[rank], cores, gpus)
            for rank, (cores, gpus) in sorted(ranks.items())
            if cores or gpus
        }

    def _without(self, avoid: Mapping[int, Holding]) -> _View:
        """The free resources less ``avoid`` (kept until the pool changes)."""
        view = self._avoiding
        if view is None or view.avoid is not avoid or view.generation != self.generation:
            view = self._avoiding = _View(self, avoid)
        return view

    def _counted(self) -> Iterator[FitKey]:
        """(free cores, free GPUs, rank) of every rank that has anything free."""
        for cores, gpus, rank in self._by_fit:
            if not cores and not gpus:
                return  # the rest have nothing free either
            yield -cores, -gpus, rank

    def _count(self, rank: int, counts: Counts) -> None:
        """Record that ``rank`` now has ``counts`` free, keeping the worst-fit order."""
        old = self._counts[rank]
        if old != counts:
            by_fit = self._by_fit
            del by_fit[bisect_left(by_fit, (-old[0], -old[1], rank))]
            insort(by_fit, (-counts[0], -counts[1], rank))
            self._counts[rank] = counts

    def _fitter(self, request: ResourceRequest) -> Callable[[int, int, int], int]:
        """``fit(rank, cores, gpus)``: how many of the request's nodes (or slots) a rank holds."""
        fit = self._fitter_any(request)
        allowed = request.ranks
        if allowed is None:
            return fit
        return lambda rank, cores, gpus: fit(rank, cores, gpus) if rank in allowed else 0

    def _fitter_any(self, request: ResourceRequest) -> Callable[[int, int, int], int]:
        cps, gps = request.cores_per_slot, request.gpus_per_slot
        if not request.nnodes:
            if gps:
                return lambda rank, cores, gpus: min(cores // cps, gpus // gps)
            return lambda rank, cores, gpus: cores // cps
        spn = request.slots_per_node
        need_cores, need_gpus = spn * cps, spn * gps
        if request.exclusive:
            targets = self._targets

            def exclusive(rank: int, cores: int, gpus: int) -> int:
                target = targets[rank]
                whole = cores == len(target.cores) and gpus == len(target.gpus)
                return int(whole and cores >= need_cores and gpus >= need_gpus)

            return exclusive
        return lambda rank, cores, gpus: int(cores >= need_cores and gpus >= need_gpus)

    def _select(
        self, request: ResourceRequest, free: Mapping[int, Holding], order: list[FitKey]
    ) -> dict[int, Holding] | None:
        """Which free resources would satisfy ``request``, trying ranks in ``order``, or None."""
        if request.nnodes:
            return self._select_nodes(request, free, order)
        cps, gps = request.cores_per_slot, request.gpus_per_slot
        left = request.nslots
        allowed = request.ranks
        chosen: dict[int, Holding] = {}
        for _, _, rank in order:
            if allowed is not None and rank not in allowed:
                continue
            cores, gpus = free[rank]
            if len(cores) < cps:
                return None  # the order is by free cores: no rank after this has enough
            fit = len(cores) // cps
            if gps:
                fit = min(fit, len(gpus) // gps)
            take = min(fit, left)
            if take:
                chosen[rank] = (cores.take(take * cps), gpus.take(take * gps) if gps else _EMPTY)
                left -= take
                if not left:
                    return chosen
        return None

    def _select_nodes(
        self, request: ResourceRequest, free: Mapping[int, Holding], order: list[FitKey]
    ) -> dict[int, Holding] | None:
        spn = request.slots_per_node
        cores_needed, gpus_needed = spn * request.cores_per_slot, spn * request.gpus_per_slot
        allowed = request.ranks
        chosen: dict[int, Holding] = {}
        for _, _, rank in order:
            if allowed is not None and rank not in allowed:
                continue
            cores, gpus = free[rank]
            if len(cores) < cores_needed:
                return None  # the order is by free cores: no rank after this has enough
            if len(gpus) < gpus_needed:
                continue
            if request.exclusive:
                target = self._targets[rank]
                if len(cores) < len(target.cores) or len(gpus) < len(target.gpus):
                    continue  # someone holds part of this node
                chosen[rank] = (cores, gpus)
            else:
                chosen[rank] = (cores.take(cores_needed), gpus.take(gpus_needed))
            if len(chosen) == request.nnodes:
                return chosen
        return None


class _Freed(Mapping[int, Holding]):
    """The free resources once some jobs' holdings are back, each rank worked out when read.

    A reservation reads only the ranks it tries, worst fit first: usually a few.
    """

    def __init__(
        self,
        free: dict[int, Holding],
        released: list[dict[int, Holding]],
        drained: Mapping[int, Holding],
    ) -> None:
        self._free = free
        self._released = released
        self._drained = drained
        self._done: dict[int, Holding] = {}

    def __getitem__(self, rank: int) -> Holding:
        have = self._done.get(rank)
        if have is None:
            cores, gpus = self._free[rank]
            if rank in self._drained:
                return cores, gpus
            for ranks in self._released:
                held = ranks.get(rank)
                if held is not None:
                    cores, gpus = cores | held[0], gpus | held[1]
            have = self._done[rank] = (cores, gpus)
        return have

    def __iter__(self) -> Iterator[int]:
        return iter(self._free)

    def __len__(self) -> int:
        return len(self._free)


def _sizes(ranks: Mapping[int, Holding]) -> list[tuple[int, int, int]]:
    return [(rank, len(cores), len(gpus)) for rank, (cores, gpus) in ranks.items()]


class _View:
    """The free resources less a reservation's, as of one generation of the pool.

    Most requests tried against it want more cores than it has, so its worst-fit
    order is only worked out when one does not.
    """

    __slots__ = ("_order", "avoid", "counts", "free", "generation", "ncores")

    def __init__(self, pool: Pool, avoid: Mapping[int, Holding]) -> None:
        self.avoid = avoid
        self.generation = pool.generation
        self.free = dict(pool._free)
        self.counts = dict(pool._counts)
        self.ncores = pool.free_cores
        for rank, (cores, gpus) in avoid.items():
            have = self.free.get(rank)
            if have is not None:
                self.free[rank] = left = (have[0] - cores, have[1] - gpus)
                self.counts[rank] = (len(left[0]), len(left[1]))
                self.ncores -= len(have[0]) - len(left[0])
        self._order: list[FitKey] | None = None

    def order(self) -> list[FitKey]:
        """Ranks worst fit first."""
        if self._order is None:
            self._order = _worst_fit(self.counts)
        return self._order


def _worst_fit(counts: Mapping[int, Counts]) -> list[FitKey]:
    """Ranks, worst fit first: most free cores, then most free GPUs, then lowest rank."""
    keyed = [(-cores, -gpus, rank) for rank, (cores, gpus) in counts.items()]
    keyed.sort()
    return keyed


def _minus(
    have: Mapping[int, Holding], less: Mapping[int, Holding], *, drop_empty: bool = False
) -> dict[int, Holding]:
    out: dict[int, Holding] = {}
    for rank, (cores, gpus) in have.items():
        gone = less.get(rank)
        left = (cores, gpus) if gone is None else (cores - gone[0], gpus - gone[1])
        if left[0] or left[1] or not drop_empty:
            out[rank] = left
    return out


def _describe(cores: IdSet, gpus: IdSet) -> str:
    parts = []
    if cores:
        parts.append(f"core{cores.encode(brackets=True)}")
    if gpus:
        parts.append(f"gpu{gpus.encode(brackets=True)}")
    return ",".join(parts)
