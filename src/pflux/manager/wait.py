"""``job-manager.wait``: the result of a waitable job, taken once (flux-core's wait.c).

A job submitted with the waitable flag leaves a zombie when it becomes inactive:
its result, kept until one wait takes it. A wait names a job, or none
(``ANY``: the first zombie, else the next waitable job to end that no one waits
for by id). As wait(2) does, a wait that can never be answered is ``ECHILD``: a
job that is not waitable, already waited for, or unknown; and a wait for any job
when there are already as many waits as waitable jobs left. Only the instance
owner may wait, as only the owner may submit waitable jobs (job-ingest).

Waiting is not recorded: at a restart every inactive waitable job in the KVS is
a zombie again, as in flux-core, whose restart replays inactive jobs too.
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING

from pflux.errors import RPCError
from pflux.manager.job import Job
from pflux.protocol.manager import WaitReply
from pflux.spec.fluid import JOBID_ANY
from pflux.spec.results import Outcome
from pflux.spec.states import FLAG_WAITABLE

if TYPE_CHECKING:
    from pflux.broker.router import Request

ANY = JOBID_ANY

NOT_WAITABLE = "job was not submitted with FLUX_JOB_WAITABLE"
UNKNOWN = "invalid job id, or job may be inactive and not waitable"
HAS_WAITER = "job id already has a waiter"
NONE_LEFT = "there are no more waitable jobs"


def result_of(jobid: int, outcome: Outcome) -> WaitReply:
    """The answer to a wait for a job that has ended."""
    return WaitReply(jobid, outcome.success, outcome.error_text())


class Waits:
    """Zombies, the waitable jobs still active, and the waits for them."""

    def __init__(self) -> None:
        self.zombies: dict[int, WaitReply] = {}  # in the order the jobs ended
        self.active: set[int] = set()  # waitable jobs not yet inactive
        # the inactive waitable jobs, waited for or not: zombies again at a restart
        self.inactive: set[int] = set()
        self.by_id: dict[int, Request] = {}  # the one wait for each of these, if any
        self.any: list[Request] = []  # waits for any job, oldest first

    def restarted(self, jobs: dict[int, Job], zombies: dict[int, WaitReply]) -> None:
        """Take the waitable jobs a restart found, active or zombies."""
        self.zombies = zombies
        self.inactive = set(zombies)
        self.active = {jobid for jobid, job in jobs.items() if job.flags & FLAG_WAITABLE}

    def accepted(self, job: Job) -> None:
        """A job was submitted and validated."""
        if job.flags & FLAG_WAITABLE:
            self.active.add(job.id)

    def refused(self, job: Job) -> None:
        """A job found again at a restart was refused (invalidated): it never ends."""
        self.active.discard(job.id)

    def ended(self, job: Job) -> None:
        """The job's end is durable: answer its wait, or the oldest wait for any, or keep it."""
        if job.flags & FLAG_WAITABLE:
            self.inactive.add(job.id)
        if job.id not in self.active:
            return
        self.active.discard(job.id)
        reply = result_of(job.id, job)
        req = self.by_id.pop(job.id, None) or (self.any.pop(0) if self.any else None)
        if req is None:
            self.zombies[job.id] = reply
        else:
            req.respond(reply)

    def purged(self, jobid: int) -> None:
        """The job is purged: a wait for it is for an unknown job from now on."""
        self.zombies.pop(jobid, None)
        self.inactive.discard(jobid)

    def request(self, req: Request, jobid: int, job: Job | None) -> None:
        """A wait for ``jobid`` (or ``ANY``), ``job`` if active: answered now, kept, or
        refused."""
        if not req.owner:
            raise RPCError(errno.EPERM, "only the instance owner may wait for jobs")
        if jobid == ANY:
            if self.zombies:
                req.respond(self.zombies.pop(next(iter(self.zombies))))
                return
            self.any.append(req)
            req.on_disconnect(lambda: self._forget(req))
        elif jobid in self.zombies:
            req.respond(self.zombies.pop(jobid))
            return
        elif job is not None:
            if jobid in self.by_id:
                raise RPCError(errno.ECHILD, HAS_WAITER)
            if jobid not in self.active:
                raise RPCError(errno.ECHILD, NOT_WAITABLE)
            self.by_id[jobid] = req
            req.on_disconnect(lambda: self._forget(req, jobid))
        else:
            raise RPCError(errno.ECHILD, UNKNOWN)
        if len(self.any) + len(self.by_id) > len(self.active) and self.any:
            self.any.pop().error(errno.ECHILD, NONE_LEFT)

    def _forget(self, req: Request, jobid: int = ANY) -> None:
        """The requester went away: its wait no longer counts."""
        if self.by_id.get(jobid) is req:
            del self.by_id[jobid]
        if req in self.any:
            self.any.remove(req)
