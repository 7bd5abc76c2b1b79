"""job-ingest: validate a jobspec, sign J, assign a FLUID, commit, then answer the id.

Submissions arriving in one loop turn are committed together (a ``TurnBatch``,
``pflux.broker.turn``): one ``kvs.commit`` holds every new job's J, jobspec and
``submit`` event, and one ``job-manager.submit`` hands them all over. A client
hears its id only after both, so an id a user holds is a job that survives a
crash (RFC 16, RFC 21).
On a full disk the KVS stores none of them, and each gets ENOSPC.

A jobspec longer than ``[ingest] max-jobspec-size`` (8M by default) is refused
with its size and the limit; the connector refuses any longer request before
holding it (``Broker.max_request``), so one job cannot grow the broker by more
than a few times the limit.

With named queues or a job policy configured (``pflux.spec.queues``), the
jobspec stored is the one submitted with its queue's defaults and constraints
filled in (flux-core's frobnicator); J keeps the one submitted.
"""

from __future__ import annotations

import errno
import logging
import re
import time
from typing import Any, ClassVar

from pflux.broker.message import Message, RPCError
from pflux.broker.requests import check_urgency
from pflux.broker.router import Broker, Request, Service, method
from pflux.broker.turn import TurnBatch
from pflux.config import Declared
from pflux.errors import ConfigError, JobspecError, SpecError
from pflux.ingest.sign import sign_none
from pflux.protocol.decode import decode
from pflux.protocol.ingest import SubmitRequest
from pflux.spec.eventlog import Event
from pflux.spec.fluid import FluidGenerator
from pflux.spec.jobspec import dumps, validate
from pflux.spec.kvs_keys import job_key
from pflux.spec.queues import CONFIG_KEYS as QUEUE_KEYS
from pflux.spec.queues import QueueConfig
from pflux.spec.states import FLAG_DEBUG, FLAG_WAITABLE

log = logging.getLogger("pflux.job-ingest")

FLAGS_MASK = FLAG_DEBUG | FLAG_WAITABLE
DEFAULT_MAX_JOBSPEC = 8 << 20  # bytes of a jobspec as JSON
REQUEST_ROOM = 64 << 10  # bytes of a submit request around its jobspec
_SIZE = re.compile(r"([0-9]+)([KMG]?)")
_SCALE = {"": 0, "K": 10, "M": 20, "G": 30}


def max_jobspec_size(conf: object) -> int:
    """``[ingest] max-jobspec-size``: bytes as an integer, or a size such as ``8M``."""
    if not isinstance(conf, dict):
        raise ConfigError("ingest", None, f"must be a table, got {conf!r}")
    value = conf.get("max-jobspec-size", DEFAULT_MAX_JOBSPEC)
    match = _SIZE.fullmatch(value) if isinstance(value, str) else None
    if match is not None:
        size = int(match[1]) << _SCALE[match[2]]
    elif isinstance(value, int) and not isinstance(value, bool):
        size = value
    else:
        raise ConfigError(
            "ingest",
            "max-jobspec-size",
            f"must be a size such as 1048576, 512K or 8M, not {value!r}",
        )
    if not 1024 <= size <= 1 << 30:
        raise ConfigError(
            "ingest", "max-jobspec-size", f"must be at least 1K and at most 1G, not {value!r}"
        )
    return size


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
    config_keys: ClassVar[Declared] = {"ingest": ("max-jobspec-size",), **QUEUE_KEYS}

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker)
        self.max_jobspec = max_jobspec_size(broker.config.get("ingest", {}))
        broker.max_request = self.max_jobspec + REQUEST_ROOM
        queues = QueueConfig.from_config(broker.config)  # a bad [queues] table stops start-up
        self.queues = queues if queues.active else None
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
            canonical = dumps(jobspec)
            if len(canonical) > self.max_jobspec:
                raise RPCError(
                    errno.EINVAL,
                    f"jobspec is too large: {len(canonical)} bytes, more than the limit of"
                    f" {self.max_jobspec} ([ingest] max-jobspec-size)",
                )
            validate(jobspec)
        except JobspecError as exc:
            raise RPCError(errno.EINVAL, f"invalid jobspec: {exc}") from None
        stored = jobspec
        if self.queues is not None:
            try:
                stored = self.queues.frob(jobspec)
                self.queues.check_limits(stored)
            except SpecError as exc:
                raise RPCError(errno.EINVAL, str(exc)) from None
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
        key = job_key(jobid)
        batch = self._turn.get()
        # the text alone from here on: J is encoded from it, and both are stored
        text = canonical.decode()
        del canonical
        batch.ops += (
            ["put", f"{key}.J", sign_none(req.userid, text)],
            ["put", f"{key}.jobspec", text if stored is jobspec else dumps(stored).decode()],
            ["append", f"{key}.eventlog", event.to_line()],
        )
        batch.subs.append(_Submission(req, jobid, stored, event))

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
