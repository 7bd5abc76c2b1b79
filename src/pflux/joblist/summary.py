"""One job as job-list reports it: a compact summary built from the job's events.

The job's state comes from the job manager's own transition table
(``pflux.spec.states``): while the job is active the summary holds a ``Live`` record
and feeds each event to ``states.apply``, so job-list and the job manager cannot
disagree about a state or a result. Beside it the summary derives the attributes
flux-core's job-list reports, with flux-core's names and meanings
(``job-list/job_state.c`` for the events, ``job_data.c`` for the jobspec and R,
``job_util.c`` for when an attribute is reported at all, in ``attributes``). Once the
job is inactive only the summary is kept: 100,000 of them must fit in the instance's
memory budget, so it is slotted, shares repeated strings and keeps annotations as
JSON text.
"""

from __future__ import annotations

import copy
import logging
import sys
from collections.abc import Callable
from typing import Any, Final

import orjson

from pflux.errors import PfluxError, ResourceError
from pflux.spec import hostlist
from pflux.spec.eventlog import Event
from pflux.spec.jobspec import JobspecView
from pflux.spec.record import JobRecord
from pflux.spec.resource import ResourceSet
from pflux.spec.resultcodes import CODES
from pflux.spec.results import FAILED
from pflux.spec.states import InvalidTransition, State, apply

log = logging.getLogger("pflux.job-list")

_ZERO: Final = 0.0  # one shared float for every unset time and every zero duration
# ``eventlog_annotations`` while no annotations entry has made the annotations differ
# from what the events alone make
_SAME: Final[Any] = object()


class Live(JobRecord):
    """An active job's replayed record, with the jobspec and R its attributes come from."""

    __slots__ = ("R", "jobspec")

    def __init__(self, jobid: int) -> None:
        super().__init__(jobid)
        self.jobspec: dict[str, Any] | None = None
        self.R: dict[str, Any] | None = None


