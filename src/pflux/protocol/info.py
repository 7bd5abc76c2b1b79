"""job-info's requests (``job-info.lookup``, ``job-info.eventlog-watch``), as types.

Which keys and paths may be read is job-info's check (it names the ones allowed);
the CLI sends these as dicts (``pflux.api``), without loading msgspec.
"""

from __future__ import annotations

from msgspec import Struct, field

from pflux.protocol.decode import invalid
from pflux.protocol.sched import MAX_JOBID, JobId


class LookupRequest(Struct, frozen=True):
    """``job-info.lookup``: some of a job's keys (J, jobspec, R, eventlog, guest.KEY)."""

    id: JobId
    keys: list[str] = field(default_factory=lambda: ["jobspec"])

    def __post_init__(self) -> None:
        if self.id > MAX_JOBID:
            raise invalid("id", f"expected `int` <= {MAX_JOBID}")


class EventlogWatchRequest(Struct, frozen=True):
    """``job-info.eventlog-watch``: a job's eventlog (or a guest one), then live until its end."""

    id: JobId
    path: str = "eventlog"

    def __post_init__(self) -> None:
        if self.id > MAX_JOBID:
            raise invalid("id", f"expected `int` <= {MAX_JOBID}")
