"""The RFC 26 plugins against a recording host: no instance, every rule checked alone."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pflux.errors import RPCError
from pflux.manager.job import Job
from pflux.manager.plugins.after import After, AfterAny, AfterNotOk, AfterOk
from pflux.manager.plugins.antecedents import Condition, verdict
from pflux.manager.plugins.openmp import Fluid, String
from pflux.manager.plugins.singleton import Singleton
from pflux.spec.eventlog import Event
from pflux.spec.states import State, apply

OWNER, ALICE, BOB = 1000, 2000, 3000


class Host:
    """Posts events for real (through states.apply) and records them."""

    def __init__(self) -> None:
        self.owner = OWNER
        self.jobs: dict[int, Job] = {}
        self.posted: list[tuple[int, str, dict[str, Any] | None]] = []
        self._t = 1000.0

    @property
    def loop(self) -> asyncio.AbstractEventLoop:  # pragma: no cover - unused here
        raise NotImplementedError

    def post(self, job: Job, name: str, context: dict[str, Any] | None = None) -> None:
        self._t += 1
        apply(job, Event(self._t, name, context))
        self.posted.append((job.id, name, context))

    def raise_exception(self, job: Job, etype: str, note: str, severity: int = 0) -> None:
        self.post(job, "exception", {"type": etype, "severity": severity, "note": note})

    def dependency_add(self, job: Job, description: str) -> bool:
        if description in job.dependencies:
            return False
        self.post(job, "dependency-add", {"description": description})
        return True

    def dependency_remove(self, job: Job, description: str) -> None:
        self.post(job, "dependency-remove", {"description": description})

    def lookup(self, jobid: int) -> Job | None:
        return self.jobs.get(jobid)

    def job(self, jobid: int, userid: int = ALICE, *events: str, **ctx: Any) -> Job:
        job = Job(jobid)
        self.jobs[jobid] = job
        self.post(job, "submit", {"urgency": 16, "userid": userid, "flags": 0, "version": 1})
        for name in events:
            self.post(job, name, ctx.get(name.replace("-", "_")))
        return job


RUN = ("validate", "depend", "priority", "alloc", "start")
DONE = (*RUN, "finish", "release", "free", "clean")
PRIO = {"priority": {"priority": 1}}


def test_verdicts_follow_flux_core() -> None:
    host = Host()
    release = {"ranks": "all", "final": True}
    ok = host.job(1, ALICE, *DONE, finish={"status": 0}, release=release, **PRIO)
    bad = host.job(2, ALICE, *DONE, finish={"status": 256}, release=release, **PRIO)
    never = host.job(
        3,
        ALICE,
        "validate",
        "exception",
        "clean",
        exception={"type": "cancel", "severity": 0, "note": ""},
    )
    assert verdict(Condition.SUCCESS, ok) is None
    assert verdict(Condition.SUCCESS, bad) == "can never be satisfied"
    assert verdict(Condition.FAILURE, bad) is None
    assert verdict(Condition.FAILURE, ok) == "can never be satisfied"
    assert verdict(Condition.FINISH, never) is None
    assert verdict(Condition.SUCCESS, never) == "job never started"
    assert verdict(Condition.FAILURE, never) == "job never started"
    assert verdict(Condition.START, never) == "job never started"


def test_another_users_job_is_refused_unless_the_owner_submits() -> None:
    host = Host()
    host.job(1, BOB, *RUN, **PRIO)
    alice = host.job(2, ALICE)
    owner = host.job(3, OWNER)
    plugin = AfterOk(host)
    with pytest.raises(RPCError, match="afterok: Permission denied for job 1"):
        plugin.validate_dependency(alice, {"scheme": "afterok", "value": "1"})
    plugin.validate_dependency(owner, {"scheme": "afterok", "value": "1"})


@pytest.mark.parametrize("plugin", [After, AfterAny, AfterOk, AfterNotOk])
def test_unparsable_and_unknown_ids(plugin: type[After]) -> None:
    host = Host()
    job = host.job(5)
    scheme = plugin.schemes[0]
    with pytest.raises(RPCError, match=f'dependency: {scheme}: "bar" is not a valid jobid'):
        plugin(host).validate_dependency(job, {"scheme": scheme, "value": "bar"})
    with pytest.raises(RPCError, match=f"dependency: {scheme}: id 99: job not found"):
        plugin(host).validate_dependency(job, {"scheme": scheme, "value": "99"})


def test_edges_settle_when_the_antecedent_finishes() -> None:
    host = Host()
    a = host.job(1, ALICE, *RUN, **PRIO)
    b = host.job(2, ALICE, "validate")
    plugin = AfterOk(host)
    plugin.depend(b, {"scheme": "afterok", "value": "1"})
    assert b.dependencies == {"after-success=1": None}
    for name, ctx in (
        ("finish", {"status": 0}),
        ("release", {"ranks": "all", "final": True}),
        ("free", None),
        ("clean", None),
    ):
        host.post(a, name, ctx)
    plugin.event(a, Event(2000.0, "clean"))
    assert not b.dependencies
    assert b.satisfied == {"after-success=1"}


def test_a_restart_reacquires_without_duplicate_adds() -> None:
    host = Host()
    host.job(1, ALICE, *RUN, **PRIO)
    b = host.job(
        2, ALICE, "validate", "dependency-add", dependency_add={"description": "after-success=1"}
    )
    before = len(host.posted)
    AfterOk(host).depend(b, {"scheme": "afterok", "value": "1"})  # as after a restart
    assert len(host.posted) == before  # nothing posted twice


def test_global_out_is_the_owners_alone() -> None:
    host = Host()
    alice = host.job(1, ALICE)
    owner = host.job(2, OWNER)
    plugin = String(host)
    with pytest.raises(RPCError, match="only the instance owner may declare out in scope global"):
        plugin.validate_dependency(
            alice, {"scheme": "string", "value": "x", "type": "out", "scope": "global"}
        )
    plugin.validate_dependency(
        alice, {"scheme": "string", "value": "x", "type": "in", "scope": "global"}
    )
    plugin.validate_dependency(
        owner, {"scheme": "string", "value": "x", "type": "inout", "scope": "global"}
    )


def test_string_user_scope_separates_users() -> None:
    host = Host()
    plugin = String(host)
    producer = host.job(1, BOB, "validate")
    plugin.depend(producer, {"scheme": "string", "value": "A", "type": "out", "scope": "user"})
    consumer = host.job(2, ALICE, "validate")
    plugin.depend(consumer, {"scheme": "string", "value": "A", "type": "in", "scope": "user"})
    assert not consumer.dependencies  # Bob's A is not in Alice's scope
    bobs = host.job(3, BOB, "validate")
    plugin.depend(bobs, {"scheme": "string", "value": "A", "type": "in", "scope": "user"})
    assert list(bobs.dependencies) == ["string-in=A@ƒ2"]


def test_a_producer_submitted_later_is_not_an_antecedent() -> None:
    host = Host()
    plugin = String(host)
    later = host.job(9, ALICE, *RUN, **PRIO)
    plugin.restarted(later)  # a producer past DEPEND, registered at restart
    later.jobspec = None
    consumer = host.job(4, ALICE, "validate")
    plugin.depend(consumer, {"scheme": "string", "value": "A", "type": "in", "scope": "user"})
    assert not consumer.dependencies


def test_fluid_scope_user_needs_the_users_own_job() -> None:
    host = Host()
    host.job(1, BOB, *RUN, **PRIO)
    alice = host.job(2, ALICE)
    with pytest.raises(RPCError, match="not in scope user"):
        Fluid(host).validate_dependency(
            alice, {"scheme": "fluid", "value": "1", "type": "in", "scope": "user"}
        )
    Fluid(host).validate_dependency(
        alice, {"scheme": "fluid", "value": "1", "type": "in", "scope": "global"}
    )
    assert host.jobs[1].state is State.RUN


class DeferringHost(Host):
    """A host whose loop only records what is deferred, run when the test says."""

    def __init__(self) -> None:
        super().__init__()
        self.deferred: list[Any] = []

    @property
    def loop(self) -> Any:
        return self

    def call_soon(self, fn: Any, *args: Any) -> None:
        self.deferred.append((fn, args))

    def run_deferred(self) -> None:
        calls, self.deferred = self.deferred, []
        for fn, args in calls:
            fn(*args)


def named(host: Host, jobid: int, name: str, *events: str, **ctx: Any) -> Job:
    job = host.job(jobid, ALICE, *events, **ctx)
    job.jobspec = {"attributes": {"system": {"job": {"name": name}}}}
    return job


SINGLETON = {"scheme": "singleton", "value": ""}
HELD = {"dependency_add": {"description": "singleton"}}


def test_singletons_held_at_a_restart_wait_until_every_job_is_counted() -> None:
    host = DeferringHost()
    plugin = Singleton(host)
    running = named(host, 1, "x", *RUN, **PRIO)
    first = named(host, 2, "x", "validate", "dependency-add", **HELD)
    second = named(host, 3, "x", "validate", "dependency-add", **HELD)
    # the job manager's order: a held job's dependencies are taken up as it is restarted
    for job in (first, running, second):
        if job.state is State.DEPEND:
            plugin.depend(job, SINGLETON)
        plugin.restarted(job)
    posted = len(host.posted)
    host.run_deferred()
    assert len(host.posted) == posted  # the running job, counted, holds both
    release = {"ranks": "all", "final": True}
    for name, ctx in [("finish", {"status": 0}), ("release", release), ("free", None)]:
        host.post(running, name, ctx)
    host.post(running, "clean")
    plugin.event(running, Event(2000.0, "clean", None))
    assert host.posted[-1] == (2, "dependency-remove", {"description": "singleton"})
    assert second.state is State.DEPEND


def test_singleton_alone_runs_at_once_and_needs_a_name() -> None:
    host = Host()
    plugin = Singleton(host)
    alone = named(host, 1, "y")
    plugin.validate(alone)
    host.post(alone, "validate")
    plugin.depend(alone, SINGLETON)
    assert "dependency-add" not in [name for _, name, _ in host.posted]
    nameless = host.job(2, ALICE)
    with pytest.raises(RPCError, match="singleton jobs require a job name"):
        plugin.validate_dependency(nameless, SINGLETON)