class JobSummary:
    """What job-list knows of one job.

    Counts are -1 and times 0.0 until known; ``states`` is the mask of states
    entered (flux-core's ``states_mask``), which decides which attributes are
    reported. ``live`` is the ``Live`` record replaying the events while the
    job is active, None once it is inactive.

    Annotations come from events (the scheduler's in ``alloc``, the user's
    ``memo``) and from annotations entries, which are not in the eventlog.
    Once a job is inactive it keeps the annotations its events make, as a
    restart, which replays the eventlog, would find them: so job-list lists
    an inactive job the same whether it saw the job live, replayed its
    eventlog or loaded it from its cache. (flux-core's job manager likewise
    clears the scheduler's annotations when an allocation is canceled.)
    ``eventlog_annotations`` holds the events' annotations while an entry
    has made the live ones differ.
    """

    __slots__ = (
        "annotations",
        "bank",
        "cwd",
        "dependencies",
        "duration",
        "eventlog_annotations",
        "exception",
        "expiration",
        "id",
        "live",
        "name",
        "ncores",
        "next_seq",
        "nnodes",
        "nodelist",
        "ntasks",
        "priority",
        "project",
        "queue",
        "ranks",
        "result",
        "state",
        "states",
        "t_cleanup",
        "t_depend",
        "t_inactive",
        "t_priority",
        "t_run",
        "t_sched",
        "t_submit",
        "urgency",
        "userid",
        "waitstatus",
    )

    def __init__(self, jobid: int) -> None:
        self.id = jobid
        self.live: Live | None = Live(jobid)
        self.next_seq = 0
        self.userid = -1
        self.urgency = 16
        self.priority = 0  # unprioritized pending jobs list after prioritized ones
        self.state = State.NEW
        self.states = int(State.NEW)
        self.t_submit = _ZERO
        self.t_depend = _ZERO
        self.t_priority = _ZERO
        self.t_sched = _ZERO
        self.t_run = _ZERO
        self.t_cleanup = _ZERO
        self.t_inactive = _ZERO
        self.name: str | None = None
        self.cwd: str | None = None
        self.queue: str | None = None
        self.project: str | None = None
        self.bank: str | None = None
        self.ntasks = -1
        self.ncores = -1
        self.nnodes = -1
        self.duration = -1.0
        self.ranks: str | None = None
        self.nodelist: str | None = None
        self.expiration = -1.0
        self.waitstatus = -1
        self.result = 0  # a RESULT_* once inactive
        self.exception: tuple[str, int, str] | None = None  # (type, severity, note)
        self.annotations: dict[str, Any] | str | None = None  # JSON text once inactive
        self.eventlog_annotations: dict[str, Any] | None = _SAME
        self.dependencies: tuple[str, ...] | None = None  # kept once inactive

    def __repr__(self) -> str:
        return f"JobSummary({self.id}, {self.state.name})"

    @classmethod
    def restored(cls, jobid: int, next_seq: int) -> JobSummary:
        """An inactive job built from ``next_seq`` events, its attributes still to be set
        (by job-list's cache, ``cache.decode``)."""
        s = cls.__new__(cls)
        s.id = jobid
        s.live = None
        s.next_seq = next_seq
        s.state = State.INACTIVE
        s.eventlog_annotations = _SAME
        return s

    # --- applying one event -------------------------------------------------------------

    def apply(self, event: Event, entry: dict[str, Any]) -> None:
        """Apply one event (``entry`` is its journal entry, for the jobspec or R it carries).

        An event the transition table refuses is logged and skipped, as the job
        manager's own replay does; nothing changes an inactive job.
        """
        live = self.live
        if live is None:
            return
        old = live.state
        try:
            apply(live, event)
        except InvalidTransition as exc:
            log.warning("job-list: skipping an event: %s", exc)
            return
        extra = _EXTRA.get(event.name)
        if extra is not None:
            extra(self, live, event, entry)
        if live.state is not old:
            self._enter(live, old, event.timestamp)

    def _enter(self, live: Live, old: State, timestamp: float) -> None:
        """Record entering ``live.state``, as flux-core's ``update_job_state`` does."""
        new = live.state
        if new is State.DEPEND:
            self.t_depend = timestamp
        elif new is State.PRIORITY:
            if not self.t_priority:
                self.t_priority = timestamp
            if old is State.SCHED:
                # back to PRIORITY: the priority is unknown until it is posted again
                self.states &= ~int(State.SCHED)
        elif new is State.SCHED:
            if not self.t_sched:
                self.t_sched = timestamp
        elif new is State.RUN:
            self.t_run = timestamp
        elif new is State.CLEANUP:
            self.t_cleanup = timestamp
        elif new is State.INACTIVE:
            self.t_inactive = timestamp
            self._finish(live)
        self.state = new
        self.states |= int(new)

    def _finish(self, live: Live) -> None:
        """Keep what an inactive job reports and let the replaying record go."""
        self.result = CODES[live.result or FAILED]
        if live.dependencies or live.satisfied:
            self.dependencies = tuple(live.dependencies)
        if self.eventlog_annotations is not _SAME:
            self.annotations = self.eventlog_annotations
            self.eventlog_annotations = _SAME
        if isinstance(self.annotations, dict):
            self.annotations = _compact(self.annotations)
        self.live = None

    # --- reading ---------------------------------------------------------------------------

    def annotations_dict(self) -> dict[str, Any] | None:
        value = self.annotations
        if isinstance(value, str):
            decoded: dict[str, Any] = orjson.loads(value)
            return decoded
        return value

    def dependency_list(self) -> list[str] | None:
        """Outstanding dependencies, or None if the job never had any (flux: no attribute)."""
        live = self.live
        if live is None:
            return None if self.dependencies is None else list(self.dependencies)
        if live.dependencies or live.satisfied:
            return list(live.dependencies)
        return None

    def update_annotations(self, update: dict[str, Any], under: str | None = None) -> None:
        """Merge an event's ``update`` (null deletes) into the annotations, or into one key."""
        value = _merged(self.annotations_dict(), update, under)
        self.annotations = _compact(value) if value and self.live is None else value
        if self.eventlog_annotations is not _SAME:
            self.eventlog_annotations = _merged(self.eventlog_annotations, update, under)

    def annotate(self, update: dict[str, Any]) -> None:
        """Merge an annotations entry's ``update``: shown while the job is active, dropped
        once it is inactive (an entry late for a job that has just ended)."""
        if self.live is None:
            return
        if self.eventlog_annotations is _SAME:
            self.eventlog_annotations = self.annotations_dict()
        self.annotations = _merged(self.annotations_dict(), update, None)

    # --- the jobspec and R (flux-core's job_data.c) -----------------------------------------

    def read_jobspec(self, data: Any) -> None:
        """Name, cwd, queue, project, bank, duration and the counts a jobspec gives."""
        if not isinstance(data, dict):
            log.warning("job-list: job %d: submit entry carries no jobspec", self.id)
            return
        jobspec = JobspecView(data)
        try:
            system = jobspec.data["attributes"]["system"]
            self.name = _share(jobspec.name)
            self.cwd = _share(jobspec.cwd)
            self.queue = _share(jobspec.queue)
            self.project = _share(system.get("project"))
            self.bank = _share(system.get("bank"))
            duration = jobspec.duration
            self.duration = _ZERO if duration == 0.0 else duration
            nnodes = jobspec.nnodes
            nslots = jobspec.nslots
            cores = nslots * jobspec.cores_per_slot
            self.nnodes = -1 if nnodes is None else nnodes
            # with whole nodes the core count is only known from R
            self.ncores = -1 if nnodes is not None and jobspec.exclusive else cores
            kind, count = _per_resource(jobspec.shell_options)
            if kind == "node":
                self.ntasks = nnodes * count if nnodes is not None else -1
            elif kind == "core":
                self.ntasks = cores * count if nnodes is None else -1
            else:
                self.ntasks = jobspec.ntasks
        except (LookupError, TypeError, ValueError, AttributeError, PfluxError) as exc:
            # as flux-core: an unreadable jobspec leaves what could be read
            log.warning("job-list: job %d: cannot read the jobspec: %r", self.id, exc)

    def read_resources(self, data: Any, jobspec: Any) -> None:
        """nnodes, ranks, nodelist, ncores and expiration from R, and ntasks if it waited on R."""
        try:
            placement = _placement(data)
        except (PfluxError, orjson.JSONEncodeError) as exc:
            log.warning("job-list: job %d: invalid R: %s", self.id, exc)
            return
        self.nnodes, self.ranks, self.nodelist, self.ncores, self.expiration = placement
        if isinstance(jobspec, dict):
            try:
                kind, count = _per_resource(JobspecView(jobspec).shell_options)
            except (LookupError, TypeError, AttributeError):
                kind, count = None, 1
            if kind == "node":
                self.ntasks = self.nnodes * count
            elif kind == "core" and self.ntasks < 0:
                self.ntasks = self.ncores * count


