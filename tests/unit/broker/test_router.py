"""The broker's run queue: work in order, a turn at a time, and end-of-turn flushes."""

from __future__ import annotations

import asyncio

import pytest

from pflux.broker.router import RunQueue


def run(scenario: object) -> None:
    asyncio.run(scenario)  # type: ignore[arg-type]


def test_work_queued_during_a_turn_waits_for_the_next() -> None:
    async def scenario() -> None:
        queue = RunQueue(asyncio.get_running_loop())
        log: list[str] = []
        turns: list[int] = []

        def first() -> None:
            log.append("first")
            queue.push(log.append, "queued by first")  # never inside first's call stack
            log.append("first done")

        queue.push(first)
        queue.push(log.append, "second")
        queue.at_end(lambda: turns.append(len(log)))
        await asyncio.sleep(0)
        assert log == ["first", "first done", "second"]
        assert turns == [3]  # the flush ran after the turn's work, in the same turn
        await asyncio.sleep(0)
        assert log[-1] == "queued by first"

    run(scenario())


def test_a_flush_asked_for_outside_a_turn_gets_one() -> None:
    async def scenario() -> None:
        queue = RunQueue(asyncio.get_running_loop())
        done = asyncio.Event()
        queue.at_end(done.set)
        await asyncio.wait_for(done.wait(), 1)
        assert done.is_set()

    run(scenario())


def test_flushes_asked_for_by_flushes_run_in_the_same_turn() -> None:
    async def scenario() -> None:
        queue = RunQueue(asyncio.get_running_loop())
        log: list[str] = []

        def outer() -> None:
            log.append("outer")
            queue.at_end(lambda: log.append("inner"))
            queue.push(log.append, "next turn")

        queue.at_end(outer)
        await asyncio.sleep(0)
        assert log == ["outer", "inner"]
        await asyncio.sleep(0)
        assert log == ["outer", "inner", "next turn"]

    run(scenario())


def test_a_failing_item_or_flush_is_logged_and_the_rest_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario() -> None:
        queue = RunQueue(asyncio.get_running_loop())
        log: list[str] = []

        def boom() -> None:
            raise RuntimeError("boom")

        queue.push(boom)
        queue.push(log.append, "after")
        queue.at_end(boom)
        queue.at_end(lambda: log.append("flushed"))
        await asyncio.sleep(0)
        assert log == ["after", "flushed"]

    run(scenario())
    assert caplog.text.count("boom") >= 2
