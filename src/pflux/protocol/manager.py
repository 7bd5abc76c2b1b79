"""The job manager's requests, from clients and from other services, as types.

Each handler decodes its request first; a malformed one (not an object, a
field missing or of the wrong type) is EPROTO naming the field, a value out
of its range EINVAL, as ``decode`` maps them. What a type cannot state stays
in the handler with EINVAL or EPERM: a guest's urgency above the default,
an update's keys, a job that is not in the state the request needs.
``job-manager.sched-ready`` is RFC 27's (``pflux.protocol.sched``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Final, Literal

from msgspec import UNSET, Meta, Struct, UnsetType

from pflux.protocol.decode import invalid
from pflux.protocol.exec import Severity
from pflux.protocol.ingest import Urgency
from pflux.protocol.sched import MAX_JOBID, JobId
from pflux.spec.eventlog import Event
from pflux.spec.states import State

Signum = Annotated[int, Meta(ge=1, le=64)]
HISTORY_MAX: Final = 1000  # jobs one journal-history request may name
HELD_SUM_MASK: Final = (1 << 63) - 1  # an int64, as msgspec bounds one
HeldSum = Annotated[int, Meta(ge=0, le=HELD_SUM_MASK)]
PURGE_BATCH_MAX: Final = 100  # jobs one purge request may remove (flux-core's)
_ACTIVE: Final = int(State.ACTIVE | State.NEW)


def _check_id(jobid: int, field: str = "id") -> None:
    if jobid > MAX_JOBID:
        raise invalid(field, f"expected `int` <= {MAX_JOBID}")


def _check_object(value: Any, field: str) -> None:
    if type(value) is not dict:
        raise invalid(field, "expected `object`")


def _check_word(value: str, field: str) -> None:
    if not value or any(c.isspace() for c in value):
        raise invalid(field, "expected a word (non-empty, no spaces)")


class Empty(Struct, frozen=True):
    """A request whose payload is an object with nothing the job manager reads."""


class JobIdRequest(Struct, frozen=True):
    """``result``, ``wait``: one job id (``wait``: FLUX_JOBID_ANY for any job)."""

    id: JobId

    def __post_init__(self) -> None:
        _check_id(self.id)


class IngestedJob(Struct, frozen=True, omit_defaults=True):
    """One job of ``submit``: committed by job-ingest with its first event."""

    id: JobId
    jobspec: Any  # valid as job-ingest checked it: an object, or a long one's JSON text
    # the ``submit`` event: the ``Event`` job-ingest made (in this process), or, from
    # another process, its RFC 18 object (an ``Event`` is one as JSON)
    event: Any
    # a guest's J as stored, which job-exec needs to start the job (RFC 15): carried up to
    # job-ingest's ``CARRIED_J`` characters, to spare a KVS read at its start; else None
    J: str | None = None

    def __post_init__(self) -> None:
        _check_id(self.id)
        if type(self.jobspec) is not str:
            _check_object(self.jobspec, "jobspec")
        if type(self.event) is not Event:
            _check_object(self.event, "event")


class SubmitBatch(Struct, frozen=True):
    """``submit`` (job-ingest only): the jobs one ``kvs.commit`` stored."""

    jobs: list[IngestedJob]


class SubmitReply(Struct, frozen=True):
    """``submit``'s answer: the jobs refused (a plugin's or a queue's reason), as
    ``[id, text]`` pairs; the others are accepted."""

    errors: list[tuple[JobId, str]] = []


class WaitReply(Struct, frozen=True):
    """``wait`` and ``result``'s answer: how an ended job ended (``errstr`` empty on success)."""

    id: JobId
    success: bool
    errstr: str


class RaiseRequest(Struct, frozen=True):
    """``raise``: an exception on one job (severity 0 is fatal)."""

    id: JobId
    type: str = "cancel"
    severity: Severity = 0
    note: str = ""

    def __post_init__(self) -> None:
        _check_id(self.id)
        _check_word(self.type, "type")


class RaiseAllRequest(Struct, frozen=True):
    """``raiseall``: an exception on every job in ``states`` of ``userid`` (-1: anyone's;
    left out: the requester's, or anyone's for the owner); ``dry_run`` only counts them."""

    type: str = "cancel"
    severity: Severity = 0
    note: str = ""
    userid: Annotated[int, Meta(ge=-1)] | UnsetType = UNSET
    states: Annotated[int, Meta(ge=0)] = _ACTIVE
    dry_run: bool = False

    def __post_init__(self) -> None:
        _check_word(self.type, "type")


class JobKillRequest(Struct, frozen=True):
    """``kill``: send a signal to a running job's tasks."""

    id: JobId
    signum: Signum = 15

    def __post_init__(self) -> None:
        _check_id(self.id)


class UrgencyRequest(Struct, frozen=True):
    """``urgency``: a pending job's new urgency (above the default: the owner only)."""

    id: JobId
    urgency: Urgency

    def __post_init__(self) -> None:
        _check_id(self.id)


class MemoRequest(Struct, frozen=True):
    """``memo``: keys for the job's ``user`` annotations; ``volatile``: not in the eventlog."""

    id: JobId
    memo: Any  # a non-empty object
    volatile: bool = False

    def __post_init__(self) -> None:
        _check_id(self.id)
        _check_object(self.memo, "memo")
        if not self.memo:
            raise invalid("memo", "expected `object` of length >= 1")