Placement = tuple[int, str, str, int, float]  # nnodes, ranks, nodelist, ncores, expiration
_PLACEMENTS: dict[bytes, tuple[int, str, str, int]] = {}
_PLACEMENTS_MAX: Final = 4096


def _placement(data: Any) -> Placement:
    """What job-list reports of an R; ResourceError if it is invalid.

    Validating R and encoding its ranks and hosts is most of the cost of a job,
    and jobs are placed on the same few layouts again and again: the answer is
    remembered by the layout (R less its times).
    """
    execution: Any = data.get("execution") if isinstance(data, dict) else None
    layout = None
    if isinstance(execution, dict):
        layout = orjson.dumps(
            [data.get("version"), execution.get("R_lite"), execution.get("nodelist"),
             execution.get("properties"), execution.get("nslots"), sorted(data)]
        )  # fmt: skip
    known = _PLACEMENTS.get(layout) if layout is not None else None
    if known is None:
        rset = ResourceSet.from_json(data)  # raises if R is invalid, naming the problem
        ranks = _share(rset.ranks().encode(brackets=True))
        known = (rset.nnodes, ranks, _share(hostlist.encode(rset.nodelist)), rset.ncores())
        if layout is not None:
            if len(_PLACEMENTS) >= _PLACEMENTS_MAX:
                _PLACEMENTS.clear()
            _PLACEMENTS[layout] = known
        execution = data["execution"]
    expiration = execution.get("expiration", 0.0)
    if type(expiration) not in (int, float) or not 0 <= expiration < float("inf"):
        raise ResourceError(f"execution.expiration: must be a time >= 0, got {expiration!r}")
    return (*known, float(expiration))


def _compact(annotations: dict[str, Any]) -> str:
    """Annotations as JSON text: a tenth of the dicts' size.

    Text, not orjson's bytes: a small bytes object from ``orjson.dumps`` keeps
    a 4 KiB allocation behind it.
    """
    return orjson.dumps(annotations).decode()


def _share(text: Any) -> Any:
    """One copy of a string that many jobs repeat (names, directories, node lists)."""
    return sys.intern(text) if type(text) is str else text


