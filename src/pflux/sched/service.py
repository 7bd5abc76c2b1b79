"""The ``sched`` service: RFC 27's protocol around the pool and the policy.

At start it says hello to the job manager (marking the resources of running
jobs allocated) and ready (``unlimited``: every job in SCHED has its alloc in
flight).  Requests only change the queue or the pool and ask for a
scheduling pass; the passes of one loop turn are coalesced into one (a
``TurnBatch``), and the
R of every job a pass allocates is committed in one KVS transaction before
any of them is answered.

Resources come from ``pflux.sched.inventory``: by default rank 0 is this
host (``broker.attrs["hostname"]``) with this process's CPUs and the
machine's NVIDIA GPUs.  Core and GPU ids in R are 0..N-1; the job shell maps
them onto real devices.  ``[sched] queue-depth`` bounds backfill.

Time comes from ``pflux.sched.clock``: real time, or in a simulation the
simulator's, which it sets with ``sched.sim-time``; a pass then runs only
when the simulator sets the time, and that request is answered once the
pass's allocations are.

In an instance of several brokers (``broker.size`` > 1) the scheduler learns
of the other ranks from ``broker.watch_ranks``: without R in the config, each
rank's resources join the pool when it first says hello (its hostname, cores
and GPUs); with R from the config, a hello only marks its rank up.  Until then,
and once its broker is lost, a rank is down: what it has free is set aside as a
drained rank's is, and a job asking for more nodes than are up waits (for more
than the instance has, it is denied).  A single broker's ranks are all up.

The owner may replace the resources (``sched.reload``, flux's ``flux resource
reload``) with an R while no job holds or waits for any: the pool is made again from
it (ranks the instance lacks only with ``force``, and down), the drains of its ranks
kept. It lasts until the instance restarts, which reads its resources as before.

The owner drains ranks (``sched.drain``, flux's ``flux resource drain``): a
drained rank gets no new job, the jobs there run to their end.  Which ranks
are drained, since when and why, is kept in the KVS (``DRAIN_KEY``) and
read back at start, after the running jobs' resources are marked allocated.
"""

from __future__ import annotations

import errno
import logging
import os
import time
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

import orjson

from pflux.broker.config import ConfigError, Declared
from pflux.broker.router import Broker, Request, Service, method
from pflux.broker.turn import TurnBatch
from pflux.errors import HostlistError, IdsetError, JobspecError, ResourceError, RPCError, SpecError
from pflux.protocol.decode import decode
from pflux.protocol.kvs import CommitRequest, GetRequest, value_of
from pflux.protocol.manager import Empty
from pflux.protocol.message import Message
from pflux.protocol.sched import (
    AllocReply,
    AllocRequest,
    AllocResponse,
    CancelRequest,
    DrainRequest,
    ExpirationRequest,
    FreeRequest,
    PrioritizeRequest,
    ReadyRequest,
    ReloadRequest,
    SimTimeRequest,
)
from pflux.sched import eventlog
from pflux.sched.clock import SimulatedClock, clock_for
from pflux.sched.inventory import RESOURCE_KEYS, inventory
from pflux.sched.policy import DEFAULT_DEPTH, PassResult, PendingJob, Policy
from pflux.sched.pool import Pool, ResourceRequest
from pflux.spec import hostlist
from pflux.spec.fluid import JobID
from pflux.spec.idset import IdSet
from pflux.spec.jobspec import system_attributes
from pflux.spec.kvs_keys import job_key
from pflux.spec.resource import ResourceSet, Target

log = logging.getLogger("pflux.sched")

# flux-core's exception for a running job whose R the restarted scheduler cannot take back
RESTART_EXCEPTION = "scheduler-restart"
RESTART_NOTE = "failed to reallocate R for running job"

# constraints whose ranks the scheduler keeps (a queue's jobs share theirs)
PLACED_KEPT = 1024

