"""What the job manager does next for a job, decided from its state alone.

After every event the manager asks ``next_actions``; the answer depends only on
the job's replayed state, its run-time flags and whether the scheduler and the
execution service are ready, so the same question after a restart gets the
right answer (flux-core's ``event_job_action`` is the model). Performing an
action sets the flag that stops it being asked for twice.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from pflux.manager.job import Job
from pflux.spec.states import CLEANUP, DEPEND, PRIORITY, RUN, SCHED


class Action(enum.Enum):
    __hash__ = object.__hash__  # Enum's hashes the name in Python, twice per event here

    RUN_DEPENDENCIES = "run dependency plugins"
    POST_DEPEND = "post depend"
    POST_PRIORITY = "post priority"
    ALLOC = "send sched.alloc"
    CANCEL_ALLOC = "send sched.cancel"
    START = "send <exec>.start"
    KILL = "tell exec of the fatal exception"
    FREE = "send sched.free"
    POST_CLEAN = "post clean"


# what the job manager does itself, at once; every other action reaches another service
# and waits until the job's events are committed
INTERNAL = frozenset(
    (Action.RUN_DEPENDENCIES, Action.POST_DEPEND, Action.POST_PRIORITY, Action.POST_CLEAN)
)
# the only states in which ``next_actions`` can answer an internal action
INTERNAL_STATES = (DEPEND, PRIORITY, CLEANUP)


# each action alone, as answers (shared: callers only read them), by plain names: Python
# 3.11 reaches an enum member through its metaclass's hook, 200 ns an access
_NONE: tuple[Action, ...] = ()
_RUN_DEPENDENCIES = (Action.RUN_DEPENDENCIES,)
_POST_DEPEND = (Action.POST_DEPEND,)
_POST_PRIORITY = (Action.POST_PRIORITY,)
_ALLOC = (Action.ALLOC,)
_CANCEL_ALLOC = (Action.CANCEL_ALLOC,)
_START = (Action.START,)


def next_actions(
    job: Job, *, sched_ready: bool, exec_ready: bool, queue_started: bool
) -> Sequence[Action]:
    """The actions due for ``job`` now."""
    state = job.state
    if state is DEPEND:
        if not job.depend_checked:
            return _RUN_DEPENDENCIES
        return _NONE if job.dependencies else _POST_DEPEND
    if state is PRIORITY:
        return _POST_PRIORITY
    if state is SCHED:
        return _sched(job, sched_ready, queue_started)
    if state is RUN:
        ready = exec_ready and not job.start_pending and not job.perilog
        return _START if ready and not job.release_final else _NONE
    if state is CLEANUP:
        return _cleanup(job)
    return _NONE


def _sched(job: Job, sched_ready: bool, queue_started: bool) -> Sequence[Action]:
    wanted = job.priority > 0 and queue_started
    if job.alloc_pending:
        return _NONE if wanted or job.alloc_canceled else _CANCEL_ALLOC
    return _ALLOC if wanted and sched_ready and not job.has_resources else _NONE


def _cleanup(job: Job) -> list[Action]:
    actions: list[Action] = []
    if job.alloc_pending and not job.alloc_canceled:
        actions.append(Action.CANCEL_ALLOC)
    if job.start_pending and not job.exec_killed and job.exception is not None:
        actions.append(Action.KILL)
    busy = job.alloc_pending or job.start_pending or job.perilog
    if job.has_resources and not busy:
        actions.append(Action.FREE)
    elif not job.has_resources and not busy:
        actions.append(Action.POST_CLEAN)
    return actions
