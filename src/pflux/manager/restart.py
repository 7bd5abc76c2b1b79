"""Taking up every job the KVS holds when the instance restarts (RFC 16, RFC 21).

An inactive job is read from the snapshot a clean stop left, if it is
current (``snapshot.py``), else from its record (``inactive.py``), in one walk
of the records; the eventlog is replayed, by ``pflux.spec.replay`` (which says what
it skips in the job manager's log), for every job at or after the
checkpoint's ``replay_from`` not found inactive there, and for a job whose record
does not read: the active jobs, and any job that ended before records were
kept. A job whose log does not start with ``submit`` cannot be rebuilt and
is left untouched in the KVS, with an error in the log. ``restore`` puts what
it found in place: the queues' checkpoint, the tables, the history, and
``flux-restart`` posted to every active job; with the restart's first
events it stores the records of replayed inactive jobs that lacked one, and
then ``replay_from`` past them.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

import orjson

from pflux.manager import checkpoint, inactive, snapshot
from pflux.manager.job import Ended, Job
from pflux.manager.submit import validate
from pflux.manager.wait import result_of
from pflux.protocol.kvs import GetRequest, WalkRequest, value_of
from pflux.protocol.manager import WaitReply
from pflux.spec.kvs_keys import job_id_from_key, job_key
from pflux.spec.replay import apply_jobspec_updates, events_of, rebuild
from pflux.spec.states import FLAG_WAITABLE, State

if TYPE_CHECKING:
    from pflux.broker.router import Broker
    from pflux.manager.hosts import RestartHost

log = logging.getLogger("pflux.job-manager")


async def restore(host: RestartHost) -> None:
    """Take up every job the KVS holds, as the instance starts (with no collection, as
    ``load``: the tables it builds from them make no cycle either)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        await _restore(host)
    finally:
        if collecting:
            gc.enable()


async def _restore(host: RestartHost) -> None:
    queues, stored_max_jobid, replay_from = await checkpoint.load(host.broker)
    host.queues.restore(queues)
    stored = await snapshot.load(host.broker)
    found = await load(host.broker, replay_from, stored)
    host.jobs, host.ended = found.jobs, found.ended
    host.waits.restarted(host.jobs, found.zombies)
    known = max(max(host.jobs, default=0), max(host.ended, default=0))
    host.max_jobid = max(known, stored_max_jobid)  # the largest may have been purged
    host.history.rebuild(partial(_known, host))
    for job in host.jobs.values():
        host.by_state[job.state][job] = None
    active = list(host.jobs.values())
    if host.jobs or host.ended:
        log.info(
            "restart: %d jobs, %d active, %d eventlogs replayed; inactive jobs from %s",
            len(host.jobs) + len(host.ended),
            len(active),
            found.replayed,
            "their records" if stored is None else "the snapshot",
        )
    host.retention.rebuilt(host.ended)
    host.replay_mark.value = replay_from
    if found.records:  # replayed inactive jobs: their records, then the mark past them
        host.events.add_ops(found.records)
        mark = checkpoint.ReplayMark.of(host.jobs, host.max_jobid)
        host.replay_mark.value = mark
        host.events.add_ops(checkpoint.ops(host.queues.stored(), host.max_jobid, mark))
    for job in active:
        host.post(job, "flux-restart")
        for plugin in host.plugins:
            plugin.restarted(job)
        if job.state is State.NEW:
            validate(host, job)


def _known(host: RestartHost) -> Iterator[tuple[int, int]]:
    """Every job of the history (``History.rebuild``): the inactive ones, and the active
    ones but those not yet validated (a NEW job joins it as it is)."""
    for job in host.ended.values():
        yield job.userid, job.id
    for active in host.jobs.values():
        if active.state is not State.NEW:
            yield active.userid, active.id


class Found:
    """What ``load`` found in the KVS."""

    __slots__ = ("ended", "jobs", "records", "replayed", "zombies")

    def __init__(self) -> None:
        self.jobs: dict[int, Job] = {}  # active, with their jobspec (and R if held)
        self.ended: dict[int, Ended] = {}  # inactive, reduced to their outcome
        self.zombies: dict[int, WaitReply] = {}  # inactive waitable ones' results (wait.py)
        self.records: list[list[Any]] = []  # KVS operations: records the replay made
        self.replayed = 0  # eventlogs replayed


