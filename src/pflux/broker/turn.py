"""Collect during a loop turn, send at its end, act once answered: one batch per turn.

job-ingest (submissions), the job manager (events) and job-exec (guest-key
writes) each gather what one turn of the broker's loop produces into a batch
and send it as one ``kvs.commit`` from the turn's end; they act on it
(answer, journal, send on) only when that commit is answered. ``TurnBatch``
is that batch: it makes one at the first use in a turn, schedules its flush
once, and hands it over at the turn's end. The KVS gathers the turn's
commits the same way (``store=True``), and applies them in arrival order, in
one SQLite transaction. The scheduler's pass is one per turn the same way,
however many requests ask for one, and job-exec's link to its launcher
writes the records of a turn after its first in one piece at its end.
(Batches that wait longer than a turn: ``pflux.broker.timedbatch``.)

**A job's end is one transaction.** What job-exec writes of a job's end (the
``complete`` and ``done`` of its exec eventlog, its last output, the removal
of its namespace) and the job manager's ``finish`` event of the job reach the
KVS in that order and are applied in the same transaction. Two parts make it
so, both here:

- job-exec sends its ``finish`` and final ``release`` answers only after the
  turn's writes are sent (``TurnBatch.after_flush``): the job manager hears of
  the end after the KVS has the records, so its commit of ``finish`` arrives
  after them;
- the KVS's flush (``store=True``) runs after the turn's other ends, and, when
  those ends sent the KVS more requests (the job manager's commit of
  ``finish``, sent from the end of the turn in which it heard job-exec), waits
  one turn more and applies those with it. It waits once: other work queued
  does not hold it back.

So a crash never leaves the job manager's ``finish`` durable without job-exec's
records of the job (a restart would then not know that its guest keys are
complete), nor, within one flush, the records without ``finish``. The
records may still be durable alone when a turn's flush cannot take the
``finish`` (a failed batch retried job by job, a full disk): a restarted
job-exec looks at the KVS before starting a job in RUN again for that reason
(``docs/architecture.md``, "Durability").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from pflux.broker.router import Broker

__all__ = ["TurnBatch"]

B = TypeVar("B")

STORE_TOPICS = "kvs."  # requests a store's flush waits one turn for (see the docstring)


class TurnBatch(Generic[B]):
    """This turn's batch (made by ``make``), handed to ``flush`` at the turn's end."""

    __slots__ = ("_broker", "_current", "_flush", "_make", "_store", "_waited")

    def __init__(
        self,
        broker: Broker,
        make: Callable[[], B],
        flush: Callable[[B], None],
        *,
        store: bool = False,
    ) -> None:
        self._broker = broker
        self._make = make
        self._flush = flush
        self._store = store  # the KVS's own: flushed last, waiting for the turn's commits
        self._waited = 0
        self._current: B | None = None

    def get(self) -> B:
        """The current turn's batch, scheduling its flush on first use."""
        current = self._current
        if current is None:
            current = self._current = self._make()
            self._waited = 0
            self._broker.at_turn_end(self._end if self._store else self.flush)
        return current

    @property
    def pending(self) -> bool:
        """Whether a batch was begun and not yet flushed."""
        return self._current is not None

    def peek(self) -> B | None:
        """The current batch, if any, without beginning one."""
        return self._current

    def flush(self) -> None:
        """Hand the current batch, if any, to ``flush`` now (at the turn's end, or at stop)."""
        current, self._current = self._current, None
        if current is not None:
            self._flush(current)

    def after_flush(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` at the end of this turn, after the batch (which must be pending) is
        flushed: what the answers tell of reaches the KVS before they do."""
        assert self._current is not None, "after_flush needs this turn's batch"
        self._broker.at_turn_end(fn)

    def _end(self) -> None:
        """A store's flush: after the ends registered so far, and a turn later if those
        sent the store more (a job's end is one transaction)."""
        queue = self._broker.queue
        if self._waited == 0:
            self._waited = 1
            queue.at_end(self._end)
        elif self._waited == 1 and queue.requests_waiting(STORE_TOPICS):
            self._waited = 2
            queue.at_next_end(self._end)
        else:
            self.flush()
