"""RFC 21's job state machine: the states, their limits and one explicit transition table.

``apply(job, event)`` is the whole of it: it looks up ``(job.state, event.name)``
in ``TRANSITIONS``, updates the job's replayed fields (a ``JobRecord``, see
``record.py``) and moves it to the next state. It does no I/O, so replaying an
eventlog through it reproduces the state exactly, and tests feed it events
directly. A pair missing from the table is not a legal transition and raises
InvalidTransition carrying the job's story. The job manager, job-list, job-exec
and the CLI all read a job's state through it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

from pflux.errors import PfluxError
from pflux.spec import statebits

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from pflux.spec.eventlog import Event
    from pflux.spec.record import JobRecord


class State(enum.IntFlag):
    """Job states; the values are flux-core's, so masks mean the same in both."""

    NEW = statebits.NEW
    DEPEND = statebits.DEPEND
    PRIORITY = statebits.PRIORITY
    SCHED = statebits.SCHED
    RUN = statebits.RUN
    CLEANUP = statebits.CLEANUP
    INACTIVE = statebits.INACTIVE

    # virtual states (RFC 21)
    PENDING = statebits.PENDING
    RUNNING = statebits.RUNNING
    ACTIVE = statebits.ACTIVE

    @property
    def short(self) -> str:
        """The one-letter form `pflux jobs` prints."""
        return SHORT[self]

    @classmethod
    def parse(cls, text: str) -> State:
        """A state or virtual state by name (any case), e.g. ``pending`` or ``R``."""
        upper = text.strip().upper()
        for state in cls:
            if upper in (state.name, SHORT.get(state)):
                return state
        for name in ("PENDING", "RUNNING", "ACTIVE"):
            if upper == name:
                return cls[name]
        raise PfluxError(f"invalid job state {text!r}")


SHORT = {State(bit): letter for bit, letter in statebits.LETTERS.items()}

# the numbers of ``statebits``, for the services that read them with the states
URGENCY_MIN, URGENCY_DEFAULT, URGENCY_MAX = (
    statebits.URGENCY_MIN,
    statebits.URGENCY_DEFAULT,
    statebits.URGENCY_MAX,
)
URGENCY_HOLD, URGENCY_EXPEDITE = statebits.URGENCY_HOLD, statebits.URGENCY_EXPEDITE
FLAG_DEBUG, FLAG_WAITABLE = statebits.FLAG_DEBUG, statebits.FLAG_WAITABLE
PRIORITY_MIN, PRIORITY_MAX = 0, 4294967295
SEVERITY_MAX = 7


def priority(urgency: int) -> int:
    """The priority of a job of this urgency (flux-core's default priority plugin).

    Urgency 0 holds a job (priority 0: never scheduled), 31 expedites it (the
    largest priority), anything between is the priority itself.
    """
    if urgency == URGENCY_HOLD:
        return 0
    if urgency == URGENCY_EXPEDITE:
        return PRIORITY_MAX
    return urgency


# The states as plain names, for the code run for every event: Python 3.11 reaches
# an enum member through its metaclass's __getattr__ hook, about 200 ns an access
# against 15 for a global (3.12 is fast again), and a job makes dozens
NEW, DEPEND, PRIORITY, SCHED, RUN, CLEANUP, INACTIVE = (
    State.NEW,
    State.DEPEND,
    State.PRIORITY,
    State.SCHED,
    State.RUN,
    State.CLEANUP,
    State.INACTIVE,
)


class InvalidTransition(PfluxError):
    """An event that is not legal in the job's state, or whose context is malformed."""

    def __init__(self, job: JobRecord, event: Event, reason: str) -> None:
        self.job_id = job.id
        self.history = list(job.history)
        story = " ".join(self.history) or "(no events)"
        super().__init__(
            f"job {job.id}: event {event.name!r} in state {job.state.name}: {reason}"
            f" (events so far: {story})"
        )


Handler = Callable[["JobRecord", "Event"], State]


