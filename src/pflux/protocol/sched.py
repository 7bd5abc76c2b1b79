"""RFC 27, the job manager and the scheduler: each message both ends check, as a type.

The scheduler decodes the requests (``sched.alloc``, ``sched.cancel``,
``sched.prioritize``, ``sched.free``, ``sched.expiration``, and the simulator's
``sched.sim-time``) and the job manager decodes
``job-manager.sched-ready`` and the alloc responses (``AllocReply``); each end
sends the message it built as its type: within the broker's process it is
passed as it is, and made JSON only where it leaves the process.
"""

from __future__ import annotations

import enum
import math
from typing import Annotated, Any, Literal

from msgspec import Meta, Struct

from pflux.protocol.decode import invalid

MAX_JOBID = 2**64 - 1
MAX_PRIORITY = 2**32 - 1

JobId = Annotated[int, Meta(ge=0)]  # msgspec's bounds stop at int64: the top is checked below
Priority = Annotated[int, Meta(ge=0, le=MAX_PRIORITY)]
Seconds = Annotated[float, Meta(ge=0)]


class AllocResponse(enum.IntEnum):
    """The ``type`` of a ``sched.alloc`` response."""

    SUCCESS = 0  # R is committed to the KVS (and sent along); optional annotations
    ANNOTATE = 1  # annotations only; more responses follow
    DENY = 2  # the request can never be satisfied; ``note`` says why
    CANCEL = 3  # answered a sched.cancel


def _check_id(jobid: int) -> None:
    if jobid > MAX_JOBID:
        raise invalid("id", f"expected `int` <= {MAX_JOBID}")


def _check_seconds(value: float, field: str) -> None:
    if not value < math.inf:
        raise invalid(field, "expected `float` < inf")


def _check_object(value: Any, field: str) -> None:
    if type(value) is not dict:
        raise invalid(field, "expected `object`")


class AllocRequest(Struct, frozen=True):
    """``sched.alloc``: the job manager asks for a job's resources (a streaming request)."""

    id: JobId
    priority: Priority
    userid: int
    jobspec: Any  # an object; RFC 25's walker reads it
    t_submit: Seconds = 0.0

    def __post_init__(self) -> None:
        _check_id(self.id)
        _check_object(self.jobspec, "jobspec")
        _check_seconds(self.t_submit, "t_submit")


class AllocReply(Struct, frozen=True, omit_defaults=True):
    """One response to ``sched.alloc``: ``R`` with SUCCESS, ``note`` with DENY."""

    id: JobId
    type: AllocResponse
    R: Any = None
    annotations: dict[str, Any] = {}
    note: str = ""

    def __post_init__(self) -> None:
        _check_id(self.id)


class CancelRequest(Struct, frozen=True):
    """``sched.cancel``: a job's pending alloc is no longer wanted."""

    id: JobId

    def __post_init__(self) -> None:
        _check_id(self.id)


class PrioritizeRequest(Struct, frozen=True):
    """``sched.prioritize``: pending jobs' new priorities, as ``[id, priority]`` pairs."""

    jobs: list[tuple[JobId, Priority]]

    def __post_init__(self) -> None:
        for index, (jobid, _) in enumerate(self.jobs):
            if jobid > MAX_JOBID:
                raise invalid(f"jobs[{index}][0]", f"expected `int` <= {MAX_JOBID}")


class SimTimeRequest(Struct, frozen=True):
    """``sched.sim-time``: the simulator sets the scheduler's clock to ``time``."""

    time: Seconds

    def __post_init__(self) -> None:
        _check_seconds(self.time, "time")


class FreeRequest(Struct, frozen=True):
    """``sched.free``: resources back; ``final: false`` frees part of R (its released ranks)."""

    id: JobId
    R: Any = None  # RFC 20's library reads it (the scheduler may know it already)
    final: bool = True

    def __post_init__(self) -> None:
        _check_id(self.id)


class ExpirationRequest(Struct, frozen=True):
    """``sched.expiration``: a running job's new expiration."""

    id: JobId
    expiration: Seconds

    def __post_init__(self) -> None:
        _check_id(self.id)
        _check_seconds(self.expiration, "expiration")


class ReadyRequest(Struct, frozen=True, omit_defaults=True):
    """``job-manager.sched-ready``: the scheduler's mode; ``limit`` alloc requests if limited."""

    mode: Literal["unlimited", "limited"]
    limit: Annotated[int, Meta(ge=1)] | None = None

    def __post_init__(self) -> None:
        if self.mode == "limited" and self.limit is None:
            raise invalid("limit", "required in limited mode")


class DrainRequest(Struct, frozen=True):
    """``sched.drain``/``sched.undrain``: take ranks out of (or back into) scheduling.

    ``targets`` is an idset of ranks or a hostlist; ``mode`` as flux's
    ``resource.drain``: ``update`` leaves what is already drained as it is,
    ``overwrite`` replaces its reason, ``force-overwrite`` its time too.
    """

    targets: str
    reason: str = ""
    mode: Literal["update", "overwrite", "force-overwrite"] | None = None


class ReloadRequest(Struct, frozen=True):
    """``sched.reload``: replace the resources scheduled by ``R`` (RFC 20, as an
    object); ``force`` keeps ranks the instance does not have (down)."""

    R: dict[str, Any]
    force: bool = False
