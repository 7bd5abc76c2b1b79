"""Rebuilding every job from its eventlog when the instance restarts (RFC 16, RFC 21).

Each eventlog is replayed by ``pflux.spec.replay``, which says what it skips in
the job manager's log; a job whose log does not start with ``submit`` cannot be
rebuilt and is left untouched in the KVS, with an error in the log. ``restore``
puts what the replay found in place: the queues' checkpoint, the tables, the
history, and ``flux-restart`` posted to every active job.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import orjson

from pflux.manager import checkpoint
from pflux.manager.job import Ended, Job
from pflux.manager.submit import validate
from pflux.manager.wait import result_of
from pflux.protocol.kvs import GetRequest, WalkRequest, value_of
from pflux.protocol.manager import WaitReply
from pflux.spec.kvs_keys import job_id_from_key
from pflux.spec.replay import apply_jobspec_updates, events_of, rebuild
from pflux.spec.states import FLAG_WAITABLE, State

if TYPE_CHECKING:
    from pflux.broker.router import Broker
    from pflux.manager.hosts import RestartHost

log = logging.getLogger("pflux.job-manager")


async def restore(host: RestartHost) -> None:
    """Take up every job the KVS holds, as the instance starts."""
    queues, stored_max_jobid = await checkpoint.load(host.broker)
    host.queues.restore(queues)
    host.jobs, host.ended, zombies = await load(host.broker)
    host.waits.restarted(host.jobs, zombies)
    known = max(max(host.jobs, default=0), max(host.ended, default=0))
    host.max_jobid = max(known, stored_max_jobid)  # the largest may have been purged
    valid = [(job.userid, job.id) for job in host.jobs.values() if job.state is not State.NEW]
    host.history.rebuild([*valid, *((job.userid, job.id) for job in host.ended.values())])
    for job in host.jobs.values():
        host.by_state[job.state][job] = None
    active = list(host.jobs.values())
    if host.jobs or host.ended:
        log.info("restart: %d jobs, %d active", len(host.jobs) + len(host.ended), len(active))
    host.retention.rebuilt(host.ended)
    for job in active:
        host.post(job, "flux-restart")
        for plugin in host.plugins:
            plugin.restarted(job)
        if job.state is State.NEW:
            validate(host, job)


async def load(
    broker: Broker,
) -> tuple[dict[int, Job], dict[int, Ended], dict[int, WaitReply]]:
    """Every job in the KVS, replayed: the active ones, with their jobspec (and R if
    held), the inactive ones, reduced to their outcome, and the inactive waitable
    ones' results (zombies again, ``wait.py``)."""
    jobs: dict[int, Job] = {}
    ended: dict[int, Ended] = {}
    zombies: dict[int, WaitReply] = {}
    inactive = State.INACTIVE
    async for payload in broker.stream("kvs.walk", WalkRequest("job", suffix="eventlog")):
        for key, text in payload.get("entries", []):
            jobid = job_id_from_key(key, "eventlog")
            if jobid is None:
                continue
            events = events_of(jobid, text, log.error)
            job = rebuild(Job(jobid), events, log.error)
            if job is None:
                continue
            if job.state is inactive:
                # the count of events is what the journal's digest tells job-list
                ended[jobid] = Ended(job, len(events))
                if job.flags & FLAG_WAITABLE:
                    zombies[jobid] = result_of(jobid, job)
            else:
                jobs[jobid] = job
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
    return jobs, ended, dict(sorted(zombies.items()))


async def _get_json(broker: Broker, key: str) -> Any:
    from pflux.errors import RPCError

    try:
        return orjson.loads(value_of(await broker.call("kvs.get", GetRequest(key))))
    except (RPCError, orjson.JSONDecodeError) as exc:
        log.error("restart: %s: %s", key, exc)
        return None
