"""Rebuilding every job from its eventlog when the instance restarts (RFC 16, RFC 21).

Replay is the same ``apply`` the live manager uses, so the state it yields is the
state the job was in. A damaged eventlog loses as little as possible: a line that
does not parse, or an event illegal where it stands, is logged and skipped, and
the rest is replayed; a job whose log does not start with ``submit`` cannot be
rebuilt and is left untouched in the KVS, with an error in the log.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import orjson

from pflux.errors import EventlogError
from pflux.kvs.keys import job_id_from_key
from pflux.manager.job import FLAG_WAITABLE, Ended, Job
from pflux.manager.states import InvalidTransition, State, apply
from pflux.manager.wait import result_of
from pflux.spec.eventlog import Event, parse

if TYPE_CHECKING:
    from pflux.broker.router import Broker

log = logging.getLogger("pflux.job-manager")


def replay(jobid: int, text: str) -> Job | None:
    """The job an eventlog describes, or None if it cannot be rebuilt."""
    return rebuild(jobid, events_of(jobid, text))


def events_of(jobid: int, text: str) -> list[Event]:
    """The events of an eventlog; a damaged one loses only its bad lines."""
    try:
        return parse(text)
    except EventlogError:
        return _salvage(jobid, text)


def rebuild(jobid: int, events: list[Event]) -> Job | None:
    """The job these events make, each applied in turn, or None if it cannot be rebuilt."""
    job = Job(jobid)
    for event in events:
        try:
            apply(job, event)
        except InvalidTransition as exc:
            if not job.history:
                log.error("job %d cannot be rebuilt: %s", jobid, exc)
                return None
            log.error("restart: skipping an event: %s", exc)
    if not job.history:
        log.error("job %d has an empty eventlog; not rebuilt", jobid)
        return None
    return job


def _salvage(jobid: int, text: str) -> list[Event]:
    events = []
    for lineno, line in enumerate(text.splitlines(), 1):
        try:
            events.append(Event.from_line(line))
        except EventlogError as exc:
            log.error("job %d: eventlog line %d skipped: %s", jobid, lineno, exc)
    return events


def apply_jobspec_updates(jobspec: dict[str, Any], updates: dict[str, Any]) -> None:
    """Set each period-delimited key of a jobspec-update in the jobspec (RFC 21); a memo's
    keys nest the same way."""
    for path, value in updates.items():
        node = jobspec
        *parents, leaf = path.split(".")
        for part in parents:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[leaf] = value


async def load(
    broker: Broker,
) -> tuple[dict[int, Job], dict[int, Ended], dict[int, dict[str, Any]]]:
    """Every job in the KVS, replayed: the active ones, with their jobspec (and R if
    held), the inactive ones, reduced to their outcome, and the inactive waitable
    ones' results (zombies again, ``wait.py``)."""
    jobs: dict[int, Job] = {}
    ended: dict[int, Ended] = {}
    zombies: dict[int, dict[str, Any]] = {}
    inactive = State.INACTIVE
    async for payload in broker.stream("kvs.walk", {"key": "job", "suffix": "eventlog"}):
        for key, text in payload.get("entries", []):
            jobid = job_id_from_key(key, "eventlog")
            if jobid is None:
                continue
            events = events_of(jobid, text)
            job = rebuild(jobid, events)
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
    from pflux.broker.message import RPCError

    try:
        reply = await broker.call("kvs.get", {"key": key})
        return orjson.loads(reply["value"])
    except (RPCError, orjson.JSONDecodeError, KeyError, TypeError) as exc:
        log.error("restart: %s: %s", key, exc)
        return None
