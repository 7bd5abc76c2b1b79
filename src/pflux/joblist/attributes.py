"""A job's attributes as flux-core's job-list reports them (``job_util.c``): which ones a
job has now, chosen by name, rendered from its ``JobSummary``."""

from __future__ import annotations

from typing import Any, Final

from pflux.errors import PfluxError
from pflux.joblist.summary import JobSummary
from pflux.spec.resultcodes import RESULT_COMPLETED
from pflux.spec.states import State

ATTRS: Final[tuple[str, ...]] = (
    "userid", "urgency", "priority", "t_submit", "t_depend", "t_priority", "t_sched", "t_run",
    "t_cleanup", "t_inactive", "state", "name", "cwd", "queue", "project", "bank", "ntasks",
    "ncores", "duration", "nnodes", "ranks", "nodelist", "success", "exception_occurred",
    "exception_type", "exception_severity", "exception_note", "result", "expiration",
    "annotations", "waitstatus", "dependencies",
)  # fmt: skip
_KNOWN: Final = frozenset(ATTRS)
_DEPEND: Final = int(State.DEPEND)
_SCHED: Final = int(State.SCHED)
_RUN: Final = int(State.RUN)
_CLEANUP: Final = int(State.CLEANUP)
_INACTIVE: Final = int(State.INACTIVE)

Selection = tuple[str, ...] | None  # "id" and attribute names in ATTRS order; None: all


class AttrError(PfluxError):
    """An attribute name job-list does not know."""


def select(attrs: Any) -> Selection:
    """The attributes an ``attrs`` array asks for; ``"all"`` means every one (None)."""
    if not isinstance(attrs, list):
        raise AttrError("attrs must be an array of attribute names")
    for name in attrs:
        if not isinstance(name, str):
            raise AttrError(f"attrs: {name!r} is not an attribute name")
        if name not in _KNOWN and name not in ("all", "id"):
            raise AttrError(f"{name} is not a valid attribute")
    if "all" in attrs:
        return None
    return ("id", *(name for name in ATTRS if name in attrs))


def to_json(summary: JobSummary, selection: Selection) -> dict[str, Any]:
    """``{id, attr: value, ...}``: the selected attributes the job has (as flux-core)."""
    if selection is None:
        return attributes(summary)
    if len(selection) == 1:
        return {"id": summary.id}
    full = attributes(
        summary,
        annotations="annotations" in selection,
        dependencies="dependencies" in selection,
    )
    return {key: full[key] for key in selection if key in full}


def attributes(
    s: JobSummary, *, annotations: bool = True, dependencies: bool = True
) -> dict[str, Any]:
    """Every attribute the job has now; each appears once it means something.

    flux-core's rules (``job_util.c``): times once their state is entered,
    ``priority`` once in SCHED, counts once known, ranks, nodes and expiration
    once it ran, outcome attributes once inactive, the exception ones only if
    there was one.
    """
    out: dict[str, Any] = {"id": s.id, "userid": s.userid, "urgency": s.urgency}
    if s.states & _SCHED:
        out["priority"] = s.priority
    _times(s, out)
    out["state"] = s.state.value
    for key, text in (
        ("name", s.name), ("cwd", s.cwd), ("queue", s.queue), ("project", s.project),
        ("bank", s.bank),
    ):  # fmt: skip
        if text is not None:
            out[key] = text
    for key, count in (
        ("ntasks", s.ntasks), ("ncores", s.ncores), ("duration", s.duration),
        ("nnodes", s.nnodes),
    ):  # fmt: skip
        if count >= 0:
            out[key] = count
    if s.states & _RUN:
        _ran(s, out)
    if s.states & _INACTIVE:
        _outcome(s, out)
    if annotations and s.annotations is not None:
        out["annotations"] = s.annotations_dict()
    if s.waitstatus >= 0:
        out["waitstatus"] = s.waitstatus
    if dependencies:
        deps = s.dependency_list()
        if deps is not None:
            out["dependencies"] = deps
    return out


def _times(s: JobSummary, out: dict[str, Any]) -> None:
    states = s.states
    out["t_submit"] = s.t_submit
    if states & _DEPEND:
        out["t_depend"] = s.t_depend
    if s.t_priority:
        out["t_priority"] = s.t_priority  # PRIORITY and SCHED are re-entered: the first time
    if s.t_sched:
        out["t_sched"] = s.t_sched
    if states & _RUN:
        out["t_run"] = s.t_run
    if states & _CLEANUP:
        out["t_cleanup"] = s.t_cleanup
    if states & _INACTIVE:
        out["t_inactive"] = s.t_inactive


def _ran(s: JobSummary, out: dict[str, Any]) -> None:
    if s.ranks is not None:
        out["ranks"] = s.ranks
    if s.nodelist is not None:
        out["nodelist"] = s.nodelist
    if s.expiration >= 0:
        out["expiration"] = s.expiration


def _outcome(s: JobSummary, out: dict[str, Any]) -> None:
    out["success"] = s.result == RESULT_COMPLETED
    exc = s.exception
    out["exception_occurred"] = exc is not None
    if exc is not None:
        out["exception_type"], out["exception_severity"], out["exception_note"] = exc
    out["result"] = s.result
