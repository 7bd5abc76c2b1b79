"""What a user may do to a job's course, beyond its end (flux-core's ``raise.c``,
``kill.c``, ``urgency.c`` and the memo of ``annotate.c``): an exception raised on
every job of a user's, a signal sent to a job's tasks, its urgency changed, a memo
added. Each posts the job's event and answers once it is durable; the job a
request names is found, and its sender checked, by the handler (``service.py``).
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING

from msgspec import UNSET

from pflux.errors import RPCError
from pflux.manager.job import Job
from pflux.spec.fluid import JobID
from pflux.spec.states import State

if TYPE_CHECKING:
    from pflux.broker.router import Request
    from pflux.manager.hosts import InterventionHost
    from pflux.protocol.manager import MemoRequest, RaiseAllRequest


def raise_all(host: InterventionHost, req: Request, request: RaiseAllRequest) -> None:
    """An exception on every active job in ``request.states`` of a user (-1: everyone's,
    the owner only), or their count alone (``dry_run``)."""
    userid = request.userid
    if userid is UNSET:
        userid = req.userid if not req.owner else -1
    if not req.owner and userid != req.userid:
        raise RPCError(errno.EPERM, "guests may only raise exceptions on their own jobs")
    states = request.states
    targets = [
        job
        for state, jobs in host.by_state.items()
        if state & states and state is not State.INACTIVE
        for job in jobs
        if userid in (-1, job.userid)
    ]
    if not request.dry_run:
        for job in targets:
            host.raise_exception(job, request.type, request.note, request.severity, req.userid)
    host.events.after_commit(lambda: req.respond({"count": len(targets)}))


async def kill(host: InterventionHost, req: Request, job: Job, signum: int) -> None:
    """``signum`` to a running job's tasks, through the execution service."""
    # RUN or CLEANUP, as in flux-core: tasks may outlive a fatal exception for a while
    if not job.state & State.RUNNING or not job.start_pending:
        raise RPCError(errno.EINVAL, f"job {JobID(job.id)} is not running")
    try:
        await host.exec.kill(job, signum)
    except RPCError as exc:
        if exc.errnum != errno.ENOENT:  # ENOENT: its tasks have just ended
            raise
        raise RPCError(errno.EINVAL, f"job {JobID(job.id)} is not running") from None
    req.respond({})


def set_urgency(host: InterventionHost, req: Request, job: Job, urgency: int) -> None:
    """A pending job's new urgency; answered with the one it had."""
    if not job.state & (State.PENDING | State.NEW):
        raise RPCError(
            errno.EINVAL,
            f"job {JobID(job.id)}: urgency cannot be changed once resources are allocated",
        )
    old = job.urgency
    host.post(job, "urgency", {"urgency": urgency, "userid": req.userid})
    host.events.after_commit(lambda: req.respond({"old_urgency": old}))


def memo(host: InterventionHost, req: Request, request: MemoRequest) -> None:
    """A memo event (RFC 21), shown as the job's ``user`` annotations; ``volatile``:
    the annotations only, not in the eventlog (lost at a restart), as in flux-core."""
    job = host.lookup(request.id)
    if not isinstance(job, Job):
        raise RPCError(errno.ENOENT, "unknown job id" if job is None else "job is inactive")
    if not req.owner and req.userid != job.userid:
        raise RPCError(errno.EPERM, "guests can only add a memo to their own jobs")
    if request.volatile:

        def annotated() -> None:  # after the job's events posted so far, in the journal
            host.annotate(job, {"user": request.memo})
            req.respond({})

        host.events.after_commit(annotated)
        return
    host.post(job, "memo", request.memo)
    host.events.after_commit(lambda: req.respond({}))
