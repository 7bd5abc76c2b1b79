"""Posting events: applied in memory at once, committed in batches, acted on after the commit.

An event posted during one turn of the event loop joins that turn's batch (a
``TurnBatch``, ``pflux.broker.turn``); the batch goes to the KVS as one
``kvs.commit`` at the end of the turn, and only when it is answered are the
batch's callbacks run (responses, journal entries, requests to other
services), so nobody hears of an event that is not durable
(flux-core's ``job-manager/event.c`` is the model). A batch refused for want of
space (ENOSPC) is sent again, with the batches after it, in order, after a
pause that doubles while the disk stays full. ``docs/architecture.md``, "The
job manager" and "Durability", has the rest.
"""

from __future__ import annotations

import asyncio
import errno
import logging
from collections import deque
from collections.abc import Callable, Container
from typing import Any

import orjson

from pflux.broker.router import Broker
from pflux.broker.turn import TurnBatch
from pflux.errors import EventlogError
from pflux.manager.job import Job
from pflux.protocol.kvs import CommitRequest
from pflux.protocol.message import Message
from pflux.spec.eventlog import Event
from pflux.spec.states import InvalidTransition, State, apply

log = logging.getLogger("pflux.job-manager")

Fragment = orjson.Fragment  # JSON text that the broker's codec writes as it is
_dumps = orjson.dumps
_NEWLINE = orjson.OPT_APPEND_NEWLINE

RETRY_BACKOFF = (0.2, 2.0)  # seconds before sending again batches a full disk refused


class Batch:
    """Everything posted in one loop turn, and what to do once it is durable."""

    __slots__ = ("appends", "callbacks", "durable", "entries", "jobs", "joined", "ops", "watched")

    def __init__(self) -> None:
        self.durable = False
        self.ops: list[list[Any]] = []
        # a job's eventlog append in ``ops`` that later events of the batch can join: one
        # UPDATE for several lines costs SQLite about what one line does
        self.appends: dict[Job, list[Any]] = {}
        # appends whose lines are gathered in a list, joined at the flush: adding to a
        # string in a list copies it, and a job may have thousands of events in a turn
        # (a dependency on each of 10,000 jobs)
        self.joined: list[list[Any]] = []
        self.entries: list[dict[str, Any]] = []  # journal entries
        self.watched: list[tuple[int, Event]] = []  # (job id, event) for plugins that watch
        self.jobs: dict[Job, None] = {}  # jobs with events in this batch, in order
        self.callbacks: list[Callable[[], None]] = []


