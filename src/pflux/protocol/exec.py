"""RFC 32, the job manager and an execution service: each message both ends check, as a type.

The execution service (job-exec, or the simulator) decodes the requests
(``<service>.start``, ``.kill``, ``.expiration``, ``.exception``) and the job
manager decodes the start responses: first the envelope ``{id, type, data}``
(``StartResponse``), then its ``data`` by type (``DATA``), since a tagged union
converted from a dict costs 3 µs (the README's libraries table).  Each end
sends the message it built as its type (``response`` for the start
responses): within the broker's process it is passed as it is, and made JSON
only where it leaves the process.
"""

from __future__ import annotations

import enum
import math
from typing import Annotated, Any, Literal

from msgspec import Meta, Struct

from pflux.protocol.decode import invalid
from pflux.protocol.sched import MAX_JOBID, JobId, Seconds
from pflux.spec.states import SEVERITY_MAX


def _check_id(jobid: int, field: str = "id") -> None:
    if jobid > MAX_JOBID:
        raise invalid(field, f"expected `int` <= {MAX_JOBID}")


def _check_object(value: Any, field: str) -> None:
    if type(value) is not dict:
        raise invalid(field, "expected `object`")


class ExecResponse(enum.StrEnum):
    """The four response types of ``<service>.start``."""

    START = "start"  # the job shells have started; data {}
    RELEASE = "release"  # data {ranks: idset or "all", final: bool}; the final one is last
    EXCEPTION = "exception"  # data {severity, type, note}
    FINISH = "finish"  # data {status}: the largest job shell wait status


def response(jobid: int, kind: ExecResponse, data: dict[str, Any] | None = None) -> StartResponse:
    """One start response, its ``data`` (the fields of ``DATA[kind]``) typed: the job
    manager takes it as it is (``decode``); it is JSON only if it leaves the process."""
    return StartResponse(jobid, kind, DATA[kind](**(data or {})))


class StartRequest(Struct, frozen=True, omit_defaults=True):
    """``<service>.start``: run an allocated job (a streaming request); ``reattach`` if it ran."""

    id: JobId
    userid: int
    jobspec: Any  # an object; RFC 25's libraries read it
    R: Any  # an object; RFC 20's library reads it
    reattach: bool
    # a guest's J, as job-ingest gave the job manager (``IngestedJob.J``); None: job-exec
    # reads it from the KVS (a long one, or the job manager's restarted since)
    J: str | None = None

    def __post_init__(self) -> None:
        _check_id(self.id)
        _check_object(self.jobspec, "jobspec")
        _check_object(self.R, "R")


class KillRequest(Struct, frozen=True):
    """``<service>.kill``: signal a running job's tasks (the range is the service's check)."""

    id: JobId
    signum: int

    def __post_init__(self) -> None:
        _check_id(self.id)


class ExecExpirationRequest(Struct, frozen=True):
    """``<service>.expiration``: a running job's new expiration (0: none)."""

    id: JobId
    expiration: Seconds

    def __post_init__(self) -> None:
        _check_id(self.id)
        if not self.expiration < math.inf:
            raise invalid("expiration", "expected `float` < inf")


Severity = Annotated[int, Meta(ge=0, le=SEVERITY_MAX)]


class ExceptionRequest(Struct, frozen=True):
    """``<service>.exception``: the job manager saw an exception on a job (fatal: severity 0)."""

    id: JobId
    type: str
    severity: Severity
    note: str = ""

    def __post_init__(self) -> None:
        _check_id(self.id)


class StartResponse(Struct, frozen=True):
    """One response to ``<service>.start``: the envelope; ``data`` is decoded by ``type``."""

    id: JobId
    type: ExecResponse
    data: Any  # an object, decoded by ``type`` (``DATA``)

    def __post_init__(self) -> None:
        _check_id(self.id)
        if self.data.__class__ is not DATA[self.type]:  # else typed by its sender
            _check_object(self.data, "data")


