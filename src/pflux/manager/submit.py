"""The submit path: the jobs job-ingest has committed become the job manager's.

Each job gets its submit event and its place in the tables, then is validated
(its queue takes submissions, its RFC 26 dependencies name schemes a plugin
handles, every plugin accepts it) or invalidated and removed, the reason going
back to job-ingest. A valid job's dependencies are added when it reaches DEPEND
(``run_dependencies``). A restart validates the NEW jobs it finds the same way.
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Any

from msgspec import json

from pflux.errors import PfluxError, RPCError
from pflux.manager.job import Job
from pflux.spec.eventlog import Event
from pflux.spec.jobspec import system_attributes
from pflux.spec.kvs_keys import job_key
from pflux.spec.states import apply

if TYPE_CHECKING:
    from pflux.manager.hosts import SubmitHost
    from pflux.protocol.manager import SubmitBatch


def take(host: SubmitHost, batch: SubmitBatch) -> list[tuple[int, str]]:
    """Make each job of ``batch`` the manager's, posted valid or invalid: the
    ``(id, reason)`` of each refused."""
    errors: list[tuple[int, str]] = []
    jobs, by_state, record = host.jobs, host.by_state, host.events.record
    for spec in batch.jobs:
        job = Job(spec.id)
        host.max_jobid = max(host.max_jobid, job.id)
        jobspec = spec.jobspec
        # msgspec reads the text in place (orjson would copy it first)
        job.jobspec = json.decode(jobspec) if type(jobspec) is str else jobspec
        job.J = spec.J
        event = spec.event
        if type(event) is not Event:  # from another process: its RFC 18 object
            event = Event.from_json(event)
        apply(job, event)
        jobs[job.id] = job
        by_state[job.state][job] = None
        record(job, event, 0, commit=False)
        error = validate(host, job)
        if error:
            errors.append((job.id, error))
    return errors


def validate(host: SubmitHost, job: Job) -> str | None:
    """Post validate, or invalidate and remove the job; return why it was refused."""
    error = host.queues.submit_error(job.jobspec or {})
    if error is None:
        try:
            _check_dependencies(host, job)
            for plugin in host.plugins:
                plugin.validate(job)
        except PfluxError as exc:
            error = str(exc)
    if error is None:
        host.post(job, "validate")
        host.waits.accepted(job)
        host.history.add(job.userid, job.id)
        return None
    host.waits.refused(job)
    host.post(job, "invalidate")
    host.events.add_ops([["unlink", job_key(job.id), None]])
    del host.jobs[job.id]
    return error


def _check_dependencies(host: SubmitHost, job: Job) -> None:
    for dependency in dependencies_of(job):
        plugin = host.schemes.get(dependency["scheme"])
        if plugin is None:
            raise RPCError(
                errno.EINVAL, f'dependency scheme "{dependency["scheme"]}" not supported'
            )
        plugin.validate_dependency(job, dependency)


def run_dependencies(host: SubmitHost, job: Job) -> None:
    """Add ``job``'s dependencies (it entered DEPEND), each by its scheme's plugin."""
    # no advancing this job until every dependency is added: one satisfied at once
    # must not let it post depend while the rest are still to come
    host.depending.add(job)
    try:
        for dependency in dependencies_of(job):
            host.schemes[dependency["scheme"]].depend(job, dependency)
    finally:
        host.depending.discard(job)
    job.depend_checked = True
    host.advance(job)


def dependencies_of(job: Job) -> list[dict[str, Any]]:
    """The RFC 26 dependencies in a job's jobspec (``attributes.system.dependencies``)."""
    deps: list[dict[str, Any]] = system_attributes(job.jobspec).get("dependencies", [])
    return deps
