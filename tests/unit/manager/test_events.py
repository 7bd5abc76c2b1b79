"""The event poster's batches: one eventlog append per job a turn, lines in order."""

from __future__ import annotations

import errno
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import orjson
from hypothesis import given, settings

from pflux.errors import EventlogError
from pflux.manager.events import EventPoster, _line
from pflux.manager.job import Job
from pflux.protocol.message import RESPONSE, Message, decode_body, encode_body
from pflux.spec.eventlog import Event
from support.eventgen import events
from support.wire import as_sent


class Broker:
    """What the poster uses of the broker: the end of the turn, and sending a commit."""

    def __init__(self) -> None:
        self.ends: list[Callable[[], None]] = []
        self.sent: list[tuple[str, Any]] = []

    def at_turn_end(self, fn: Callable[[], None]) -> None:
        self.ends.append(fn)

    def send(self, topic: str, payload: Any, callback: Any = None) -> None:
        self.sent.append((topic, payload))


def test_a_turns_events_become_one_append_per_job_in_order() -> None:
    broker = Broker()
    poster = EventPoster(broker, lambda job, old: None, lambda batch: None)  # type: ignore[arg-type]
    many, one = Job(1 << 30), Job(2 << 30)
    lines = []
    for i in range(5000):  # a job that depends on 5,000 others adds them in one turn
        event = Event(1.0 + i, "dependency-add", {"description": f"after-success={i}"})
        poster.record(many, event, i)
        lines.append(event.to_line())
    poster.record(one, Event(2.0, "submit", {"urgency": 16}), 0)
    (flush,) = broker.ends
    flush()
    ((topic, payload),) = broker.sent
    assert topic == "kvs.commit"
    assert as_sent(payload)["ops"] == [
        ["append", many.kvs("eventlog"), "".join(lines)],
        ["append", one.kvs("eventlog"), Event(2.0, "submit", {"urgency": 16}).to_line()],
    ]


def test_events_after_extra_ops_are_committed_after_them() -> None:
    broker = Broker()
    poster = EventPoster(broker, lambda job, old: None, lambda batch: None)  # type: ignore[arg-type]
    job = Job(1 << 30)
    events = [Event(1.0 + i, "memo", {"n": i}) for i in range(4)]
    poster.record(job, events[0], 0)
    poster.record(job, events[1], 1)
    poster.add_ops([["put", "x", "1"]])
    poster.record(job, events[2], 2)
    poster.record(job, events[3], 3)
    broker.ends[0]()
    key = job.kvs("eventlog")
    assert as_sent(broker.sent[0][1])["ops"] == [
        ["append", key, events[0].to_line() + events[1].to_line()],
        ["put", "x", "1"],
        ["append", key, events[2].to_line() + events[3].to_line()],
    ]


class RetryingBroker(Broker):
    """Also keeps each commit's callback, and the timers the poster sets."""

    def __init__(self) -> None:
        super().__init__()
        self.callbacks: list[Any] = []
        self.timers: list[Callable[[], None]] = []
        self.loop = self

    def send(self, topic: str, payload: Any, callback: Any = None) -> None:
        super().send(topic, payload)
        self.callbacks.append(callback)

    def call_later(self, delay: float, fn: Callable[[], None]) -> Any:
        assert delay > 0
        self.timers.append(fn)
        return self

    def cancel(self) -> None:
        pass

    def fatal(self, reason: str) -> None:
        raise AssertionError(f"fatal: {reason}")


def answer(errnum: int = 0) -> Any:
    return SimpleNamespace(errnum=errnum, errstr="no space left on device" if errnum else "")


def test_batches_a_full_disk_refused_are_sent_again_in_order_and_acted_on_once_stored() -> None:
    broker = RetryingBroker()
    committed: list[Any] = []
    poster = EventPoster(broker, lambda job, old: None, committed.append)  # type: ignore[arg-type]
    job = Job(1 << 30)

    def turn(n: int) -> None:
        poster.record(job, Event(1.0 + n, "memo", {"n": n}), n)
        broker.ends.pop()()

    turn(0)
    turn(1)  # both in flight
    first, second = (payload for _, payload in broker.sent)
    broker.callbacks[0](answer(errno.ENOSPC))
    broker.callbacks[1](answer(errno.ENOSPC))
    turn(2)  # flushed while the others wait for space: held back
    assert len(broker.sent) == 2
    assert committed == []
    assert poster.pending

    (retry,) = broker.timers
    retry()
    assert [payload for _, payload in broker.sent[2:]][:2] == [first, second]
    assert len(broker.sent) == 5  # and the held batch after them
    broker.callbacks[2](answer(errno.ENOSPC))  # still full: all three wait again
    broker.callbacks[3](answer(errno.ENOSPC))
    broker.callbacks[4](answer(errno.ENOSPC))
    broker.timers[1]()
    assert [payload for _, payload in broker.sent[5:]] == [p for _, p in broker.sent[2:5]]
    for callback in broker.callbacks[5:]:
        callback(answer())
    assert [batch.entries[0]["seq"] for batch in committed] == [0, 1, 2]
    assert not poster.pending
    turn(3)  # unblocked: sent at once
    assert len(broker.sent) == 9


@settings(max_examples=200)
@given(events)
def test_the_posters_line_of_an_event_is_the_eventlogs(event: Event) -> None:
    expected = _outcome(event.to_line, ())
    assert _outcome(_line, (event,)) == expected  # a lone surrogate: refused the same way


def _outcome(fn: Callable[..., str], args: tuple[Any, ...]) -> str:
    """What ``fn(*args)`` returns, or the EventlogError it raises, as text."""
    try:
        return fn(*args)
    except EventlogError as exc:
        return f"EventlogError: {exc}"


def test_a_journal_entry_goes_out_as_the_eventlog_line_committed() -> None:
    broker = Broker()
    batches: list[Any] = []
    poster = EventPoster(broker, lambda job, old: None, batches.append)  # type: ignore[arg-type]
    job = Job(1 << 30)
    events = [Event(1.5, "memo", {"note": {"s": "é\u2028"}}), Event(2.0, "start")]
    for seq, event in enumerate(events, 1):
        poster.record(job, event, seq)
    broker.ends[0]()
    ((_, payload),) = broker.sent
    assert as_sent(payload)["ops"] == [
        ["append", job.kvs("eventlog"), "".join(e.to_line() for e in events)]
    ]
    poster._durable(poster._flushed[0])
    (batch,) = batches
    response = Message(RESPONSE, "job-manager.events-journal", 1, {"events": batch.entries})
    body = encode_body(response)
    assert b"\n" not in body  # compact, as every message is
    assert decode_body(body).payload == {
        "events": [
            {"id": job.id, "seq": seq, "entry": orjson.loads(event.to_line())}
            for seq, event in enumerate(events, 1)
        ]
    }