# the drained ranks, as {rank: {"timestamp": seconds, "reason": text}}
DRAIN_KEY = "resource.drain"


def queue_depth(config: dict[str, Any]) -> int:
    """How many jobs behind a blocked one each pass considers for backfill."""
    section = config.get("sched", {})
    if not isinstance(section, dict):
        raise ConfigError("sched", None, f"must be a table, got {section!r}")
    depth = section.get("queue-depth", DEFAULT_DEPTH)
    if type(depth) is not int or depth < 0:
        raise ConfigError("sched", "queue-depth", f"must be an integer >= 0, got {depth!r}")
    return depth


def _owner_only(req: Request) -> None:
    if not req.owner:
        raise RPCError(errno.EPERM, f"{req.topic}: only the instance owner may do this")


def _internal_only(req: Request, sender: str = "the job manager") -> None:
    """An owner's request that only another service of the broker sends: an alloc the job
    manager never asked for would hold cores nobody frees."""
    _owner_only(req)
    req.require_internal(sender)


class _PassDue:
    """A turn's requests for a pass: that one is due is all they leave."""

    __slots__ = ()


class _Waiter:
    """An alloc request in the queue; called if its requester goes away."""

    __slots__ = ("jobid", "req", "sched")

    def __init__(self, sched: Scheduler, jobid: int, req: Request) -> None:
        self.sched = sched
        self.jobid = jobid
        self.req = req

    def __call__(self) -> None:
        self.sched._requester_gone(self.jobid)


