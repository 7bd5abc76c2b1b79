"""flux-core's ``singleton`` dependency: one job at a time per user and job name.

A job with ``singleton`` waits in DEPEND while any other active job of the same
user has the same name (``attributes.system.job.name``, set by ``--job-name``;
a job without one is refused, as flux-core refuses it). Every active job with
an explicit name is counted, whatever its dependencies; once all the active
jobs of a name are singletons still waiting, the first of them to arrive is
released (description ``singleton``). The value is ignored.
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Any

from pflux.errors import RPCError
from pflux.manager.plugins import Plugin
from pflux.spec.jobspec import system_attributes
from pflux.spec.states import State

if TYPE_CHECKING:
    from pflux.manager.job import Ended, Job
    from pflux.spec.eventlog import Event

DESCRIPTION = "singleton"
Key = tuple[int, str]


def _name(job: Job) -> str | None:
    about = system_attributes(job.jobspec).get("job")
    name = about.get("name") if isinstance(about, dict) else None
    return name if isinstance(name, str) else None


class Singleton(Plugin):
    name = "singleton"
    schemes = ("singleton",)
    events = frozenset(("clean",))

    def __init__(self, host: Any) -> None:
        super().__init__(host)
        self.keys: dict[int, Key] = {}  # active named jobs
        self.counts: dict[Key, int] = {}
        self.waiting: dict[Key, list[Job]] = {}  # singletons held, in arrival order

    def _count(self, job: Job) -> None:
        name = _name(job)
        if name is not None:
            key = self.keys[job.id] = (job.userid, name)
            self.counts[key] = self.counts.get(key, 0) + 1

    def validate_dependency(self, job: Job, dependency: dict[str, Any]) -> None:
        if _name(job) is None:
            raise RPCError(errno.EINVAL, "singleton jobs require a job name")

    def validate(self, job: Job) -> None:
        # the last check a job passes at submit (no plugin after this one refuses)
        self._count(job)

    def restarted(self, job: Job) -> None:
        if job.state is not State.NEW:  # a NEW job is validated again, and counted then
            self._count(job)

    def depend(self, job: Job, dependency: dict[str, Any]) -> None:
        if DESCRIPTION in job.satisfied:
            return
        key = self.keys[job.id] if job.id in self.keys else (job.userid, _name(job) or "")
        if DESCRIPTION in job.dependencies:
            # held before a restart: judged once every active job is counted again
            self.waiting.setdefault(key, []).append(job)
            self.host.loop.call_soon(self._release, key)
            return
        if self.counts.get(key, 0) <= 1:  # this job is the only one
            return
        self.host.dependency_add(job, DESCRIPTION)
        self.waiting.setdefault(key, []).append(job)

    def event(self, job: Job | Ended, event: Event) -> None:
        key = self.keys.pop(job.id, None)
        if key is None:
            return
        waiting = self.waiting.get(key)
        if waiting:
            waiting[:] = [held for held in waiting if held.id != job.id]
        count = self.counts[key] - 1
        if count:
            self.counts[key] = count
        else:
            del self.counts[key]
        self._release(key)

    def _release(self, key: Key) -> None:
        """Release the first held singleton if every active job of ``key`` is one."""
        waiting = self.waiting.get(key)
        while waiting and self.counts.get(key, 0) == len(waiting):
            job = waiting.pop(0)
            if job.state is State.DEPEND and DESCRIPTION in job.dependencies:
                self.host.dependency_remove(job, DESCRIPTION)
                break
            # canceled while held: it still counts until it is inactive
        if not waiting:
            self.waiting.pop(key, None)