class SetFlagsRequest(Struct, frozen=True):
    """``set-flags``: RFC 21's flags by name."""

    id: JobId
    flags: Annotated[list[Literal["debug", "waitable"]], Meta(min_length=1)]

    def __post_init__(self) -> None:
        _check_id(self.id)


class UpdateRequest(Struct, frozen=True):
    """``update``: jobspec keys (period-delimited) and their new values."""

    id: JobId
    updates: Any  # a non-empty object; its keys are the handler's check (update.py)

    def __post_init__(self) -> None:
        _check_id(self.id)
        _check_object(self.updates, "updates")
        if not self.updates:
            raise invalid("updates", "expected `object` of length >= 1")


class HistoryRequest(Struct, frozen=True):
    """``history.get``: a Python-style slice of the requester's job ids, as ``[:1]``."""

    slice: str


class QueueStatusRequest(Struct, frozen=True):
    """``queue-status``: ``name`` a named queue (flux-core's; pflux's one queue has none)."""

    name: str | None = None


class QueueEnableRequest(Struct, frozen=True):
    """``queue-enable`` (the owner only): accept submissions, or refuse them with a reason;
    ``name`` a named queue, ``all`` every queue (flux-core's fields)."""

    enable: bool = True
    reason: str = ""
    name: str | None = None
    all: bool = False


class QueueStartRequest(Struct, frozen=True):
    """``queue-start`` (the owner only): allocate or not; ``nocheckpoint``: a stop that a
    restart does not find."""

    start: bool = True
    reason: str = ""
    nocheckpoint: bool = False
    name: str | None = None
    all: bool = False


class JournalRequest(Struct, frozen=True):
    """``events-journal`` (streaming): committed events; ``full``: every job's history first,
    ``digest``: inactive jobs' as one entry each; ``held``: the subscriber's count and
    ``held_sum`` of the inactive jobs it holds, which spare it the digest if they match."""

    full: bool = False
    digest: bool = False
    held: Annotated[list[HeldSum], Meta(min_length=2, max_length=2)] | None = None


def held_sum(jobs: Iterable[tuple[int, int]]) -> int:
    """A checksum of inactive jobs' ``(id, event count)`` pairs, in any order.

    The sum of the pairs' hashes (Python's, computed in C, so a million pairs
    cost a fraction of a second), 63 bits of it: job-list and the job manager
    run the same interpreter, so they agree on it; equal counts and sums mean
    the same jobs with the same counts (a pair differing by chance matches with
    a chance of 2**-61).
    """
    return sum(map(hash, jobs)) & HELD_SUM_MASK


class JournalHistoryRequest(Struct, frozen=True):
    """``journal-history``: every event of the jobs named (unknown ones left out)."""

    ids: Annotated[list[JobId], Meta(max_length=HISTORY_MAX)]

    def __post_init__(self) -> None:
        for index, jobid in enumerate(self.ids):
            _check_id(jobid, f"ids[{index}]")


class PurgeRequest(Struct, frozen=True):
    """``purge`` (the owner only), as flux-core's: the oldest inactive jobs past either limit
    (-1: none), ``batch`` of them at most; without ``force`` only counted."""

    age_limit: float = -1.0
    num_limit: int = -1
    batch: Annotated[int, Meta(ge=1, le=PURGE_BATCH_MAX)] = 50
    force: bool = False

    def __post_init__(self) -> None:
        if self.age_limit != -1 and not self.age_limit >= 0:
            raise invalid("age_limit", "if set, age limit must be >= 0")
        if self.num_limit != -1 and self.num_limit < 0:
            raise invalid("num_limit", "if set, num limit must be >= 0")


class PurgeIdRequest(Struct, frozen=True):
    """``purge-id`` (the owner only): one inactive job; without ``force`` only checked."""

    id: JobId
    force: bool = False

    def __post_init__(self) -> None:
        _check_id(self.id)


class ExecHelloRequest(Struct, frozen=True):
    """``exec-hello``: the execution service to send RFC 32's requests to."""

    service: str

    def __post_init__(self) -> None:
        if not self.service or "." in self.service:
            raise invalid("service", "expected a service name (non-empty, no '.')")


# each method's request type (sched-ready: RFC 27's ``ReadyRequest``)
REQUESTS: dict[str, type[Struct]] = {
    "job-manager.submit": SubmitBatch,
    "job-manager.raise": RaiseRequest,
    "job-manager.raiseall": RaiseAllRequest,
    "job-manager.kill": JobKillRequest,
    "job-manager.urgency": UrgencyRequest,
    "job-manager.memo": MemoRequest,
    "job-manager.set-flags": SetFlagsRequest,
    "job-manager.update": UpdateRequest,
    "job-manager.wait": JobIdRequest,
    "job-manager.result": JobIdRequest,
    "job-manager.history.get": HistoryRequest,
    "job-manager.queue-list": Empty,
    "job-manager.queue-status": QueueStatusRequest,
    "job-manager.queue-enable": QueueEnableRequest,
    "job-manager.queue-start": QueueStartRequest,
    "job-manager.alloc-query": Empty,
    "job-manager.drain": Empty,
    "job-manager.idle": Empty,
    "job-manager.getinfo": Empty,
    "job-manager.events-journal": JournalRequest,
    "job-manager.journal-sync": Empty,
    "job-manager.journal-history": JournalHistoryRequest,
    "job-manager.purge": PurgeRequest,
    "job-manager.purge-id": PurgeIdRequest,
    "job-manager.exec-hello": ExecHelloRequest,
    "job-manager.running": Empty,
    "job-manager.quiescent": Empty,
    "job-manager.sched-hello": Empty,
}
