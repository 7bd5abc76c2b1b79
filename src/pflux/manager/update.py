"""Jobspec updates (``job-manager.update``, ``pflux update``): what may change, and when.

As in flux-core (``job-manager/update.c`` and its ``update-duration`` plugin),
an update names period-delimited jobspec keys under ``attributes``,
``resources`` or ``tasks``, and a key is updated only where something claims
it: here ``attributes.system.duration`` and, for a pending job,
``attributes.system.queue`` (flux-core's queue plugin: ``queue_update``; with no
named queue, any name is an invalid queue). A pending job takes the update if
its jobspec stays valid, as a ``jobspec-update`` event. A running job (RUN or CLEANUP) takes
the duration from the instance owner alone: its
new expiration is R's ``starttime`` plus the duration (0: unlimited), which
the scheduler must accept (``sched.expiration``) before the job gets a
``jobspec-update`` and a ``resource-update {expiration}`` (RFC 21); the
execution service is then told, so that its timer fires at the new time.
"""

from __future__ import annotations

import copy
import errno
import math
import time
from typing import TYPE_CHECKING, Any, Final

from pflux.errors import RPCError
from pflux.protocol.sched import ExpirationRequest
from pflux.spec.fluid import JobID
from pflux.spec.jobspec import system_attributes
from pflux.spec.replay import apply_jobspec_updates
from pflux.spec.states import State

if TYPE_CHECKING:
    from pflux.broker.router import Request
    from pflux.manager.hosts import UpdateHost
    from pflux.manager.job import Job
    from pflux.manager.queues import Queues
    from pflux.spec.queues import QueueConfig

DURATION: Final = "attributes.system.duration"
QUEUE: Final = "attributes.system.queue"
_TOP: Final = ("attributes", "resources", "tasks")


def check_updates(updates: dict[str, Any]) -> dict[str, Any]:
    """The updates of a request (a non-empty object, as its type checked), if each key may
    be updated and the duration is one; RPCError naming the bad key otherwise."""
    for key in updates:
        if not any(key == top or key.startswith(top + ".") for top in _TOP):
            raise RPCError(
                errno.EINVAL,
                f"updates: {key!r}: only attributes, resources and tasks keys can be updated",
            )
    if DURATION in updates:
        value = updates[DURATION]
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not 0 <= value < math.inf
        ):
            raise RPCError(
                errno.EINVAL, f"{DURATION}: must be a number of seconds >= 0, not {value!r}"
            )
    return updates


def check_supported(updates: dict[str, Any], *, running: bool, named: bool) -> None:
    """RPCError (flux-core's words) for the first key nothing here updates (``named``:
    whether queues are configured, so that a queue may be updated)."""
    for key, value in updates.items():
        if key == QUEUE:
            if running:
                raise RPCError(errno.EINVAL, "update of queue for running job not supported")
            if not named:
                raise RPCError(errno.EINVAL, f"'{value}' is not a valid queue")
            continue
        if key != DURATION:
            raise RPCError(errno.EINVAL, f"update of {key} not supported")


def queue_update(
    job: Job, updates: dict[str, Any], queues: Queues, config: QueueConfig
) -> dict[str, Any]:
    """A pending job's queue update, with the new queue's constraints in place of the old
    queue's (flux-core's ``queue_update_cb``); RPCError, its words, if it may not move."""
    name = updates[QUEUE]
    system = system_attributes(job.jobspec)
    current = system.get("queue")
    if not isinstance(name, str):
        raise RPCError(errno.EINVAL, f"{QUEUE}: must be a queue name, not {name!r}")
    if current == name:
        raise RPCError(errno.EINVAL, f"job queue is already set to {name}")
    if not queues.lookup(name).enable:
        raise RPCError(errno.EINVAL, f"queue {name} is currently disabled")
    old = config.queues.get(current) if isinstance(current, str) else None
    expected = {"properties": list(old.requires)} if old is not None and old.requires else {}
    if (system.get("constraints") or {}) != expected:
        raise RPCError(
            errno.EINVAL,
            f"job appears to have non-queue constraints, unable to update queue to {name}",
        )
    requires = config.queues[name].requires
    constraints = {"properties": list(requires)} if requires else {}
    return {**updates, "attributes.system.constraints": constraints}


def running_expiration(job: Job, updates: dict[str, Any], *, owner: bool, now: float) -> float:
    """The expiration a running job's duration update asks for (0: none); RPCError if not
    allowed."""
    if not owner:
        raise RPCError(
            errno.EPERM, "duration update of running job requires instance owner privileges"
        )
    duration = float(updates[DURATION])
    if duration == 0:
        return 0.0
    execution = job.R.get("execution") if isinstance(job.R, dict) else None
    starttime = execution.get("starttime") if isinstance(execution, dict) else None
    if isinstance(starttime, bool) or not isinstance(starttime, int | float) or starttime <= 0:
        raise RPCError(errno.EINVAL, "unable to get job starttime")
    expiration = starttime + duration
    if expiration <= now:
        raise RPCError(errno.EINVAL, "requested duration places job expiration in the past")
    return float(expiration)


def with_expiration(R: dict[str, Any] | None, expiration: float) -> dict[str, Any] | None:  # noqa: N803
    """A copy of R with a new expiration (R may be shared: never changed in place)."""
    if not isinstance(R, dict):
        return R
    execution = R.get("execution")
    return {
        **R,
        "execution": {
            **(execution if isinstance(execution, dict) else {}),
            "expiration": expiration,
        },
    }


async def update_job(host: UpdateHost, req: Request, job: Job, updates: dict[str, Any]) -> None:
    """Apply ``updates`` (``check_updates``'s) to an active ``job`` and answer ``req`` once
    the events are durable: a pending job's jobspec, or a running job's duration."""
    pending = bool(job.state & (State.PENDING | State.NEW))
    check_supported(updates, running=not pending, named=bool(host.queues.named))
    if pending and QUEUE in updates:
        updates = queue_update(job, updates, host.queues, host.queue_config)
    if pending:
        _update_pending(host, req, job, updates)
        return
    expiration = running_expiration(job, updates, owner=req.owner, now=time.time())
    try:
        await host.broker.call("sched.expiration", ExpirationRequest(job.id, expiration))
    except RPCError as exc:
        if exc.errnum != errno.ENOSYS:
            raise RPCError(
                exc.errnum, f"scheduler refused expiration update: {exc.errstr}"
            ) from None
    if not job.state & State.RUNNING:  # it ended while the scheduler was asked
        raise RPCError(errno.EINVAL, f"job {JobID(job.id)} is inactive")
    job.jobspec = updated(job.jobspec or {}, updates)
    job.R = with_expiration(job.R, expiration)
    host.post(job, "jobspec-update", updates)
    host.post(job, "resource-update", {"expiration": expiration})

    def committed() -> None:
        req.respond({})
        host.exec.expiration(job, expiration)

    host.events.after_commit(committed)


def _update_pending(host: UpdateHost, req: Request, job: Job, updates: dict[str, Any]) -> None:
    candidate = updated(job.jobspec or {}, updates)
    from pflux.spec.jobspec import validate

    validate(candidate)
    job.jobspec = candidate
    host.post(job, "jobspec-update", updates)
    if job.alloc_pending:
        host.alloc.cancel(job)  # the scheduler must see the new jobspec
    host.events.after_commit(lambda: req.respond({}))


def updated(jobspec: dict[str, Any], updates: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``jobspec`` with ``updates`` applied (the job's may be shared)."""
    candidate = copy.deepcopy(jobspec)
    apply_jobspec_updates(candidate, updates)
    return candidate
