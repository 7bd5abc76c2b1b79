"""RFC 21's state machine, fed events directly: no daemon, no I/O."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.manager.job import Job
from pflux.spec.eventlog import Event
from pflux.spec.results import CANCELED, COMPLETED, FAILED, TIMEOUT
from pflux.spec.states import TRANSITIONS, InvalidTransition, State, apply

S = State
SUBMIT = {"urgency": 16, "userid": 1000, "flags": 0, "version": 1}

# every event RFC 21 names, with a valid context
CONTEXTS: dict[str, dict[str, Any] | None] = {
    "submit": SUBMIT,
    "validate": None,
    "invalidate": None,
    "dependency-add": {"description": "after-finish=ƒ2"},
    "dependency-remove": {"description": "after-finish=ƒ2"},
    "depend": None,
    "priority": {"priority": 42},
    "urgency": {"urgency": 0, "userid": 1000},
    "alloc": {"annotations": {"sched.resource_summary": "rank0/core0"}},
    "prolog-start": {"description": "prolog"},
    "prolog-finish": {"description": "prolog", "status": 0},
    "start": None,
    "finish": {"status": 0},
    "release": {"ranks": "all", "final": True},
    "epilog-start": {"description": "epilog"},
    "epilog-finish": {"description": "epilog", "status": 0},
    "free": None,
    "clean": None,
    "exception": {"type": "cancel", "severity": 0, "note": ""},
    "memo": {"key": "value"},
    "jobspec-update": {"attributes.system.duration": 60},
    "resource-update": {"expiration": 1692206240},
    "set-flags": {"flags": ["debug"]},
    "flux-restart": None,
    "debug.free-request": None,
}

_clock = iter(range(1, 10**9))


def ev(name: str, context: dict[str, Any] | None = None, **kw: Any) -> Event:
    ctx = dict(CONTEXTS[name] or {}) if context is None else context
    ctx.update(kw)
    return Event(1000.0 + next(_clock), name, ctx or None)


def run(*names: str) -> Job:
    job = Job(1)
    for name in names:
        apply(job, ev(name))
    return job


LIFECYCLE = (
    "submit",
    "validate",
    "depend",
    "priority",
    "alloc",
    "start",
    "finish",
    "release",
    "free",
    "clean",
)


def test_lifecycle_visits_every_state_in_order() -> None:
    job = Job(1)
    seen = []
    for name in LIFECYCLE:
        apply(job, ev(name))
        seen.append(job.state)
    assert seen == [
        S.NEW,
        S.DEPEND,
        S.PRIORITY,
        S.SCHED,
        S.RUN,
        S.RUN,
        S.CLEANUP,
        S.CLEANUP,
        S.CLEANUP,
        S.INACTIVE,
    ]
    assert job.result == COMPLETED
    assert job.success


def test_virtual_states_are_unions() -> None:
    assert S.PENDING == S.DEPEND | S.PRIORITY | S.SCHED
    assert S.RUNNING == S.RUN | S.CLEANUP
    assert S.ACTIVE == S.PENDING | S.RUNNING
    assert S.NEW not in S.ACTIVE
    assert S.INACTIVE not in S.ACTIVE
    assert [S.parse(t) for t in ("pending", "R", "inactive")] == [S.PENDING, S.RUN, S.INACTIVE]


def test_state_values_match_flux_core() -> None:
    assert [int(s) for s in (S.NEW, S.DEPEND, S.PRIORITY, S.SCHED, S.RUN, S.CLEANUP)] == [
        1,
        2,
        4,
        8,
        16,
        32,
    ]
    assert int(S.INACTIVE) == 64


def test_first_event_must_be_submit() -> None:
    with pytest.raises(InvalidTransition, match="first event must be submit"):
        apply(Job(1), ev("validate"))


def test_submit_twice_is_illegal() -> None:
    with pytest.raises(InvalidTransition):
        run("submit", "submit")


@pytest.mark.parametrize(
    "prefix",
    [
        ("submit",),
        ("submit", "validate"),
        ("submit", "validate", "depend"),
        ("submit", "validate", "depend", "priority"),
        ("submit", "validate", "depend", "priority", "alloc"),
        ("submit", "validate", "depend", "priority", "alloc", "start", "finish"),
    ],
)
def test_fatal_exception_goes_to_cleanup_from_any_active_state(prefix: tuple[str, ...]) -> None:
    job = run(*prefix)
    apply(job, ev("exception", type="cancel", severity=0, note="bye"))
    assert job.state is S.CLEANUP
    assert job.exception == ("cancel", "bye")


@pytest.mark.parametrize("severity", range(1, 8))
def test_non_fatal_exception_changes_no_state(severity: int) -> None:
    job = run("submit", "validate", "depend", "priority")
    apply(job, ev("exception", type="oom", severity=severity, note=""))
    assert job.state is S.SCHED
    assert job.exception is None


def test_severity_out_of_range_is_refused() -> None:
    job = run("submit")
    with pytest.raises(InvalidTransition, match="severity"):
        apply(job, ev("exception", type="x", severity=8, note=""))


def test_urgency_in_sched_goes_back_through_priority() -> None:
    job = run("submit", "validate", "depend", "priority")
    apply(job, ev("urgency", urgency=31, userid=1))
    assert job.state is S.PRIORITY
    assert job.urgency == 31
    apply(job, ev("priority", priority=4294967295))
    assert (job.state, job.priority) == (S.SCHED, 4294967295)


def test_flux_restart_returns_a_waiting_job_to_priority() -> None:
    held = run("submit", "validate", "depend")
    apply(held, ev("priority", priority=0))
    apply(held, ev("flux-restart"))
    assert held.state is S.PRIORITY  # and a priority event, even the same 0, takes it out
    apply(held, ev("priority", priority=0))
    assert held.state is S.SCHED
    for prefix, state in [(("submit", "validate"), S.DEPEND), (LIFECYCLE[:6], S.RUN)]:
        job = run(*prefix)
        apply(job, ev("flux-restart"))
        assert job.state is state


def test_urgency_after_alloc_is_illegal() -> None:
    job = run("submit", "validate", "depend", "priority", "alloc")
    with pytest.raises(InvalidTransition):
        apply(job, ev("urgency"))


def test_dependencies_must_be_removed_before_depend() -> None:
    job = run("submit", "validate")
    apply(job, ev("dependency-add", description="a"))
    apply(job, ev("dependency-add", description="b"))
    assert list(job.dependencies) == ["a", "b"]
    with pytest.raises(InvalidTransition, match="dependencies remain"):
        apply(job, ev("depend"))
    apply(job, ev("dependency-remove", description="a"))
    apply(job, ev("dependency-remove", description="b"))
    apply(job, ev("depend"))
    assert job.state is S.PRIORITY
    assert job.satisfied == {"a", "b"}


def test_dependency_remove_must_match_an_add() -> None:
    job = run("submit", "validate")
    with pytest.raises(InvalidTransition, match="no dependency"):
        apply(job, ev("dependency-remove", description="nope"))


def test_memo_null_removes_a_key() -> None:
    job = run("submit")
    apply(job, ev("memo", {"a": 1, "b": 2}))
    apply(job, ev("memo", {"a": None, "c": 3}))
    assert job.memo == {"b": 2, "c": 3}


def test_jobspec_update_while_active_not_after() -> None:
    job = run("submit", "validate", "depend", "priority")
    apply(job, ev("jobspec-update"))
    assert job.jobspec_updates == {"attributes.system.duration": 60}
    apply(job, ev("alloc"))
    apply(job, ev("jobspec-update", {"attributes.system.duration": 90}))  # a running job's
    assert job.jobspec_updates == {"attributes.system.duration": 90}
    for name in ("exception", "jobspec-update", "resource-update", "clean"):
        apply(job, ev(name))
    with pytest.raises(InvalidTransition):
        apply(job, ev("jobspec-update"))


def test_prolog_and_epilog_bracket_their_actions() -> None:
    job = run("submit", "validate", "depend", "priority", "alloc", "prolog-start")
    assert job.perilog == {"prolog": None}
    apply(job, ev("prolog-finish"))
    assert job.perilog == {}
    for name in ("start", "finish", "release", "epilog-start"):
        apply(job, ev(name))
    assert job.perilog == {"epilog": None}
    apply(job, ev("epilog-finish"))
    assert not job.perilog


def test_resource_update_sets_expiration_while_running() -> None:
    job = run("submit", "validate", "depend", "priority", "alloc")
    apply(job, ev("resource-update", expiration=2000))
    assert job.expiration == 2000.0


def test_set_flags_and_debug_events() -> None:
    job = run("submit", "validate")
    apply(job, ev("set-flags", flags=["debug", "waitable"]))
    apply(job, Event(2000.0, "debug.anything"))
    assert job.flag_names == {"debug", "waitable"}
    assert job.state is S.DEPEND


def test_invalidate_ends_a_new_job() -> None:
    job = run("submit", "invalidate")
    assert job.state is S.INACTIVE


@pytest.mark.parametrize("name", sorted(CONTEXTS))
def test_nothing_is_legal_once_inactive(name: str) -> None:
    job = run(*LIFECYCLE)
    with pytest.raises(InvalidTransition, match="INACTIVE"):
        apply(job, ev(name))


def test_invalid_transition_carries_the_story() -> None:
    job = run("submit", "validate")
    with pytest.raises(InvalidTransition) as info:
        apply(job, ev("clean"))
    assert info.value.history == ["submit", "validate"]
    assert "submit validate" in str(info.value)


def test_table_names_only_rfc21_events_and_real_states() -> None:
    events = {name for _, name in TRANSITIONS}
    assert events <= set(CONTEXTS)
    assert set(CONTEXTS) - events == {"debug.free-request"}  # debug.* is matched by prefix
    assert all(state in S.ACTIVE or state is S.NEW for state, _ in TRANSITIONS)


@pytest.mark.parametrize(
    ("events", "result"),
    [
        (LIFECYCLE, COMPLETED),
        (("submit", "validate", "exception", "clean"), CANCELED),
    ],
)
def test_results(events: tuple[str, ...], result: str) -> None:
    assert run(*events).result == result


@pytest.mark.parametrize(
    ("etype", "status", "result", "errstr"),
    [
        ("timelimit", 0, TIMEOUT, "Fatal exception type=timelimit t"),
        ("exec", 0, FAILED, "Fatal exception type=exec t"),
        (None, 256, FAILED, "task(s) exited with exit code 1"),
        (None, (128 + 9) << 8, FAILED, "task(s) Killed"),
        (None, 9, FAILED, "job shell Killed"),
    ],
)
def test_failure_results(etype: str | None, status: int, result: str, errstr: str) -> None:
    job = run("submit", "validate", "depend", "priority", "alloc", "start")
    if etype:
        apply(job, ev("exception", type=etype, severity=0, note="t"))
    apply(job, ev("finish", status=status))
    for name in ("release", "free", "clean"):
        apply(job, ev(name))
    assert job.result == result
    assert job.error_text() == errstr


# --- replay: random walks through the table reproduce the same job --------------------


def _legal_next(job: Job) -> list[tuple[str, dict[str, Any] | None]]:
    """Events the table accepts now, with contexts that keep the walk sane."""
    options = []
    for (state, name), _ in TRANSITIONS.items():
        if state is not job.state or (name == "submit" and job.history):
            continue
        context = dict(CONTEXTS[name] or {}) or None
        if name == "depend" and job.dependencies:
            continue
        if name == "dependency-remove":
            if not job.dependencies:
                continue
            context = {"description": next(iter(job.dependencies))}
        if name == "dependency-add":
            context = {"description": f"dep{len(job.history)}"}
        options.append((name, context))
    return options


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_replay_reproduces_the_live_state(data: st.DataObject) -> None:
    live = Job(7)
    log: list[str] = []
    submit = ev("submit")
    apply(live, submit)
    log.append(submit.to_line())
    for _ in range(data.draw(st.integers(0, 40))):
        options = _legal_next(live)
        if not options:
            break
        name, context = data.draw(st.sampled_from(options))
        event = Event(1000.0 + len(log), name, context)
        apply(live, event)
        log.append(event.to_line())
    replayed = Job(7)
    for line in log:
        apply(replayed, Event.from_line(line))
    fields = [f for f in Job.__slots__ if f not in ("waiters",)]
    assert {f: getattr(replayed, f) for f in fields} == {f: getattr(live, f) for f in fields}
