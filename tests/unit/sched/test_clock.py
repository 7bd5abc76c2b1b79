"""The scheduler's clock: real time by default, the simulator's with [simulator]."""

from __future__ import annotations

import time

import pytest

from pflux.sched.clock import Clock, SimulatedClock, clock_for


def test_real_clock_is_the_time_of_day() -> None:
    clock = clock_for({})
    assert type(clock) is Clock
    assert not clock.simulated
    before = time.time()
    assert before <= clock.now() <= time.time()


def test_simulated_clock_moves_only_when_set_and_never_back() -> None:
    clock = clock_for({"simulator": {"trace": "t.jsonl"}})
    assert isinstance(clock, SimulatedClock)
    assert clock.simulated
    clock.set(1000.5)
    assert clock.now() == 1000.5
    clock.set(1000.5)  # the same instant again is fine
    with pytest.raises(ValueError, match=r"cannot go back from 1000\.5 to 999\.0"):
        clock.set(999.0)
    assert clock.now() == 1000.5
