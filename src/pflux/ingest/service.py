"""job-ingest: validate a jobspec, sign J, assign a FLUID, commit, then answer the id.

Submissions arriving in one loop turn are committed together (a ``TurnBatch``,
``pflux.broker.turn``): one ``kvs.commit`` holds every new job's J, jobspec and
``submit`` event, and one ``job-manager.submit`` hands them all over. A client
hears its id only after both, so an id a user holds is a job that survives a
crash (RFC 16, RFC 21).
On a full disk the KVS stores none of them, and each gets ENOSPC.
"""

from __future__ import annotations

import errno
import logging
import time
from typing import Any

from pflux.broker.message import Message, RPCError
from pflux.broker.requests import check_urgency
from pflux.broker.router import Broker, Request, Service, method
from pflux.broker.turn import TurnBatch
from pflux.errors import JobspecError
from pflux.ingest.sign import sign_none
from pflux.protocol.decode import decode
from pflux.protocol.ingest import SubmitRequest
from pflux.spec.eventlog import Event
from pflux.spec.fluid import FluidGenerator
from pflux.spec.jobspec import dumps, validate
from pflux.spec.kvs_keys import job_key
from pflux.spec.states import FLAG_DEBUG, FLAG_WAITABLE

log = logging.getLogger("pflux.job-ingest")

FLAGS_MASK = FLAG_DEBUG | FLAG_WAITABLE


class _Submission:
    __slots__ = ("event", "jobid", "jobspec", "req")

    def __init__(self, req: Request, jobid: int, jobspec: dict[str, Any], event: Event) -> None:
        self.req = req
        self.jobid = jobid
        self.jobspec = jobspec
        self.event = event


class _Batch:
    """One turn's submissions and the KVS operations that store them."""

    __slots__ = ("ops", "subs")

    def __init__(self) -> None:
        self.subs: list[_Submission] = []
        self.ops: list[list[Any]] = []


class IngestService(Service):
    """Accepts jobs; the only writer of J, jobspec and the first event."""

    name = "job-ingest"

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker)
        self.fluid = FluidGenerator(0)
        self._turn: TurnBatch[_Batch] = TurnBatch(broker, _Batch, self._flush)

    async def start(self) -> None:
        info = await self.broker.call("job-manager.getinfo", {})
        self.fluid = FluidGenerator(0, after=info["max_jobid"] or None)

    @method("submit")
    def submit(self, req: Request) -> None:
        request = decode("job-ingest.submit", req.payload, SubmitRequest)
        jobspec = request.jobspec
        try:
            validate(jobspec)
        except JobspecError as exc:
            raise RPCError(errno.EINVAL, f"invalid jobspec: {exc}") from None
        urgency, flags = check_urgency(request.urgency, owner=req.owner), request.flags
        if flags & ~FLAGS_MASK:
            raise RPCError(errno.EINVAL, f"flags: unknown flag bits in {flags!r}")
        if flags & FLAG_WAITABLE and not req.owner:
            # a guest's zombies could pile up unchecked (flux-core's reason)
            raise RPCError(
                errno.EINVAL, "only the instance owner can submit with FLUX_JOB_WAITABLE"
            )
        if req.userid != self.broker.owner:  # never met: the connector lets in the owner only
            raise RPCError(
                errno.EPERM,
                f"uid {req.userid} may not submit: every job runs as the instance owner,"
                f" uid {self.broker.owner}, and is recorded as theirs",
            )
        jobid = int(self.fluid.next())
        event = Event(
            time.time(),
            "submit",
            {"urgency": urgency, "userid": req.userid, "flags": flags, "version": 1},
        )
        canonical = dumps(jobspec)
        key = job_key(jobid)
        batch = self._turn.get()
        batch.ops += (
            ["put", f"{key}.J", sign_none(req.userid, canonical)],
            ["put", f"{key}.jobspec", canonical.decode()],
            ["append", f"{key}.eventlog", event.to_line()],
        )
        batch.subs.append(_Submission(req, jobid, jobspec, event))

    def _flush(self, batch: _Batch) -> None:
        subs = batch.subs
        self.broker.send("kvs.commit", {"ops": batch.ops}, lambda msg: self._committed(subs, msg))

    def _committed(self, batch: list[_Submission], msg: Message) -> None:
        if msg.errnum:
            # a full disk stored none of them, and the instance serves on; anything else is fatal
            if msg.errnum != errno.ENOSPC:
                self.broker.fatal(f"job-ingest: KVS commit failed: {msg.errstr}")
            for sub in batch:
                sub.req.error(msg.errnum, f"job could not be stored: {msg.errstr}")
            return
        jobs = [
            {"id": sub.jobid, "jobspec": sub.jobspec, "event": sub.event.to_json()} for sub in batch
        ]
        self.broker.send("job-manager.submit", {"jobs": jobs}, lambda m: self._accepted(batch, m))

    def _accepted(self, batch: list[_Submission], msg: Message) -> None:
        if msg.errnum:
            for sub in batch:
                sub.req.error(msg.errnum, msg.errstr)
            return
        refused = dict((jobid, text) for jobid, text in msg.payload.get("errors", []))
        for sub in batch:
            error = refused.get(sub.jobid)
            if error is None:
                sub.req.respond({"id": sub.jobid})
            else:
                sub.req.error(errno.EINVAL, error)