async def load(
    broker: Broker, replay_from: int = 0, stored: snapshot.InactiveSnapshot | None = None
) -> Found:
    """Every job in the KVS: inactive ones from ``stored`` (a current snapshot) or their
    records, the others replayed from their eventlogs (those from ``replay_from`` on; 0:
    every one).

    No collection meanwhile: a record makes no reference cycle, and each collection
    would look at every job read so far (the instance freezes them once ready)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return await _load(broker, replay_from, stored)
    finally:
        if collecting:
            gc.enable()


async def _load(
    broker: Broker, replay_from: int, stored: snapshot.InactiveSnapshot | None
) -> Found:
    found = Found()
    if stored is None:
        ended, waitable, bad = await inactive.load(broker, log.error)
    else:
        ended, waitable, bad = stored.ended, stored.waitable, []
    walk = WalkRequest("job", suffix="eventlog")
    if replay_from > 0:
        walk = WalkRequest("job", suffix="eventlog", after=job_key(replay_from - 1, "eventlog"))
    async for payload in broker.stream("kvs.walk", walk):
        for key, text in payload.get("entries", []):
            jobid = job_id_from_key(key, "eventlog")
            if jobid is None or jobid in ended:
                continue
            _replay(found, jobid, text)
    for jobid in bad:
        if jobid not in found.ended and jobid not in found.jobs:
            text = await _get_text(broker, job_key(jobid, "eventlog"))
            if text is not None:
                _replay(found, jobid, text)
    for jobid, job in found.ended.items():
        ended[jobid] = job
    found.ended = dict(sorted(ended.items())) if found.ended else ended
    for jobid in waitable:
        found.zombies[jobid] = result_of(jobid, ended[jobid])
    found.zombies = dict(sorted(found.zombies.items()))
    await _read_files(broker, found.jobs)
    return found


async def _read_files(broker: Broker, jobs: dict[int, Job]) -> None:
    """Each active job's jobspec, and R if it holds resources."""
    for job in jobs.values():
        job.jobspec = await _get_json(broker, job.kvs("jobspec"))
        if job.jobspec is not None and job.jobspec_updates:
            apply_jobspec_updates(job.jobspec, job.jobspec_updates)
        if job.has_resources:
            job.R = await _get_json(broker, job.kvs("R"))
            if job.expiration is not None:  # resource-update events
                from pflux.manager.update import with_expiration

                job.R = with_expiration(job.R, job.expiration)
        # a started job is taken over by the execution service, never started again
        # (RFC 32's reattach, flux-core's "started" flag); one in RUN but not started
        # is started, unless the service finds it already running
        job.reattach = job.state is State.RUN and job.started


def _replay(found: Found, jobid: int, text: str) -> None:
    """Rebuild one job from its eventlog into ``found``; an inactive one gets its record."""
    found.replayed += 1
    events = events_of(jobid, text, log.error)
    job = rebuild(Job(jobid), events, log.error)
    if job is None:
        return
    if job.state is State.INACTIVE:
        # the count of events is what the journal's digest tells job-list
        ended = found.ended[jobid] = Ended.from_job(job, len(events))
        if job.flags & FLAG_WAITABLE:
            found.zombies[jobid] = result_of(jobid, job)
        found.records.append(inactive.put(ended, job.flags))
    else:
        found.jobs[jobid] = job


async def _get_text(broker: Broker, key: str) -> str | None:
    from pflux.errors import RPCError

    try:
        return value_of(await broker.call("kvs.get", GetRequest(key)))
    except RPCError as exc:
        log.error("restart: %s: %s", key, exc)
        return None


async def _get_json(broker: Broker, key: str) -> Any:
    from pflux.errors import RPCError

    try:
        return orjson.loads(value_of(await broker.call("kvs.get", GetRequest(key))))
    except (RPCError, orjson.JSONDecodeError) as exc:
        log.error("restart: %s: %s", key, exc)
        return None