class Scheduler(Service):
    """RFC 27 scheduler: FIFO within priority, EASY backfill, one pool of ranks."""

    name = "sched"
    config_keys: ClassVar[Declared] = {"sched": ("queue-depth",), "resource": RESOURCE_KEYS}

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker)
        hostname = broker.attrs.get("hostname") or os.uname().nodename
        resources = inventory(broker.config, hostname)
        section = broker.config.get("resource", {})
        self._r_configured = "config" in section or "path" in section
        if broker.size > 1 and not self._r_configured:
            resources = _own_share(broker, resources)
        self.pool = Pool(resources, 0 if self._r_configured else broker.size)
        self._up: set[int] = set(resources.targets)  # the ranks whose broker is up
        self.policy = Policy(self.pool, depth=queue_depth(broker.config))
        self.clock = clock_for(broker.config)
        self._closed = -1  # the last pass's PassResult.closed
        self.ready = False
        # one pass at the end of a turn, however many requests ask for it; in a simulation,
        # at the simulator's next sim-time (``_sim_due``)
        self._passes: TurnBatch[_PassDue] = TurnBatch(broker, _PassDue, self._turn_pass)
        self._sim_due = False
        self._granted: dict[int, Any] = {}  # R as sent for each running job (cheap free)
        self._drains: dict[int, tuple[float, str]] = {}  # drained rank: (since, reason)
        # each constraint's ranks (None: any) or why none, for the pool's ranks of then
        self._placed: dict[bytes, tuple[frozenset[int] | None, str | None]] = {}
        self._placed_for = self.pool.all
        if broker.size > 1:
            self._up = {broker.rank}
            for rank in self.pool.all.targets:
                if rank != broker.rank:
                    self.pool.set_down(rank)
            broker.watch_ranks(self._rank_changed)

    # --- ranks joining and leaving ----------------------------------------------------

    def _rank_changed(self, rank: int, info: dict[str, Any] | None) -> None:
        """A broker said hello (``info``: what it offers) or was lost (None)."""
        if rank == self.broker.rank:
            return  # this broker's resources are known from the start
        if info is None:
            if rank in self._up:
                self._up.discard(rank)
                self.pool.set_down(rank)
                self._post("offline", {"idset": str(rank)})
                # once the tree was told to stop, each rank leaving is as asked
                (log.info if self.broker.ranks_stopping else log.warning)(
                    "rank %d is down: its resources are not allocatable", rank
                )
            return
        known = self.pool.all.targets.get(rank)
        if known is None:
            if self._r_configured:
                log.error("rank %d said hello but the configured R has no such rank", rank)
                return
            target = _target_of(rank, info)
            if target is None:
                return
            self.pool.add(rank, target)
            log.info("rank %d joined: %s", rank, ResourceSet({rank: target}).summary())
        elif info.get("hostname") != known.hostname:
            log.error(
                "rank %d says its host is %r, the configured R says %r; kept the configured R",
                rank,
                info.get("hostname"),
                known.hostname,
            )
        if rank not in self._up:
            self._up.add(rank)
            self.pool.set_up(rank)
            self._post("online", {"idset": str(rank)})
            log.info("rank %d is up", rank)
            if self.ready:
                self._schedule_soon()

    # --- start: hello and ready -------------------------------------------------------

    async def start(self) -> None:
        try:
            async for entry in self.broker.stream("job-manager.sched-hello", Empty()):
                await self._hello(entry)
            await self._load_drains()
            await self._log_restart()
            reply = await self.broker.call("job-manager.sched-ready", ReadyRequest("unlimited"))
        except RPCError as exc:
            log.error("scheduler handshake with the job manager failed: %s", exc)
            return
        self.ready = True
        count = reply.get("count") if isinstance(reply, dict) else None
        log.info(
            "ready: %s; %d running jobs hold %s; %s jobs waiting",
            self.pool.all.summary() or "no resources",
            len(self.pool),
            self.pool.allocated().summary() or "nothing",
            count,
        )

    async def _hello(self, entry: Any) -> None:
        """Mark a running job's resources allocated; a job that no longer fits is killed."""
        jobid = entry.get("id") if isinstance(entry, dict) else None
        if type(jobid) is not int or not 0 <= jobid < 2**64 or jobid in self.pool:
            log.error("sched-hello: ignoring malformed or repeated entry %r", entry)
            return
        doc = entry.get("R")
        if doc is None:
            doc = await self._lookup_r(jobid)
        elif isinstance(doc, str):
            doc = _loads(doc)
        try:
            resources: ResourceSet | None = ResourceSet.from_json(doc)
        except ResourceError as exc:
            log.error("sched-hello: job %s: invalid R: %s", JobID(jobid), exc)
            resources = None
        lost = self.pool.adopt(jobid, resources)
        if resources is not None and not lost:
            self._granted[jobid] = doc
            return
        if lost:
            log.error(
                "sched-hello: job %s: R no longer fits the resource pool (%s is missing"
                " or taken); raising a fatal exception",
                JobID(jobid),
                lost.summary(),
            )
        self.broker.send(
            "job-manager.raise",
            {"id": jobid, "type": RESTART_EXCEPTION, "severity": 0, "note": RESTART_NOTE},
            lambda msg: _log_failure(msg, f"raising an exception on job {JobID(jobid)}"),
        )

    async def _load_drains(self) -> None:
        """Drain again what was drained when the instance stopped."""
        try:
            text = value_of(await self.broker.call("kvs.get", GetRequest(DRAIN_KEY)))
        except RPCError as exc:
            if exc.errnum != errno.ENOENT:
                log.error("cannot read %s: %s", DRAIN_KEY, exc)
            return
        saved = _loads(text)
        if not isinstance(saved, dict):
            log.error("%s: expected an object, ignored", DRAIN_KEY)
            return
        for key, info in saved.items():
            rank = int(key) if key.isdigit() else -1
            if rank not in self._ranks() or not isinstance(info, dict):
                log.error("%s: ignoring entry %r", DRAIN_KEY, key)
                continue
            self._drains[rank] = (float(info.get("timestamp", 0)), str(info.get("reason", "")))
            self.pool.drain(rank)

    async def _log_restart(self) -> None:
        """Post ``restart`` (the ranks, those online, their hosts) and ``resource-define``
        (how R was found) to the resource eventlog, as flux-core's resource module does."""
        ranks = self._ranks()
        restart = {
            "ranks": IdSet(ranks).encode(),
            "online": IdSet(self._up).encode(),
            "nodelist": self._nodelist(ranks),
        }
        method = "configuration" if self._r_configured else "dynamic-discovery"
        ops = [
            eventlog.append("restart", restart),
            eventlog.append("resource-define", {"method": method}),
        ]
        try:
            await self.broker.call("kvs.commit", CommitRequest(ops))
        except RPCError as exc:
            log.error("cannot append to %s: %s", eventlog.KEY, exc)

    def _nodelist(self, ranks: Iterable[int]) -> str:
        """The hostlist of the hosts of ``ranks`` that have joined."""
        targets = self.pool.all.targets
        return hostlist.encode([targets[r].hostname for r in sorted(ranks) if r in targets])

    def _post(self, name: str, context: dict[str, Any]) -> None:
        """Append an event no requester waits for to the resource eventlog."""
        self.broker.send(
            "kvs.commit",
            CommitRequest([eventlog.append(name, context)]),
            lambda msg: _log_failure(msg, f"appending {name} to {eventlog.KEY}"),
        )

    async def _lookup_r(self, jobid: int) -> Any:
        try:
            text = value_of(await self.broker.call("kvs.get", GetRequest(job_key(jobid, "R"))))
        except RPCError as exc:
            log.error("sched-hello: job %s: cannot read R: %s", JobID(jobid), exc)
            return None
        return _loads(text)

    # --- requests -----------------------------------------------------------------

    @method("alloc")
    def alloc(self, req: Request) -> None:
        _internal_only(req)
        if not req.streaming:
            raise RPCError(errno.EPROTO, "sched.alloc: must be a streaming request")
        request = decode(req.topic, req.payload, AllocRequest)
        jobid = request.id
        if jobid in self.policy.queue or jobid in self.pool:
            raise RPCError(
                errno.EEXIST,
                f"sched.alloc: job {JobID(jobid)} already has an alloc pending or resources",
            )
        try:
            wanted = ResourceRequest.from_jobspec(request.jobspec)
        except JobspecError as exc:
            self._deny(req, jobid, f"cannot parse jobspec: {exc}")
            return
        try:
            ranks = self._placeable(request.jobspec)
        except SpecError as exc:
            self._deny(req, jobid, str(exc))
            return
        if ranks is not None:
            wanted = wanted._replace(ranks=ranks)
        note = self.pool.unsatisfiable(wanted)
        if note is not None:
            self._deny(req, jobid, note)
            return
        waiter = _Waiter(self, jobid, req)
        self.policy.queue.add(PendingJob(jobid, request.priority, request.t_submit, wanted, waiter))
        req.on_disconnect(waiter)
        self._schedule_soon()

    def _placeable(self, jobspec: dict[str, Any]) -> frozenset[int] | None:
        """The only ranks the job's RFC 31 constraints (its queue's ``requires`` among them)
        allow, None for any; SpecError if none does. Kept for each constraint until the
        pool's ranks change: a queue's jobs share theirs."""
        system = system_attributes(jobspec)
        if not system.get("constraints"):
            return None
        constraint = system["constraints"]
        if self._placed_for is not self.pool.all or len(self._placed) > PLACED_KEPT:
            self._placed_for, self._placed = self.pool.all, {}
        try:
            key = orjson.dumps(constraint, option=orjson.OPT_SORT_KEYS)
        except orjson.JSONEncodeError:  # an integer too large: the match says what is wrong
            key = b""
        found = self._placed.get(key) if key else None
        if found is None:
            from pflux.spec.constraint import placeable

            try:
                meeting = placeable(constraint, self.pool.all)
                found = (None if meeting is None else frozenset(meeting), None)
            except SpecError as exc:
                found = (None, str(exc))
            if key:
                self._placed[key] = found
        ranks, error = found
        if error is not None:
            raise SpecError(error)
        return ranks

    @method("cancel")
    def cancel(self, req: Request) -> None:
        _internal_only(req)
        jobid = decode(req.topic, req.payload, CancelRequest).id
        job = self.policy.cancel(jobid)
        if job is None:
            return  # RFC 27: no alloc pending, nothing to do
        waiter: _Waiter = job.tag
        waiter.req.forget_disconnect(waiter)
        if job.sent:
            self._annotate(job, dict.fromkeys(job.sent))
        waiter.req.respond(AllocReply(jobid, AllocResponse.CANCEL))
        self._schedule_soon()

    @method("prioritize")
    def prioritize(self, req: Request) -> None:
        _internal_only(req)
        changed = False
        for jobid, value in decode(req.topic, req.payload, PrioritizeRequest).jobs:
            changed |= self.policy.queue.reprioritize(jobid, value)
        if changed:
            self._schedule_soon()

    @method("free")
    def free(self, req: Request) -> None:
        """Take resources back; no response unless asked for (flux-core's sched.free has none),
        so what cannot be freed is logged as well."""
        _internal_only(req)
        try:
            self._free(req)
        except RPCError as exc:
            log.error("%s", exc.errstr)
            raise

    def _free(self, req: Request) -> None:
        request = decode(req.topic, req.payload, FreeRequest)
        jobid, doc, final = request.id, request.R, request.final
        granted = self._granted.get(jobid)
        resources: ResourceSet | None = None
        if granted is None or (doc is not granted and doc != granted):
            try:
                # the last of a partly released job's R may name nothing
                resources = ResourceSet.from_json(doc, allow_empty=final)
            except ResourceError as exc:
                if jobid not in self.pool or not self.pool.damaged(jobid):
                    raise RPCError(
                        errno.EINVAL, f"sched.free: job {JobID(jobid)}: invalid R: {exc}"
                    ) from None
        try:
            self.pool.free(jobid, resources, final)
        except ResourceError as exc:
            raise RPCError(errno.EINVAL, f"sched.free: {exc}") from None
        if final:
            self._granted.pop(jobid, None)
        req.respond({"id": jobid})
        self._schedule_soon()

    @method("expiration")
    def expiration(self, req: Request) -> None:
        _internal_only(req)
        request = decode(req.topic, req.payload, ExpirationRequest)
        jobid, expiration = request.id, request.expiration
        if jobid not in self.pool:
            raise RPCError(errno.ENOENT, f"sched.expiration: job {JobID(jobid)} holds no resources")
        self.pool.set_expiration(jobid, expiration)
        req.respond({})
        self._schedule_soon()

    @method("resource-status", guest=True)
    def resource_status(self, req: Request) -> None:
        """The resource sets; a drained or offline rank is down (with its jobs' part still
        allocated).  ``online``/``offline``: whose broker is up, as flux's resource.status."""
        everything = self.pool.all
        offline = self._ranks() - self._up
        down = {
            rank: everything.targets[rank]
            for rank in sorted(offline | set(self._drains))
            if rank in everything.targets
        }
        draining = [
            rank for rank in self._drains if rank in everything.targets and self.pool.busy(rank)
        ]
        req.respond(
            {
                "all": everything.to_json(),
                "allocated": self.pool.allocated().to_json(),
                "down": ResourceSet(down).to_json(),
                "online": IdSet(self._up).encode(),
                "offline": IdSet(offline).encode(),
                "drained": IdSet(set(self._drains) - set(draining)).encode(),
                "draining": IdSet(draining).encode(),
                "drain": {
                    str(rank): {"timestamp": since, "reason": reason}
                    for rank, (since, reason) in sorted(self._drains.items())
                },
            }
        )

    @method("drain")
    def drain(self, req: Request) -> None:
        """Drain ranks: as flux's resource.drain, EEXIST if one is already (unless ``mode``)."""
        _owner_only(req)
        request = decode(req.topic, req.payload, DrainRequest)
        ranks = self._targets(request.targets)
        if request.mode is None:
            already = [rank for rank in ranks if rank in self._drains]
            if already:
                count = "s" if len(already) > 1 else ""
                raise RPCError(
                    errno.EEXIST, f"rank{count} {IdSet(already).encode()} already drained"
                )
        now = time.time()
        for rank in ranks:
            old = self._drains.get(rank)
            if old is None or request.mode == "force-overwrite":
                self._drains[rank] = (now, request.reason)
            elif request.mode == "overwrite":
                self._drains[rank] = (old[0], request.reason)
            self.pool.drain(rank)
        log.info("drain %s: %s", IdSet(ranks).encode(), request.reason or "(no reason)")
        overwrite = {None: 0, "update": 0, "overwrite": 1, "force-overwrite": 2}[request.mode]
        context = {
            "idset": IdSet(ranks).encode(),
            "nodelist": self._nodelist(ranks),
            "reason": request.reason,
            "overwrite": overwrite,
        }
        self._save_drains(req, eventlog.append("drain", context))

    @method("reload")
    def reload(self, req: Request) -> None:
        """Schedule the resources of another R (module docstring)."""
        _owner_only(req)
        request = decode(req.topic, req.payload, ReloadRequest)
        busy = len(self.pool) + len(self.policy.queue)
        if busy:
            raise RPCError(
                errno.EBUSY,
                f"reload: {busy} job{'s' * (busy > 1)} hold or wait for resources;"
                " reload once none does",
            )
        try:
            resources = ResourceSet.from_json(request.R)
        except ResourceError as exc:
            raise RPCError(errno.EINVAL, f"reload: R: {exc}") from None
        size = self.broker.size
        beyond = [rank for rank in resources.targets if size > 1 and rank >= size]
        if beyond and not request.force:
            raise RPCError(
                errno.EINVAL,
                f"reload: R has ranks {IdSet(beyond).encode()} this instance (size {size})"
                " does not have (-f to keep them, down)",
            )
        pool = Pool(resources, 0)
        up = set(resources.targets) if size == 1 else self._up & set(resources.targets)
        if size == 1:
            self._up = up  # one broker: every rank of its R is its own
        for rank in resources.targets:
            if rank not in up:
                pool.set_down(rank)
        self._drains = {rank: why for rank, why in self._drains.items() if rank in up}
        for rank in self._drains:
            pool.drain(rank)
        self.pool = self.policy.pool = pool
        self._r_configured = True  # a hello now only marks its rank up
        self._placed_for, self._placed = pool.all, {}
        log.info("reload: %s", resources.summary() or "no resources")
        self._post("resource-define", {"method": "reload"})
        req.respond({})
        self._schedule_soon()

    @method("undrain")
    def undrain(self, req: Request) -> None:
        """Undrain ranks: EEXIST naming those not drained (unless ``mode`` is ``update``)."""
        _owner_only(req)
        request = decode(req.topic, req.payload, DrainRequest)
        ranks = self._targets(request.targets)
        missing = [rank for rank in ranks if rank not in self._drains]
        if missing and request.mode is None:
            count = "s" if len(missing) > 1 else ""
            raise RPCError(errno.EEXIST, f"rank{count} {IdSet(missing).encode()} not drained")
        for rank in ranks:
            self._drains.pop(rank, None)
            self.pool.undrain(rank)
        log.info("undrain %s: %s", IdSet(ranks).encode(), request.reason or "(no reason)")
        context = {"idset": IdSet(ranks).encode(), "nodelist": self._nodelist(ranks)}
        self._save_drains(req, eventlog.append("undrain", context))
        self._schedule_soon()

    def _ranks(self) -> set[int]:
        """Every rank of the instance: those in the pool and those yet to join."""
        ranks = set(self.pool.all.targets)
        if not self._r_configured and self.broker.size > 1:
            ranks.update(range(self.broker.size))
        return ranks

    def _targets(self, targets: str) -> list[int]:
        """The ranks ``targets`` names: an idset, or a hostlist of this instance's hosts."""
        known = self._ranks()
        try:
            ranks = sorted(IdSet.decode(targets))
        except IdsetError:
            ranks = self._hosts_ranks(targets)
        if not ranks:
            raise RPCError(errno.EINVAL, "idset is empty")
        if any(rank not in known for rank in ranks):
            raise RPCError(errno.EINVAL, "idset is out of range")
        return ranks

    def _hosts_ranks(self, targets: str) -> list[int]:
        """The ranks of the hosts of the hostlist ``targets``."""
        try:
            hosts = hostlist.decode(targets)
        except HostlistError as exc:
            raise RPCError(errno.EINVAL, f"invalid targets: {exc}") from None
        by_host: dict[str, list[int]] = {}
        for rank, target in self.pool.all.targets.items():
            by_host.setdefault(target.hostname, []).append(rank)
        unknown = [host for host in hosts if host not in by_host]
        if unknown:
            raise RPCError(errno.EINVAL, f"invalid targets: {unknown[0]} is not a host here")
        return sorted({rank for host in hosts for rank in by_host[host]})

    def _save_drains(self, req: Request, event: list[str]) -> None:
        """Store the drained ranks with ``event`` (its eventlog op), then answer ``req``."""
        saved = {
            str(rank): {"timestamp": since, "reason": reason}
            for rank, (since, reason) in sorted(self._drains.items())
        }
        ops = [["put", DRAIN_KEY, orjson.dumps(saved).decode()], event]

        def stored(msg: Message) -> None:
            if msg.errnum:
                req.error(
                    msg.errnum, f"{req.topic}: storing the drained ranks failed: {msg.errstr}"
                )
            else:
                req.respond({})

        self.broker.send("kvs.commit", CommitRequest(ops), stored)

    @method("sim-time")
    def sim_time(self, req: Request) -> None:
        """The simulator sets the time: run the pass due; answer, with the ids it allocated
        and its ``closed`` (``Policy.schedule``), once its allocations are answered."""
        _internal_only(req, "the simulator")
        clock = self.clock
        if not isinstance(clock, SimulatedClock):
            raise RPCError(errno.EINVAL, "sched.sim-time: this instance is not a simulation")
        when = decode(req.topic, req.payload, SimTimeRequest).time
        try:
            clock.set(when)
        except ValueError as exc:
            raise RPCError(errno.EINVAL, f"sched.sim-time: {exc}") from None
        if not self._sim_due:
            req.respond({"allocated": [], "closed": self._closed})
            return
        self._pass(lambda ids: req.respond({"allocated": ids, "closed": self._closed}))

    # --- scheduling passes ------------------------------------------------------------

    def _schedule_soon(self) -> None:
        """Run one pass on the next loop turn, however many requests ask for it.

        In a simulation the pass waits for the simulator's ``sim-time``.
        """
        if self.clock.simulated:
            self._sim_due = True
        else:
            self._passes.get()

    def _turn_pass(self, _: _PassDue) -> None:
        self._pass()

    def _pass(self, answered: Callable[[list[int]], None] | None = None) -> None:
        """Allocate what can start now; ``answered(ids)`` once the allocations are answered."""
        self._sim_due = False
        result = self.policy.schedule(self.clock.now())
        self._closed = result.closed
        for job, changes in result.annotations.items():
            self._annotate(job, changes)
        if result.allocated:
            self._commit(result, answered)
        elif answered is not None:
            answered([])

    def _annotate(self, job: PendingJob, changes: dict[str, Any]) -> None:
        waiter: _Waiter = job.tag
        reply = AllocReply(job.id, AllocResponse.ANNOTATE, annotations={"sched": changes})
        waiter.req.respond(reply)

    def _commit(self, result: PassResult, answered: Callable[[list[int]], None] | None) -> None:
        """Write every allocated job's R in one transaction, then answer them."""
        ops = []
        replies = []
        for job, resources in result.allocated:
            doc, summary = resources.encode()
            ops.append(["put", job_key(job.id, "R"), orjson.dumps(doc).decode()])
            sched = dict.fromkeys(job.sent)  # pending-state annotations no longer apply
            sched["resource_summary"] = summary
            replies.append((job, doc, sched))
            self._granted[job.id] = doc
        self.broker.send(
            "kvs.commit", CommitRequest(ops), lambda msg: self._committed(msg, replies, answered)
        )

    def _committed(
        self,
        msg: Message,
        replies: list[tuple[PendingJob, Any, dict[str, Any]]],
        answered: Callable[[list[int]], None] | None,
    ) -> None:
        if msg.errnum:
            log.error("committing R for %d jobs failed: %s", len(replies), msg.errstr)
        for job, doc, sched in replies:
            waiter: _Waiter = job.tag
            waiter.req.forget_disconnect(waiter)
            if msg.errnum:
                # the job manager takes an error response as the scheduler failing (RFC 27)
                self.pool.free(job.id, None, True)
                self._granted.pop(job.id, None)
                waiter.req.error(msg.errnum, f"sched: storing R failed: {msg.errstr}")
                continue
            reply = AllocReply(job.id, AllocResponse.SUCCESS, doc, {"sched": sched})
            waiter.req.respond(reply)
        if answered is not None:
            answered([] if msg.errnum else [job.id for job, _, _ in replies])

    # --- housekeeping ---------------------------------------------------------------

    def _deny(self, req: Request, jobid: int, note: str) -> None:
        log.debug("job %s denied: %s", JobID(jobid), note)
        req.respond(AllocReply(jobid, AllocResponse.DENY, note=note))

    def _requester_gone(self, jobid: int) -> None:
        """Whoever asked for ``jobid``'s resources disconnected: stop waiting for them."""
        if self.policy.cancel(jobid) is not None:
            log.info("job %s: alloc requester disconnected; dropped", JobID(jobid))
            self._schedule_soon()


