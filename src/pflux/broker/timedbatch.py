"""Gather for a while, send at once when full: one batch over several loop turns.

A ``TurnBatch`` (``pflux.broker.turn``) ends with its loop turn. Some batches
are worth more than a turn gathers: the job manager's journal (each message
wakes job-list, another process, on another core) and job-list's cache of
inactive jobs (each write is an SQLite transaction). ``TimedBatch`` times
such a batch: it is flushed ``delay`` seconds after it begins, or at once
when it holds ``limit`` items, or when its owner must (a ``sync``, a stop).
The owner keeps the items; it tells the batch how many it holds (``grew``).

``after_quiet``: the delay counts from the last flush rather than from the
first item, so an item after a quiet spell goes at once, and none waits
longer than ``delay``: a stream's latency stays bounded while a burst is
gathered.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pflux.broker.router import Broker

__all__ = ["TimedBatch"]


class TimedBatch:
    """When an owner's batch is flushed: ``delay`` seconds on, or at ``limit`` items."""

    __slots__ = ("_after_quiet", "_broker", "_delay", "_flush", "_last", "_limit", "_timer")

    def __init__(
        self,
        broker: Broker,
        flush: Callable[[], None],
        *,
        delay: float,
        limit: int,
        after_quiet: bool = False,
    ) -> None:
        self._broker = broker
        self._flush = flush
        self._delay = delay
        self._limit = limit
        self._after_quiet = after_quiet
        self._last = 0.0  # when the last flush was (time.monotonic)
        self._timer: asyncio.TimerHandle | None = None

    def grew(self, size: int) -> None:
        """The batch now holds ``size`` items: flush it now if full (or, ``after_quiet``,
        if the last flush was ``delay`` ago), else once its time comes."""
        if size >= self._limit:
            self.flush()
            return
        if self._timer is not None or size == 0:
            return
        wait = self._delay
        if self._after_quiet:
            wait += self._last - time.monotonic()
            if wait <= 0:
                self.flush()
                return
        self._timer = self._broker.loop.call_later(wait, self.flush)

    def flush(self) -> None:
        """Flush the batch now (an empty one too: the owner's ``flush`` sees it)."""
        self.cancel()
        self._last = time.monotonic()
        self._flush()

    def cancel(self) -> None:
        """Forget the flush to come (the owner stops)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
