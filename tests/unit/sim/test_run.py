"""How a job runs in simulated time, from its test-mode settings."""

from __future__ import annotations

import math

import pytest

from pflux.errors import PfluxError
from pflux.sim.run import SimRun, plan
from pflux.sim.trace import jobspec_for
from pflux.spec.idset import IdSet


def with_test(jobspec: dict, **test: object) -> dict:  # type: ignore[type-arg]
    jobspec["attributes"]["system"]["exec"]["test"].update(test)
    return jobspec


def test_runs_its_duration_within_its_limit() -> None:
    run = plan(jobspec_for(30.0, 60.0), 1000.0, [0])
    assert run == SimRun(1030.0, 0, (), None)
    assert run.ending(1060.0) == (1030.0, 0, False)
    assert run.ending(0.0) == (1030.0, 0, False)  # no time limit


def test_killed_at_its_expiration_with_sigalrm() -> None:
    assert plan(jobspec_for(90.0, 60.0), 1000.0, [0]).ending(1060.0) == (1060.0, 14, True)


def test_ending_exactly_at_its_expiration_is_no_time_limit() -> None:
    assert plan(jobspec_for(60.0, 60.0), 1000.0, [0]).ending(1060.0) == (1060.0, 0, False)


def test_without_test_settings_it_runs_its_time_limit() -> None:
    jobspec = jobspec_for(5.0, 60.0)
    del jobspec["attributes"]["system"]["exec"]
    assert plan(jobspec, 10.0, [0]).ending(70.0) == (70.0, 0, False)


def test_run_duration_zero_runs_until_killed_or_expired() -> None:
    run = plan(with_test(jobspec_for(1.0, 0.0), run_duration="0s"), 10.0, [0])
    assert run.ending(0.0)[0] == math.inf
    assert run.ending(50.0) == (50.0, 14, True)


def test_wait_status_and_mock_exceptions() -> None:
    assert plan(with_test(jobspec_for(1.0, 0.0), wait_status=256), 0.0, [0]).wait_status == 256
    assert plan(with_test(jobspec_for(1.0, 0.0), mock_exception="init"), 0, [0]).exception
    with pytest.raises(PfluxError, match="override: not supported in a simulation"):
        plan(with_test(jobspec_for(1.0, 0.0), override=1), 0.0, [0])


def test_nodes_whose_time_is_up_first_are_released_first() -> None:
    jobspec = with_test(jobspec_for(10.0, 0.0), node_durations=["2s", "10s", "2s", "4s", "99s"])
    run = plan(jobspec, 100.0, [3, 5, 7, 8, 9])
    assert run.releases == ((102.0, IdSet([3, 7])), (104.0, IdSet([8])))
    assert run.run_end == 110.0
