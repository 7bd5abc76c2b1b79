"""job-ingest: validate a jobspec, sign J, assign a FLUID, commit, then answer the id.

A guest's request carries J, its jobspec signed by its client under MUNGE
(RFC 15, ``_pfluxcore.sign``): ingest refuses one whose header names anyone
but the requester (EPERM) or that is malformed, and stores it as sent; as
flux-core's, it leaves the proof of the signature to the helper that runs the
job as its submitter, which asks munged (a guest's J proved twice would cost
the site's munged and the broker a round trip more a job, and prove nothing
more: the connection already names the guest). The instance owner may send
the jobspec alone: ingest wraps it in J under ``none``, which only the
owner's own processes believe, at no cost to MUNGE.

Submissions arriving in one loop turn are committed together (a ``TurnBatch``,
``pflux.broker.turn``): one ``kvs.commit`` holds every new job's J, jobspec and
``submit`` event, and one ``job-manager.submit`` hands them all over, each jobspec
as its parsed object, or, past ``KEEP_PARSED``, as its canonical text alone (the
object let go once validated), and its ``submit`` event as the ``Event`` whose line
was committed (the job manager takes it as it is). A client
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
import time
from functools import partial
from typing import Any, ClassVar

import orjson
from _pfluxcore.sign import SignError, parse, wrap
from msgspec import UnsetType

from pflux.broker.config import Declared
from pflux.broker.requests import check_urgency
from pflux.broker.router import Broker, Request, Service, method
from pflux.broker.turn import TurnBatch
from pflux.errors import ConfigError, JobspecError, RPCError, SizeError, SpecError
from pflux.protocol.decode import decode
from pflux.protocol.ingest import SubmitRequest
from pflux.protocol.kvs import CommitRequest
from pflux.protocol.manager import Empty, IngestedJob, SubmitBatch, SubmitReply
from pflux.protocol.message import Message
from pflux.spec.eventlog import Event
from pflux.spec.fluid import FluidGenerator
from pflux.spec.jobspec import dumps, validate
from pflux.spec.kvs_keys import job_key
from pflux.spec.queues import CONFIG_KEYS as QUEUE_KEYS
from pflux.spec.queues import QueueConfig
from pflux.spec.size import parse_size
from pflux.spec.states import FLAG_DEBUG, FLAG_WAITABLE

log = logging.getLogger("pflux.job-ingest")

FLAGS_MASK = FLAG_DEBUG | FLAG_WAITABLE
DEFAULT_MAX_JOBSPEC = 8 << 20  # bytes of a jobspec as JSON
REQUEST_ROOM = 64 << 10  # bytes of a submit request around its jobspec
# bytes of a jobspec above which only its text is kept (the parsed object let go): a
# long one costs the broker its copies, a short one the job manager's parse
KEEP_PARSED = 1 << 20
# characters of a guest's J that go with its job to the job manager and job-exec, which
# then starts the job without reading J from the KVS; a longer one is read there
CARRIED_J = 64 << 10


def max_jobspec_size(conf: object) -> int:
    """``[ingest] max-jobspec-size``: bytes as an integer, or a size such as ``8M``
    (``pflux.spec.size``)."""
    if not isinstance(conf, dict):
        raise ConfigError("ingest", None, f"must be a table, got {conf!r}")
    value = conf.get("max-jobspec-size", DEFAULT_MAX_JOBSPEC)
    try:
        size = parse_size(value)
    except SizeError as exc:
        raise ConfigError("ingest", "max-jobspec-size", str(exc)) from None
    if not 1024 <= size <= 1 << 30:
        raise ConfigError(
            "ingest", "max-jobspec-size", f"must be at least 1K and at most 1G, not {value!r}"
        )
    return size


class _Submission:
    """One accepted jobspec: its canonical text as submitted (J's), the text stored as
    its ``jobspec`` where a queue's defaults changed it, and the parsed object to store
    unless the jobspec is longer than ``KEEP_PARSED`` (then the job manager parses the
    stored text, and a jobspec near the limit is held as its text and J alone)."""

    __slots__ = ("J", "event", "jobid", "parsed", "req", "stored", "text")

    def __init__(
        self,
        req: Request,
        jobid: int,
        text: str,
        *,
        stored: str | None,
        parsed: dict[str, Any] | None,
        event: Event,
        J: str | None,  # noqa: N803 (RFC 15's name)
    ) -> None:
        self.req = req
        self.jobid = jobid
        self.text = text
        self.stored = stored  # None: the same as ``text``
        self.parsed = parsed
        self.event = event
        self.J = J  # as the client signed it; None: signed here, under ``none``


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
        self._turn: TurnBatch[list[_Submission]] = TurnBatch(broker, list, self._flush)

    async def start(self) -> None:
        info = await self.broker.call("job-manager.getinfo", Empty())
        self.fluid = FluidGenerator(0, after=info["max_jobid"] or None)

    @method("submit", guest=True)
    def submit(self, req: Request) -> None:
        request = decode("job-ingest.submit", req.payload, SubmitRequest)
        # as flux-core's: urgency and flags first, then J, then the jobspec
        urgency, flags = check_urgency(request.urgency, owner=req.owner), request.flags
        if flags & ~FLAGS_MASK:
            raise RPCError(errno.EINVAL, f"flags: unknown flag bits in {flags!r}")
        if flags & FLAG_WAITABLE and not req.owner:
            # a guest's zombies could pile up unchecked (flux-core's reason)
            raise RPCError(
                errno.EINVAL, "only the instance owner can submit with FLUX_JOB_WAITABLE"
            )
        sent = request.jobspec
        signed = None if isinstance(request.J, UnsetType) else request.J
        del request  # a long jobspec is let go of as soon as it can be (``_take``)
        if signed is None:
            if not req.owner:
                raise RPCError(errno.EPERM, "only instance owner can use sign-type=none")
            self._take(req, urgency, flags, sent, None)
            return
        self._take(req, urgency, flags, _unsigned(req, signed, sent), signed)

    def _take(
        self, req: Request, urgency: int, flags: int, jobspec: Any, signed: str | None
    ) -> None:
        """Check the jobspec, give it its FLUID and keep it for the turn's commit."""
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
        jobid = int(self.fluid.next())
        event = Event(
            time.time(),
            "submit",
            {"urgency": urgency, "userid": req.userid, "flags": flags, "version": 1},
        )
        # J keeps the jobspec as submitted; ``jobspec`` is stored with a queue's defaults
        stored_text = None if stored is jobspec else dumps(stored).decode()
        parsed: dict[str, Any] | None = stored
        if len(canonical) > KEEP_PARSED:
            # the text alone from here on: the request lets go of the parsed jobspec, and J
            # is encoded from the text at the turn's end, once the request's message is gone
            parsed = jobspec = stored = req.payload = None
        text = canonical.decode()
        del canonical
        self._turn.get().append(
            _Submission(req, jobid, text, stored=stored_text, parsed=parsed, event=event, J=signed)
        )

    def _flush(self, subs: list[_Submission]) -> None:
        """Store one turn's jobs in one commit: J, the jobspec and the first event each."""
        ops: list[list[Any]] = []
        for sub in subs:
            key = job_key(sub.jobid)
            signed = sub.J
            if signed is None:
                signed = wrap(sub.text, mechanism="none", userid=sub.req.userid)
            ops += (
                ["put", f"{key}.J", signed],
                ["put", f"{key}.jobspec", sub.text if sub.stored is None else sub.stored],
                ["append", f"{key}.eventlog", sub.event.to_line()],
            )
        self.broker.send("kvs.commit", CommitRequest(ops), lambda msg: self._committed(subs, msg))

    def _committed(self, batch: list[_Submission], msg: Message) -> None:
        if msg.errnum:
            # a full disk stored none of them, and the instance serves on; anything else is fatal
            if msg.errnum != errno.ENOSPC:
                self.broker.fatal(f"job-ingest: KVS commit failed: {msg.errstr}")
            for sub in batch:
                sub.req.error(msg.errnum, f"job could not be stored: {msg.errstr}")
            return
        jobs = [
            IngestedJob(
                sub.jobid,
                (sub.stored or sub.text) if sub.parsed is None else sub.parsed,
                sub.event,
                _carried(sub),
            )
            for sub in batch
        ]
        for sub in batch:
            sub.text, sub.stored, sub.parsed, sub.J = "", None, None, None  # the job manager's now
        self.broker.send("job-manager.submit", SubmitBatch(jobs), partial(self._accepted, batch))

    def _accepted(self, batch: list[_Submission], msg: Message) -> None:
        if msg.errnum:
            for sub in batch:
                sub.req.error(msg.errnum, msg.errstr)
            return
        refused = dict(decode("job-manager.submit", msg.payload, SubmitReply).errors)
        for sub in batch:
            error = refused.get(sub.jobid)
            if error is None:
                sub.req.respond({"id": sub.jobid})
            else:
                sub.req.error(errno.EINVAL, error)


def _carried(sub: _Submission) -> str | None:
    """The J that goes with a guest's job (``CARRIED_J``); None for the owner's, whose
    jobs run without it, and for a long one."""
    signed = sub.J
    if signed is None or sub.req.owner or len(signed) > CARRIED_J:
        return None
    return signed


def _unsigned(req: Request, signed: str, jobspec: Any) -> dict[str, Any]:
    """The jobspec J carries, once J's header names the requester and J is well formed
    (flux-core's checks and words: EPERM for a signer other than the requester, and for
    ``none`` from a guest). A guest's MUNGE signature is not proved here: the connection
    already names the guest, and the helper that runs the job as its submitter proves it
    (``pflux.imp``), as flux-core's job-ingest leaves it to its IMP."""
    try:
        found = parse(signed)
    except SignError as exc:
        raise RPCError(errno.EINVAL, str(exc)) from None
    if found.userid != req.userid:
        raise RPCError(errno.EPERM, f"signer={found.userid} != requestor={req.userid}")
    if found.mechanism == "none" and not req.owner:
        raise RPCError(errno.EPERM, "only instance owner can use sign-type=none")
    try:
        carried = orjson.loads(found.payload)
    except orjson.JSONDecodeError as exc:
        raise RPCError(errno.EINVAL, f"jobspec: invalid JSON: {exc}") from None
    if type(carried) is not dict:
        raise RPCError(errno.EINVAL, "jobspec: J's payload is not a JSON object")
    if not isinstance(jobspec, UnsetType) and jobspec != carried:
        raise RPCError(errno.EINVAL, "jobspec: not the one J carries")
    return carried
