"""The offline replay: the scheduler's own pool and policy over a trace, with no instance."""

from __future__ import annotations

from typing import Any

from pflux.sim.replay import TraceOutcome, replay
from pflux.sim.trace import TraceJob, jobspec_for
from pflux.spec.idset import IdSet
from pflux.spec.resource import ResourceSet, Target

EPOCH = 1_000_000.0


def nodes(count: int, cores: int) -> ResourceSet:
    ids = IdSet.range(0, cores - 1)
    return ResourceSet({rank: Target(f"n{rank}", ids, IdSet()) for rank in range(count)})


def job(index: int, submit: float, run: float, limit: float | None = None, **kw: Any) -> TraceJob:
    test = kw.pop("test", {})
    jobspec = jobspec_for(run, run if limit is None else limit, **kw)
    jobspec["attributes"]["system"]["exec"]["test"].update(test)
    return TraceJob(index, submit, jobspec)


def starts(outcome: dict[int, TraceOutcome]) -> dict[int, float | None]:
    return {i: None if o.start is None else o.start - EPOCH for i, o in outcome.items()}


def test_easy_backfill_around_a_reservation() -> None:
    trace = [
        job(0, 0, 40, ntasks=6),  # rank 0 whole and two cores of rank 1
        job(1, 0, 20, ntasks=4),  # blocked: reserved at 40 (rank 0, worst fit)
        job(2, 0, 20, ntasks=2),  # ends by 40: backfills at once
        job(3, 0, 60, ntasks=1),  # too long for the reservation's cores: waits for a free core
        job(4, 10, 10, ntasks=1),  # short: backfills when job 2 ends
    ]
    outcome = replay(trace, nodes(2, 4), epoch=EPOCH)
    assert starts(outcome) == {0: 0.0, 1: 40.0, 2: 0.0, 3: 20.0, 4: 20.0}
    assert outcome[3].end == EPOCH + 80.0
    assert outcome[4].end == EPOCH + 30.0


def test_time_limits_kill_and_unsatisfiable_jobs_never_start() -> None:
    trace = [
        job(0, 0, 100, 30, ntasks=8),  # killed at its limit
        job(1, 5, 10, ntasks=8),
        job(2, 5, 10, ntasks=9),  # more than the pool: denied
    ]
    outcome = replay(trace, nodes(2, 4), epoch=EPOCH)
    assert outcome[0] == TraceOutcome(EPOCH, EPOCH + 30)
    assert starts(outcome) == {0: 0.0, 1: 30.0, 2: None}


def test_a_node_released_early_starts_a_waiting_job_before_the_first_ends() -> None:
    trace = [
        job(0, 0, 50, nodes=2, ntasks=2, cores_per_task=4, test={"node_durations": ["10s"]}),
        job(1, 1, 5, nodes=1, ntasks=1, cores_per_task=4),
    ]
    outcome = replay(trace, nodes(2, 4), epoch=EPOCH)
    assert starts(outcome) == {0: 0.0, 1: 10.0}
    assert outcome[0].end == EPOCH + 50


def test_a_job_killed_as_it_starts_gives_its_resources_back_at_once() -> None:
    trace = [
        job(0, 0, 50, ntasks=8, test={"mock_exception": "run"}),
        job(1, 0, 5, ntasks=8),
        job(2, 0, 5, ntasks=8, test={"mock_exception": "init"}),
    ]
    outcome = replay(trace, nodes(2, 4), epoch=EPOCH)
    assert outcome[0] == TraceOutcome(EPOCH, EPOCH)
    assert starts(outcome) == {0: 0.0, 1: 0.0, 2: None}
    assert outcome[1].end == EPOCH + 5


def test_priority_beats_submit_order() -> None:
    trace = [job(0, 0, 10, ntasks=8), job(1, 1, 10, ntasks=8), job(2, 2, 10, ntasks=8)]
    trace[2] = TraceJob(2, 2, trace[2].jobspec, urgency=31)
    assert starts(replay(trace, nodes(2, 4), epoch=EPOCH)) == {0: 0.0, 1: 20.0, 2: 10.0}


def test_a_node_due_after_the_time_limit_goes_with_the_job() -> None:
    trace = [job(0, 0, 50, 15, nodes=2, ntasks=2, test={"node_durations": ["20s"]})]
    outcome = replay(trace, nodes(2, 4), epoch=EPOCH)
    assert outcome[0] == TraceOutcome(EPOCH, EPOCH + 15)