def _context(
    job: JobRecord,
    event: Event,
    key: str,
    kind: type | tuple[type, ...],
    *,
    lo: int = 0,
    hi: int = 0,
) -> Any:
    """A required context value of the right type (and range, for integers)."""
    value: Any = (event.context or {}).get(key)
    ok = isinstance(value, kind) and not isinstance(value, bool)
    if not ok or (hi and not lo <= value <= hi):
        raise InvalidTransition(job, event, f"context {key!r} is missing or invalid: {value!r}")
    return value


# --- handlers: update the replayed fields, return the next state ---------------------------


def _submit(job: JobRecord, event: Event) -> State:
    if job.history:
        raise InvalidTransition(job, event, "submit must be the first event")
    job.urgency = _context(job, event, "urgency", int, lo=URGENCY_MIN, hi=URGENCY_MAX)
    job.userid = _context(job, event, "userid", int, lo=0, hi=2**32 - 1)
    job.flags = _context(job, event, "flags", int, lo=0, hi=2**31)
    job.t_submit = event.timestamp
    return NEW


def _validate(job: JobRecord, event: Event) -> State:
    return DEPEND


def _invalidate(job: JobRecord, event: Event) -> State:
    return INACTIVE


def _dependency_add(job: JobRecord, event: Event) -> State:
    desc = _context(job, event, "description", str)
    if desc not in job.satisfied:
        job.dependencies[desc] = None
    return job.state


def _dependency_remove(job: JobRecord, event: Event) -> State:
    desc = _context(job, event, "description", str)
    if desc not in job.dependencies:
        raise InvalidTransition(job, event, f"no dependency {desc!r} was added")
    del job.dependencies[desc]
    job.satisfied.add(desc)
    return job.state


def _depend(job: JobRecord, event: Event) -> State:
    if job.dependencies:
        raise InvalidTransition(job, event, f"dependencies remain: {', '.join(job.dependencies)}")
    return PRIORITY


def _priority(job: JobRecord, event: Event) -> State:
    job.priority = _context(job, event, "priority", int, lo=PRIORITY_MIN, hi=PRIORITY_MAX)
    return SCHED


def _urgency(job: JobRecord, event: Event) -> State:
    job.urgency = _context(job, event, "urgency", int, lo=URGENCY_MIN, hi=URGENCY_MAX)
    # a new urgency means a new priority: a job waiting for resources goes back
    # through PRIORITY (see spec-notes "Urgency and priority")
    return PRIORITY if job.state is SCHED else job.state


def _alloc(job: JobRecord, event: Event) -> State:
    job.has_resources = True
    job.allocated = True
    return RUN if job.state is SCHED else job.state


def _prolog_start(job: JobRecord, event: Event) -> State:
    job.perilog[_context(job, event, "description", str)] = None
    return job.state


def _perilog_finish(job: JobRecord, event: Event) -> State:
    job.perilog.pop(_context(job, event, "description", str), None)
    _context(job, event, "status", int)
    return job.state


_epilog_start = _prolog_start


def _start(job: JobRecord, event: Event) -> State:
    job.started = True
    return job.state


def _finish(job: JobRecord, event: Event) -> State:
    job.finish_status = _context(job, event, "status", int)
    return CLEANUP


def _release(job: JobRecord, event: Event) -> State:
    _context(job, event, "ranks", str)
    final = (event.context or {}).get("final")
    if not isinstance(final, bool):
        raise InvalidTransition(job, event, "context 'final' must be a boolean")
    job.release_final = job.release_final or final
    return job.state


def _free(job: JobRecord, event: Event) -> State:
    job.has_resources = False
    return job.state


def _clean(job: JobRecord, event: Event) -> State:
    job.t_inactive = event.timestamp
    return INACTIVE


def _exception(job: JobRecord, event: Event) -> State:
    severity = _context(job, event, "severity", int, lo=0, hi=SEVERITY_MAX)
    etype = _context(job, event, "type", str)
    if severity == 0:
        if job.state is not CLEANUP:
            job.ended_by_exception = True
        if job.exception is None:
            note = (event.context or {}).get("note", "")
            job.exception = (etype, str(note))
        return CLEANUP
    return job.state