class EventPoster:
    """Applies, batches and commits job events; calls back when each batch is durable."""

    def __init__(
        self,
        broker: Broker,
        on_transition: Callable[[Job, State], None],
        on_commit: Callable[[Batch], None],
        watched: Container[str] = (),
    ) -> None:
        self.broker = broker
        self._watched = watched  # event names plugins watch (the manager's, kept up to date)
        self._on_transition = on_transition
        self._on_commit = on_commit
        self._turn: TurnBatch[Batch] = TurnBatch(broker, Batch, self._flush)
        self._flushed: deque[Batch] = deque()  # committing, answered in this order
        self._inflight = 0  # batches sent, not yet answered
        self._blocked = False  # a batch waits for space: later ones wait behind it
        self.failed = False  # a commit failed: the instance stops, nothing is stored again
        self._retry: list[Batch] = []  # refused for want of space, to send again, in order
        self._unsent: list[Batch] = []  # flushed while blocked, to send after those
        self._backoff = RETRY_BACKOFF[0]
        self._timer: asyncio.TimerHandle | None = None
        self._waiters: list[asyncio.Future[bool]] = []  # ``settled``'s, told False if stuck

    @property
    def batch(self) -> Batch:
        """The current turn's batch, scheduling its commit on first use."""
        return self._turn.get()

    @property
    def pending(self) -> bool:
        """Whether any event posted is not yet durable and acted on."""
        return self._turn.pending or bool(self._flushed)

    @property
    def blocked(self) -> bool:
        """Whether batches wait for space on a full disk (``pending`` until there is)."""
        return self._blocked

    def uncommitted(self, job: Job) -> bool:
        """Whether ``job`` has events not yet committed in this turn's batch."""
        batch = self._turn.peek()
        return batch is not None and job in batch.jobs

    def post(self, job: Job, name: str, context: dict[str, Any] | None = None) -> bool:
        """Apply an event to ``job`` and queue it for commit; False if it is illegal."""
        event = Event.now(name, context)
        try:
            old = apply(job, event)
        except InvalidTransition:
            log.exception("not posting an illegal event")
            return False
        self.record(job, event, len(job.history) - 1)
        if job.state is not old:
            self._on_transition(job, old)
        return True

    def record(self, job: Job, event: Event, seq: int, *, commit: bool = True) -> None:
        """Add an applied event to the batch (``commit=False``: already in the KVS).

        The journal entry holds the event as the eventlog line encoded for the
        KVS: the broker's codec (orjson) writes a ``Fragment`` as it is, so the
        event is not encoded a second time for the journal's subscribers.
        """
        batch = self.batch
        obj: Any
        if commit:
            line = _line(event)
            obj = Fragment(line[:-1])  # without its newline: the wire keeps compact JSON
            op = batch.appends.get(job)
            if op is None:
                op = batch.appends[job] = ["append", job.kvs("eventlog"), line]
                batch.ops.append(op)
            elif type(op[2]) is str:
                op[2] = [op[2], line]
                batch.joined.append(op)
            else:
                op[2].append(line)
        else:
            obj = event.to_json()
        entry: dict[str, Any] = {"id": job.id, "seq": seq, "entry": obj}
        if event.name == "submit":
            entry["jobspec"] = job.jobspec
        elif event.name == "alloc":
            entry["R"] = job.R
        batch.entries.append(entry)
        if event.name in self._watched:
            batch.watched.append((job.id, event))
        batch.jobs[job] = None

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once everything posted so far is durable."""
        self.batch.callbacks.append(callback)

    async def settled(self) -> bool:
        """Wait until every event posted so far is durable: True; False as soon as they
        cannot be (a full disk holds them back, or a commit failed)."""
        if not self.pending:
            return True
        if self._blocked or self.failed:
            return False
        waiter: asyncio.Future[bool] = self.broker.loop.create_future()
        self._waiters.append(waiter)
        self.after_commit(lambda: _tell(waiter, True))
        try:
            return await waiter
        finally:
            self._waiters.remove(waiter)

    def _stuck(self) -> None:
        for waiter in self._waiters:
            _tell(waiter, False)

    def add_ops(self, ops: list[list[Any]]) -> None:
        """Commit extra KVS operations with this turn's events (e.g. removing a job)."""
        batch = self.batch
        batch.ops.extend(ops)
        batch.appends.clear()  # later events must not be committed before these ops

    def put(self, op: list[Any]) -> None:
        """Commit a KVS operation on a key no event of this turn touches with this turn's
        events (an inactive job's record), in any order with them."""
        self.batch.ops.append(op)

    def _flush(self, batch: Batch) -> None:
        self._flushed.append(batch)
        for op in batch.joined:
            op[2] = "".join(op[2])
        if not batch.ops:
            self._durable(batch)
        elif self._blocked:
            self._unsent.append(batch)
        else:
            self._send(batch)

    def _send(self, batch: Batch) -> None:
        def committed(msg: Message) -> None:
            self._inflight -= 1
            if msg.errnum == errno.ENOSPC:
                if not self._blocked:
                    log.error(
                        "job-manager: %s; holding events back until there is space", msg.errstr
                    )
                self._blocked = True
                self._retry.append(batch)
                self._stuck()
            elif msg.errnum:
                # never act on, or acknowledge, an event that is not durable
                self.failed = True
                self._stuck()
                self.broker.fatal(f"job-manager: KVS commit failed: {msg.errstr}")
                return
            else:
                self._durable(batch)
            if self._inflight == 0 and self._blocked:
                self._settle()

        self._inflight += 1
        self.broker.send("kvs.commit", CommitRequest(batch.ops), committed)

    def _settle(self) -> None:
        """Nothing is in flight: retry what was refused, later; or, all stored, unblock."""
        if self._retry:
            if self._timer is None:
                self._timer = self.broker.loop.call_later(self._backoff, self._resend)
                self._backoff = min(self._backoff * 2, RETRY_BACKOFF[1])
            return
        log.warning("job-manager: events stored again after a full disk")
        self._blocked = False
        self._backoff = RETRY_BACKOFF[0]
        unsent, self._unsent = self._unsent, []
        for batch in unsent:
            self._send(batch)

    def _resend(self) -> None:
        """Send the refused batches again, then those held behind them, in order."""
        self._timer = None
        batches = self._retry + self._unsent
        self._retry, self._unsent = [], []
        for batch in batches:
            self._send(batch)

    def cancel_retry(self) -> None:
        """Stop sending refused batches again (the service stops)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _durable(self, batch: Batch) -> None:
        """Mark ``batch`` durable and act on every durable batch at the front, in order."""
        batch.durable = True
        flushed = self._flushed
        while flushed and flushed[0].durable:
            self._on_commit(flushed.popleft())


def _line(event: Event) -> str:
    """``event.to_line()``, by the broker's codec called directly: the job manager
    encodes ten events a job, and the generic path's calls cost as much as the
    encoding."""
    context = event.context
    if context is None:
        obj: dict[str, Any] = {"timestamp": event.timestamp, "name": event.name}
    else:
        obj = {"timestamp": event.timestamp, "name": event.name, "context": context}
    try:
        return _dumps(obj, option=_NEWLINE).decode()
    except orjson.JSONEncodeError as exc:
        raise EventlogError(f"event {event.name!r}: context is not JSON: {exc}") from None


def _tell(waiter: asyncio.Future[bool], settled: bool) -> None:
    if not waiter.done():
        waiter.set_result(settled)
