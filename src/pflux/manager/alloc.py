"""The job manager's side of the scheduler protocol (RFC 27).

The scheduler says hello (and learns which jobs hold resources), then ready with
a mode; after that every job in SCHED with a non-zero priority has one
``sched.alloc`` in flight ("unlimited"), or the best ``limit`` of them do
("limited"). Responses are matched by job id.

Resources go back with ``sched.free``: the ranks of each ``release`` response
that is not the final one at once, as the R fragment of those ranks with
``final: false`` (once the ``release`` event is committed), and the rest of R
with ``final: true`` when the job is done with it (flux-core frees partially
from its housekeeping the same way).  As in flux-core (since its sched.free
dropped its response, flux-core PR 5786), a free has no response: ``free`` is
posted, the request is sent once it is durable, and the scheduler logs what it
cannot free. With no epilog to run first and the scheduler ready, ``free``
(and ``clean``) join the batch of the job's final ``release``, one transaction
less per job; a crash before the request is sent leaves a job whose eventlog
says its resources are free, which is what the scheduler's hello at restart
goes by.
A job's released ranks are kept in memory only: after a restart the
scheduler is told the job holds all of its R until its final free, which is
safe, if less generous.
"""

from __future__ import annotations

import errno
import logging
from typing import TYPE_CHECKING, Any

from pflux.broker.router import Request
from pflux.errors import IdsetError, ResourceError, RPCError
from pflux.protocol.decode import decode
from pflux.protocol.message import Message
from pflux.protocol.sched import (
    AllocReply,
    AllocRequest,
    AllocResponse,
    CancelRequest,
    FreeRequest,
    PrioritizeRequest,
    ReadyRequest,
)
from pflux.spec.fluid import JobID
from pflux.spec.idset import IdSet
from pflux.spec.resource import ResourceSet
from pflux.spec.states import State

if TYPE_CHECKING:
    from pflux.manager.hosts import AllocHost
    from pflux.manager.job import Job

log = logging.getLogger("pflux.job-manager")

ALLOC_RETRY = 1.0  # seconds before asking again for an allocation a full disk refused


