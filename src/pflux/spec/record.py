"""What replaying a job's eventlog yields (RFC 21): the fields ``states.apply`` writes.

The job manager's ``Job`` and job-list's live summary extend it with what they
hold beside the eventlog; the CLI and job-exec replay into it as it is.
"""

from __future__ import annotations

from pflux.spec.results import Outcome
from pflux.spec.states import FLAG_DEBUG, NEW, URGENCY_DEFAULT, State

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any


class JobRecord(Outcome):
    """One job's replayed state, written only by ``states.apply``."""

    __slots__ = (
        "allocated",
        "dependencies",
        "ended_by_exception",
        "exception",
        "expiration",
        "finish_status",
        "flag_names",
        "flags",
        "has_resources",
        "history",
        "id",
        "jobspec_updates",
        "memo",
        "perilog",
        "priority",
        "release_final",
        "satisfied",
        "started",
        "state",
        "t_inactive",
        "t_submit",
        "urgency",
        "userid",
    )

    def __init__(self, jobid: int) -> None:
        self.id = jobid
        self.state: State = NEW
        self.history: list[str] = []
        self.userid = -1
        self.urgency = URGENCY_DEFAULT
        self.priority = 0
        self.flags = 0
        self.flag_names: set[str] = set()
        self.t_submit = 0.0
        self.t_inactive = 0.0
        self.dependencies: dict[str, None] = {}  # outstanding, in the order added
        self.satisfied: set[str] = set()
        self.perilog: dict[str, None] = {}  # prolog/epilog actions running
        self.has_resources = False
        self.allocated = False  # an alloc event was ever posted
        self.started = False
        self.finish_status: int | None = None
        self.release_final = False
        self.exception: tuple[str, str] | None = None  # first fatal: (type, note)
        self.ended_by_exception = False
        self.memo: dict[str, Any] = {}
        self.jobspec_updates: dict[str, Any] = {}
        self.expiration: float | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.id}, {self.state.name})"

    @property
    def debug(self) -> bool:
        """Submitted with the debug flag, or given it since: post debug.* events."""
        return bool(self.flags & FLAG_DEBUG) or "debug" in self.flag_names