def _per_resource(options: Any) -> tuple[str | None, int]:
    """The shell's ``per-resource`` option: (type, count), or (None, 1) without one."""
    spec = options.get("per-resource") if isinstance(options, dict) else None
    if not isinstance(spec, dict):
        return None, 1
    kind = spec.get("type")
    count = spec.get("count", 1)
    if kind not in ("node", "core") or type(count) is not int or count < 1:
        return None, 1
    return kind, count


def _merged(
    current: dict[str, Any] | None, update: dict[str, Any], under: str | None
) -> dict[str, Any] | None:
    """``current`` with ``update`` merged in (at ``under``, if given), as a new dict; None
    if nothing is left. ``current`` itself is never changed, so others may share it."""
    merged = dict(current) if current else {}
    _merge(merged, update if under is None else {under: update})
    return merged or None


def _merge(target: dict[str, Any], update: dict[str, Any]) -> None:
    """Merge ``update`` into ``target`` recursively; null deletes, emptied objects go."""
    for key, value in update.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict):
            inner = target.get(key)
            inner = dict(inner) if isinstance(inner, dict) else {}
            _merge(inner, value)
            if inner:
                target[key] = inner
            else:
                target.pop(key, None)
        else:
            target[key] = value


# --- what each event adds beside the state (flux-core's journal_*_event) ----------------------

Extra = Callable[[JobSummary, Live, Event, dict[str, Any]], None]


def _on_submit(summary: JobSummary, live: Live, event: Event, entry: dict[str, Any]) -> None:
    summary.userid = live.userid
    summary.urgency = live.urgency
    summary.t_submit = live.t_submit
    live.jobspec = entry.get("jobspec")
    summary.read_jobspec(live.jobspec)


def _on_priority(summary: JobSummary, live: Live, event: Event, entry: dict[str, Any]) -> None:
    summary.priority = live.priority


def _on_urgency(summary: JobSummary, live: Live, event: Event, entry: dict[str, Any]) -> None:
    summary.urgency = live.urgency


def _on_alloc(summary: JobSummary, live: Live, event: Event, entry: dict[str, Any]) -> None:
    live.R = entry.get("R")
    if live.R is not None:
        summary.read_resources(live.R, live.jobspec)
    # unlike flux-core, keep the scheduler's annotations the event records, so that
    # a restarted job-list, which gets no annotations entries, lists the same
    annotations = (event.context or {}).get("annotations")
    if isinstance(annotations, dict):
        summary.update_annotations(annotations)


def _on_finish(summary: JobSummary, live: Live, event: Event, entry: dict[str, Any]) -> None:
    if live.finish_status is not None:
        summary.waitstatus = live.finish_status


def _on_exception(summary: JobSummary, live: Live, event: Event, entry: dict[str, Any]) -> None:
    # flux-core reports the most severe exception, the first of equal severity
    context = event.context or {}
    severity = context["severity"]  # apply() has checked type and severity
    if summary.exception is None or severity < summary.exception[1]:
        note = context.get("note", "")
        summary.exception = (context["type"], severity, note if isinstance(note, str) else "")


def _on_memo(summary: JobSummary, live: Live, event: Event, entry: dict[str, Any]) -> None:
    summary.update_annotations(event.context or {}, under="user")


def _on_jobspec_update(
    summary: JobSummary, live: Live, event: Event, entry: dict[str, Any]
) -> None:
    from pflux.spec.replay import apply_jobspec_updates

    if not isinstance(live.jobspec, dict):
        log.warning("job-list: job %d: jobspec-update before the jobspec", summary.id)
        return
    # the jobspec may be the job manager's own object: never change it in place
    updated = copy.deepcopy(live.jobspec)
    apply_jobspec_updates(updated, event.context or {})
    live.jobspec = updated
    summary.read_jobspec(updated)
    if live.R is not None:
        # a running job's counts are R's (whole nodes, cores per node), not the request's;
        # its expiration is the resource-update's that follows
        expiration = summary.expiration
        summary.read_resources(live.R, updated)
        summary.expiration = expiration


def _on_resource_update(
    summary: JobSummary, live: Live, event: Event, entry: dict[str, Any]
) -> None:
    if live.expiration is not None:
        summary.expiration = live.expiration


_EXTRA: dict[str, Extra] = {
    "submit": _on_submit,
    "priority": _on_priority,
    "urgency": _on_urgency,
    "alloc": _on_alloc,
    "finish": _on_finish,
    "exception": _on_exception,
    "memo": _on_memo,
    "jobspec-update": _on_jobspec_update,
    "resource-update": _on_resource_update,
}