class AllocClient:
    """Sends alloc, cancel, free and prioritize requests; posts what they yield."""

    def __init__(self, manager: AllocHost) -> None:
        self.manager = manager
        self.ready = False
        self.limit = 0  # 0: unlimited
        self.outstanding = 0
        self.waiting: dict[Job, None] = {}  # wanting an alloc while at the limit
        self.released: dict[Job, IdSet] = {}  # ranks freed before the job's final free

    # --- requests from the scheduler ------------------------------------------------

    def hello(self, req: Request) -> None:
        """Stream every job holding resources, then end (the scheduler marks them used)."""
        for job in self.manager.jobs.values():
            if job.has_resources:
                req.respond(
                    {
                        "id": job.id,
                        "priority": job.priority,
                        "userid": job.userid,
                        "t_submit": job.t_submit,
                        "R": job.R,
                    }
                )
        req.end()

    def sched_ready(self, req: Request) -> None:
        ready = decode(req.topic, req.payload, ReadyRequest)
        self.limit = ready.limit if ready.mode == "limited" and ready.limit else 0
        self.ready = True
        count = self.manager.count(State.SCHED)
        req.respond({"count": count})
        self.manager.advance_state(State.SCHED)
        self.manager.quiescence.poke()

    # --- requests to the scheduler --------------------------------------------------------

    def alloc(self, job: Job) -> None:
        if self.limit and self.outstanding >= self.limit:
            self.waiting[job] = None
            return
        job.alloc_pending = True
        job.alloc_canceled = False
        self.outstanding += 1
        if job.debug:
            self.manager.post(job, "debug.alloc-request")
        payload = AllocRequest(job.id, job.priority, job.userid, job.jobspec, job.t_submit)
        self.manager.broker.send(
            "sched.alloc", payload, lambda msg: self._response(job, msg), streaming=True
        )

    def cancel(self, job: Job) -> None:
        self.waiting.pop(job, None)
        if job.alloc_pending:
            job.alloc_canceled = True
            self.manager.broker.send("sched.cancel", CancelRequest(job.id))

    def prioritize(self, jobs: list[Job]) -> None:
        pending = [(job.id, job.priority) for job in jobs if job.alloc_pending]
        if pending:
            self.manager.broker.send("sched.prioritize", PrioritizeRequest(pending))

    def free(self, job: Job) -> None:
        """Free what ``job`` still holds, for good."""
        if job.debug:  # posted without advancing: free is still due until it is posted
            self.manager.events.post(job, "debug.free-request")
        R = job.R  # noqa: N806 (R is the RFC's name)
        released = self.released.pop(job, None)
        if released is not None and R is not None:
            R = _without(R, released)  # noqa: N806
        self.manager.post(job, "free")
        payload = FreeRequest(job.id, R, final=True)
        self.manager.events.after_commit(lambda: self._send_free(payload))

    def _send_free(self, payload: FreeRequest) -> None:
        self.manager.broker.send("sched.free", payload)

    def release(self, job: Job, ranks: str) -> None:
        """The execution service released ``ranks`` of ``job``: free them once that is durable."""
        try:
            ids = IdSet.decode(ranks)
        except IdsetError as exc:
            log.error("job %s: release of ranks %r: %s", JobID(job.id), ranks, exc)
            return
        self.manager.events.after_commit(lambda: self._free_part(job, ids))

    def _free_part(self, job: Job, ranks: IdSet) -> None:
        if job.R is None or not job.has_resources:
            return
        try:
            held = ResourceSet.from_json(job.R)
        except ResourceError as exc:
            log.error("job %s: cannot free part of R: %s", JobID(job.id), exc)
            return
        released = self.released.get(job, IdSet())
        part = {rank: held.targets[rank] for rank in ranks if rank in held.targets}
        part = {rank: target for rank, target in part.items() if rank not in released}
        if len(part) < len(ranks):
            log.error(
                "job %s: release names ranks %s, of which it holds only %s",
                JobID(job.id),
                ranks.encode(),
                IdSet(part).encode() or "none",
            )
        if not part:
            return
        self.released[job] = released | IdSet(part)
        self._send_free(FreeRequest(job.id, ResourceSet(part).to_json(), final=False))

    def forget(self, job: Job) -> None:
        """``job`` no longer wants an allocation (it left SCHED)."""
        self.waiting.pop(job, None)

    # --- responses ------------------------------------------------------------------

    def _done(self, job: Job) -> None:
        job.alloc_pending = False
        job.alloc_canceled = False
        self.outstanding -= 1
        while self.waiting and (not self.limit or self.outstanding < self.limit):
            best = max(self.waiting, key=lambda j: (j.priority, -j.id))
            del self.waiting[best]
            self.manager.advance(best)

    def _response(self, job: Job, msg: Message) -> None:
        if not job.alloc_pending:
            return
        if msg.errnum == errno.ENOSPC:
            # the scheduler could not store R (a full disk) and kept nothing: ask again later
            log.warning("sched.alloc for %d: %s; asking again", job.id, msg.errstr)
            self._done(job)
            self.manager.broker.loop.call_later(ALLOC_RETRY, self.manager.advance, job)
            return
        if msg.errnum:
            log.error(
                "sched.alloc for %d failed: %s; waiting for a new scheduler", job.id, msg.errstr
            )
            self.ready = False
            self._done(job)
            return
        try:
            reply = decode("sched.alloc", msg.payload, AllocReply)
        except RPCError as exc:
            log.error("response for %d: %s", job.id, exc.errstr)
            self._done(job)
            self.manager.raise_exception(job, "alloc", exc.errstr)
            return
        annotations = reply.annotations
        if annotations:
            self.manager.annotate(job, annotations)
        kind = reply.type
        if kind == AllocResponse.ANNOTATE:
            return
        self._done(job)
        if kind == AllocResponse.SUCCESS:
            job.R = reply.R
            context = {"annotations": annotations} if annotations else None
            self.manager.post(job, "alloc", context)
        elif kind == AllocResponse.DENY:
            self.manager.raise_exception(
                job, "alloc", reply.note or "the scheduler refused the request"
            )
        else:  # CANCEL
            self.manager.advance(job)


def _without(R: dict[str, Any], ranks: IdSet) -> dict[str, Any] | Any:  # noqa: N803
    """R less the targets of ``ranks`` (R itself if it cannot be read: the scheduler says why)."""
    try:
        held = ResourceSet.from_json(R)
    except ResourceError:
        return R
    return ResourceSet(
        {rank: target for rank, target in held.targets.items() if rank not in ranks}
    ).to_json()