class StartData(Struct, frozen=True):
    """``start``: the job's tasks run."""


class ExceptionData(Struct, frozen=True):
    """``exception``: the service raised one; severity 0 is fatal."""

    type: str  # empty: "exec"
    severity: Severity
    note: str = ""


class FinishData(Struct, frozen=True):
    """``finish``: every task is done; ``status`` is the largest wait status."""

    status: int


class ReleaseData(Struct, frozen=True):
    """``release``: ``ranks`` (an idset, or "all") are free; the ``final`` one ends the stream."""

    ranks: str
    final: bool


DATA: dict[ExecResponse, type[StartData | ExceptionData | FinishData | ReleaseData]] = {
    ExecResponse.START: StartData,
    ExecResponse.EXCEPTION: ExceptionData,
    ExecResponse.FINISH: FinishData,
    ExecResponse.RELEASE: ReleaseData,
}


# --- job-exec's own requests (not RFC 32): from clients, which build them as dicts -------

WinsizeDim = Annotated[int, Meta(ge=1, le=65535)]


class HostpidsRequest(Struct, frozen=True):
    """``job-exec.hostpids``: where a running job's tasks run, as ``host:pid``."""

    id: JobId

    def __post_init__(self) -> None:
        _check_id(self.id)


class WinsizeRequest(Struct, frozen=True):
    """``job-exec.winsize``: a running job's ptys' new size (``pflux run -o pty.interactive``)."""

    id: JobId
    rows: WinsizeDim
    cols: WinsizeDim

    def __post_init__(self) -> None:
        _check_id(self.id)


class KeepRequest(Struct, frozen=True):
    """``exec-node.keep``: the jobs job-exec runs with a shell on the rank it is sent to;
    those of them that are guests', as ``[job id, userid]`` (whose shells meet the
    exec-node at their rendezvous, running as that user)."""

    jobs: list[JobId]
    guests: list[tuple[JobId, Annotated[int, Meta(ge=0, lt=1 << 32)]]] = []

    def __post_init__(self) -> None:
        for jobid in self.jobs:
            _check_id(jobid)
        for jobid, _ in self.guests:
            _check_id(jobid)


class KeepResponse(Struct, frozen=True):
    """``exec-node.keep``'s answer: the jobs whose shells run on that rank, and the wait
    statuses of shells there that died unheard, as ``[job id, status]``; the exec-node's
    ``incarnation`` (a number of its own, other each time it starts) and the jobs listed
    whose shell it was never asked for since it started (``unasked``)."""

    jobs: list[JobId]
    died: list[tuple[JobId, int]]
    incarnation: Annotated[int, Meta(ge=0, lt=1 << 53)] = 0
    unasked: list[JobId] = []


class ForgetRequest(Struct, frozen=True):
    """``exec-node.forget``: the jobs whose end job-exec has journalled, which nobody will
    ask that rank about again."""

    jobs: list[JobId]

    def __post_init__(self) -> None:
        for jobid in self.jobs:
            _check_id(jobid)


class OverrideRequest(Struct, frozen=True):
    """``job-exec.override``: start a test-mode job, or finish it with ``status`` (testexec)."""

    jobid: JobId
    event: str  # "start" or "finish"; another is EINVAL, as flux-core words it
    status: int = 0

    def __post_init__(self) -> None:
        _check_id(self.jobid, "jobid")


class StdinRequest(Struct, frozen=True):
    """``job-exec.stdin``: a piece of a running job's standard input, RFC 24's ioencode
    (``data`` as text, or base64 with ``encoding``; ``eof`` closes the tasks' stdin)."""

    id: JobId
    stream: Literal["stdin"] = "stdin"
    rank: str = "all"  # "all" or an idset of task ranks
    data: str = ""
    encoding: Literal["base64", "UTF-8", "utf-8"] | None = None
    eof: bool = False

    def __post_init__(self) -> None:
        _check_id(self.id)
