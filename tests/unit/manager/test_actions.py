"""What the job manager does next, decided from a job's state and flags alone."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pflux.manager import actions, progress
from pflux.manager.actions import INTERNAL, INTERNAL_STATES, Action
from pflux.manager.job import Job
from pflux.spec.eventlog import Event
from pflux.spec.states import State, apply

READY = {"sched_ready": True, "exec_ready": True, "queue_started": True}
SUBMIT = {"urgency": 16, "userid": 1, "flags": 0, "version": 1}


def next_actions(job: Job, **flags: bool) -> list[Action]:
    """The answer as a list, to compare with one (the module answers shared tuples)."""
    return list(actions.next_actions(job, **flags))


def job_in(*names: str, **contexts: dict[str, object]) -> Job:
    job = Job(1)
    for i, name in enumerate(("submit", *names)):
        context = contexts.get(name.replace("-", "_"), SUBMIT if name == "submit" else None)
        apply(job, Event(100.0 + i, name, context))
    return job


PRIORITY = {"priority": {"priority": 16}}


def test_depend_runs_plugins_once_then_posts_depend() -> None:
    job = job_in("validate")
    assert next_actions(job, **READY) == [Action.RUN_DEPENDENCIES]
    job.depend_checked = True
    assert next_actions(job, **READY) == [Action.POST_DEPEND]
    job.dependencies["x"] = None
    assert next_actions(job, **READY) == []


def test_priority_state_asks_for_a_priority() -> None:
    assert next_actions(job_in("validate", "depend"), **READY) == [Action.POST_PRIORITY]


def test_sched_allocates_only_when_everything_is_ready() -> None:
    job = job_in("validate", "depend", "priority", **PRIORITY)
    assert next_actions(job, **READY) == [Action.ALLOC]
    assert next_actions(job, **{**READY, "sched_ready": False}) == []
    assert next_actions(job, **{**READY, "queue_started": False}) == []
    job.alloc_pending = True
    assert next_actions(job, **READY) == []


def test_held_job_is_not_allocated_and_a_pending_alloc_is_canceled() -> None:
    job = job_in("validate", "depend", "priority", priority={"priority": 0})
    assert next_actions(job, **READY) == []
    job.alloc_pending = True
    assert next_actions(job, **READY) == [Action.CANCEL_ALLOC]
    job.alloc_canceled = True
    assert next_actions(job, **READY) == []


def test_run_starts_once_exec_is_ready_and_no_prolog_runs() -> None:
    job = job_in("validate", "depend", "priority", "alloc", **PRIORITY)
    assert next_actions(job, **READY) == [Action.START]
    assert next_actions(job, **{**READY, "exec_ready": False}) == []
    job.perilog["prolog"] = None
    assert next_actions(job, **READY) == []


def test_cleanup_kills_then_frees_then_cleans() -> None:
    job = job_in("validate", "depend", "priority", "alloc", **PRIORITY)
    job.start_pending = True
    apply(job, Event(200.0, "exception", {"type": "cancel", "severity": 0, "note": ""}))
    assert next_actions(job, **READY) == [Action.KILL]
    job.exec_killed = True
    assert next_actions(job, **READY) == []
    job.start_pending = False
    assert next_actions(job, **READY) == [Action.FREE]
    apply(job, Event(201.0, "free"))
    assert next_actions(job, **READY) == [Action.POST_CLEAN]


def test_cleanup_cancels_a_pending_alloc_before_cleaning() -> None:
    job = job_in("validate", "depend", "priority", **PRIORITY)
    job.alloc_pending = True
    apply(job, Event(200.0, "exception", {"type": "cancel", "severity": 0, "note": ""}))
    assert next_actions(job, **READY) == [Action.CANCEL_ALLOC]
    job.alloc_canceled = True
    assert next_actions(job, **READY) == []
    job.alloc_pending = False
    assert next_actions(job, **READY) == [Action.POST_CLEAN]


def test_inactive_and_new_jobs_need_nothing() -> None:
    assert next_actions(job_in(), **READY) == []
    assert next_actions(job_in("invalidate"), **READY) == []
    assert job_in("invalidate").state is State.INACTIVE


FLAGS = (
    "depend_checked", "alloc_pending", "alloc_canceled", "has_resources",
    "start_pending", "release_final", "exec_killed",
)  # fmt: skip


JOBS = st.fixed_dictionaries(
    {
        "state": st.sampled_from([State(1 << i) for i in range(7)]),
        "flags": st.fixed_dictionaries({flag: st.booleans() for flag in FLAGS}),
        "dependencies": st.sampled_from([{}, {"after:1": None}]),
        "perilog": st.sampled_from([{}, {"prolog": None}]),
        "exception": st.sampled_from([None, ("cancel", "")]),
        "priority": st.sampled_from([0, 16]),
    }
)


@given(fields=JOBS, ready=st.fixed_dictionaries({key: st.booleans() for key in READY}))
def test_only_the_internal_states_have_internal_actions(
    fields: dict[str, Any], ready: dict[str, bool]
) -> None:
    """The job manager skips asking after an event in any other state (``JobManager.post``)."""
    job = Job(1)
    for name, value in {**fields.pop("flags"), **fields}.items():
        setattr(job, name, value)
    internal = [action for action in next_actions(job, **ready) if action in INTERNAL]
    assert job.state in INTERNAL_STATES or internal == []


def test_the_internal_actions_are_those_the_manager_does_itself() -> None:
    assert set(progress._INTERNAL) == INTERNAL
    assert not set(progress._EXTERNAL) & INTERNAL
    assert set(progress._INTERNAL) | set(progress._EXTERNAL) == set(Action)