def _own_share(broker: Broker, whole: ResourceSet) -> ResourceSet:
    """What this rank offers among several, as its hello says (with ``--test-size``, its
    share of the host alone, the other ranks having the rest), else ``whole``."""
    info = broker.ranks.get(broker.rank)
    target = None if info is None else _target_of(broker.rank, info)
    if target is None:
        return whole
    return ResourceSet({broker.rank: target} if target.cores or target.gpus else {})


def _target_of(rank: int, info: dict[str, Any]) -> Target | None:
    """What a rank's hello says it offers; None (logged) if the hello is malformed."""
    hostname, cores, gpus = info.get("hostname"), info.get("cores"), info.get("gpus", "")
    problem = None
    if not isinstance(hostname, str) or not hostname:
        problem = "hostname must be a non-empty string"
    elif not isinstance(cores, str) or not isinstance(gpus, str):
        problem = "cores and gpus must be idset strings"
    else:
        try:
            return Target(hostname, IdSet.decode(cores), IdSet.decode(gpus))
        except IdsetError as exc:
            problem = str(exc)
    log.error("rank %d: ignoring its hello %r: %s", rank, info, problem)
    return None


def _loads(text: Any) -> Any:
    """Parse R text; None (which R validation rejects) if it is not JSON."""
    try:
        return orjson.loads(text)
    except (orjson.JSONDecodeError, TypeError):
        return None


def _log_failure(msg: Message, what: str) -> None:
    if msg.errnum:
        log.error("%s: %s", what, msg.errstr)
