"""TimedBatch: a batch flushed when full, when its time comes, or when its owner says."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pflux.broker import timedbatch
from pflux.broker.timedbatch import TimedBatch


class Timer:
    def __init__(self, delay: float, fn: Callable[[], None]) -> None:
        self.delay, self.fn, self.cancelled = delay, fn, False

    def cancel(self) -> None:
        self.cancelled = True


class Loop:
    """call_later's timers, fired by the test."""

    def __init__(self) -> None:
        self.timers: list[Timer] = []

    def call_later(self, delay: float, fn: Callable[[], None]) -> Timer:
        self.timers.append(Timer(delay, fn))
        return self.timers[-1]

    def live(self) -> list[Timer]:
        return [timer for timer in self.timers if not timer.cancelled]


def batch(**kwargs: Any) -> tuple[TimedBatch, Loop, list[int]]:
    loop, flushed = Loop(), []
    timed = TimedBatch(
        SimpleNamespace(loop=loop),  # type: ignore[arg-type]
        lambda: flushed.append(1),
        **{"delay": 1.0, "limit": 10, **kwargs},
    )
    return timed, loop, flushed


def test_a_full_batch_goes_at_once_and_its_timer_is_forgotten() -> None:
    timed, loop, flushed = batch()
    timed.grew(3)
    assert flushed == []
    assert [t.delay for t in loop.live()] == [1.0]
    timed.grew(10)
    assert flushed == [1]
    assert loop.live() == []


def test_a_batch_goes_when_its_time_comes_with_one_timer() -> None:
    timed, loop, flushed = batch()
    for size in (1, 2, 3):
        timed.grew(size)
    (timer,) = loop.live()
    timer.fn()
    assert flushed == [1]
    timed.grew(1)  # a new batch: a new timer
    assert len(loop.timers) == 2
    assert len(loop.live()) == 1


def test_flush_and_cancel_forget_the_timer() -> None:
    timed, loop, flushed = batch()
    timed.grew(1)
    timed.flush()
    assert flushed == [1]
    assert loop.live() == []
    timed.grew(1)
    timed.cancel()
    assert flushed == [1]
    assert loop.live() == []


def test_nothing_gathered_sets_no_timer() -> None:
    timed, loop, flushed = batch()
    timed.grew(0)
    assert flushed == []
    assert loop.timers == []


def test_after_quiet_the_first_goes_at_once_the_next_waits_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [100.0]
    monkeypatch.setattr(timedbatch.time, "monotonic", lambda: now[0])
    timed, loop, flushed = batch(after_quiet=True)
    timed.grew(1)
    assert flushed == [1]
    assert loop.timers == []
    now[0] += 0.25
    timed.grew(1)
    assert flushed == [1]
    assert [t.delay for t in loop.live()] == [0.75]
    now[0] += 2.0
    timed.grew(2)  # the timer is set: it sends these too
    assert flushed == [1]


@given(st.lists(st.integers(1, 30), max_size=30))
def test_never_more_than_limit_waits_and_every_wait_has_a_timer(sizes: list[int]) -> None:
    timed, loop, flushed = batch()
    held = 0
    for size in sizes:
        before = len(flushed)
        timed.grew(size)
        if size >= 10:
            assert len(flushed) == before + 1
            assert loop.live() == []
            held = 0
        else:
            held = size
        assert (len(loop.live()) == 1) == (held > 0)