def _memo(job: JobRecord, event: Event) -> State:
    memo = job.memo
    for key, value in (event.context or {}).items():
        if value is None:
            memo.pop(key, None)
        else:
            memo[key] = value
    return job.state


def _jobspec_update(job: JobRecord, event: Event) -> State:
    if not event.context:
        raise InvalidTransition(job, event, "jobspec-update needs at least one key")
    job.jobspec_updates.update(event.context)
    return job.state


def _resource_update(job: JobRecord, event: Event) -> State:
    job.expiration = float(_context(job, event, "expiration", (int, float)))
    return job.state


def _set_flags(job: JobRecord, event: Event) -> State:
    flags = (event.context or {}).get("flags")
    if not isinstance(flags, list) or not all(isinstance(f, str) for f in flags):
        raise InvalidTransition(job, event, "context 'flags' must be a list of names")
    job.flag_names.update(flags)
    return job.state


def _unchanged(job: JobRecord, event: Event) -> State:
    return job.state


def _flux_restart(job: JobRecord, event: Event) -> State:
    # RFC 21: a job waiting for resources goes back to PRIORITY, and a priority
    # event (posted even when the priority is unchanged, a held job's 0 too) takes it out
    return PRIORITY if job.state is SCHED else job.state


ACTIVE_STATES = (NEW, DEPEND, PRIORITY, SCHED, RUN, CLEANUP)
PENDING_STATES = (NEW, DEPEND, PRIORITY, SCHED)


def _table() -> dict[tuple[State, str], Handler]:
    table: dict[tuple[State, str], Handler] = {
        (NEW, "submit"): _submit,
        (NEW, "validate"): _validate,
        (NEW, "invalidate"): _invalidate,
        (DEPEND, "dependency-add"): _dependency_add,
        (DEPEND, "dependency-remove"): _dependency_remove,
        (DEPEND, "depend"): _depend,
        (PRIORITY, "priority"): _priority,
        (SCHED, "priority"): _priority,
        (SCHED, "alloc"): _alloc,
        (CLEANUP, "alloc"): _alloc,  # the scheduler answered just as an exception came
        (RUN, "prolog-start"): _prolog_start,
        (RUN, "prolog-finish"): _perilog_finish,
        (CLEANUP, "prolog-finish"): _perilog_finish,
        (RUN, "start"): _start,
        (CLEANUP, "start"): _start,
        (RUN, "finish"): _finish,
        (CLEANUP, "finish"): _finish,
        (RUN, "release"): _release,
        (CLEANUP, "release"): _release,
        # a running job's duration may be updated (flux update): both events, RUN or CLEANUP
        (RUN, "jobspec-update"): _jobspec_update,
        (CLEANUP, "jobspec-update"): _jobspec_update,
        (RUN, "resource-update"): _resource_update,
        (CLEANUP, "resource-update"): _resource_update,
        (CLEANUP, "epilog-start"): _epilog_start,
        (CLEANUP, "epilog-finish"): _perilog_finish,
        (CLEANUP, "free"): _free,
        (CLEANUP, "clean"): _clean,
    }
    for state in ACTIVE_STATES:
        table[state, "exception"] = _exception
        table[state, "memo"] = _memo
        table[state, "set-flags"] = _set_flags
        table[state, "flux-restart"] = _flux_restart
    for state in PENDING_STATES:
        table[state, "urgency"] = _urgency
        table[state, "jobspec-update"] = _jobspec_update
    return table


TRANSITIONS: dict[tuple[State, str], Handler] = _table()


def apply(job: JobRecord, event: Event) -> State:
    """Apply one event to ``job``; return the state it was in before."""
    old = job.state
    if not job.history and event.name != "submit":
        raise InvalidTransition(job, event, "the first event must be submit")
    handler = TRANSITIONS.get((old, event.name))
    if handler is None:
        if not event.name.startswith("debug.") or old is INACTIVE:
            raise InvalidTransition(job, event, "not a legal transition")
        handler = _unchanged
    job.state = handler(job, event)
    job.history.append(event.name)
    return old
