"""A job's end is one transaction: job-exec's records of the job's end and the job
manager's ``finish`` event are applied by the KVS together, the records first, so a
crash at any commit never leaves ``finish`` durable without them."""

from __future__ import annotations

import functools
import itertools
import os
import queue
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import msgspec

from pflux.broker.turn import TurnBatch
from pflux.protocol.message import Message
from pflux.spec.eventlog import Event
from pflux.spec.fluid import JobID

TIMEOUT = 30.0


def _journal_applies(live: Any) -> list[tuple[int, str, str]]:
    """Record each op the KVS applies as (transaction number, key, value), in order."""
    store = live.kvs.store
    applied: list[tuple[int, str, str]] = []
    count = itertools.count()
    current = [next(count)]
    inner_transaction, inner_apply = store.transaction, store.apply

    @contextmanager
    def transaction() -> Iterator[None]:
        outermost = not store._conn.in_transaction
        with inner_transaction():
            yield
        if outermost:
            current[0] = next(count)

    def apply(ops: Any, *args: Any, **kwargs: Any) -> Any:
        applied.extend((current[0], op[1], op[2]) for op in ops)
        return inner_apply(ops, *args, **kwargs)

    async def install() -> None:  # on the broker's loop, between turns
        store.transaction = transaction
        store.apply = apply

    live.run(install())
    return applied


def test_job_execs_records_are_never_durable_after_the_managers_finish(live: Any) -> None:
    applied = _journal_applies(live)
    jobid = 3 << 40
    key = JobID(jobid).kvs
    responses: queue.Queue[Message] = queue.Queue()
    committed: queue.Queue[Message] = queue.Queue()
    # the job manager's side: it posts finish on hearing it, and commits its turn's
    # events from the turn's end, as its EventPoster does
    events: TurnBatch[list[str]] = TurnBatch(
        live.broker,
        list,
        lambda lines: live.broker.send(
            "kvs.commit", {"ops": [["append", f"{key}.eventlog", "".join(lines)]]}, committed.put
        ),
    )

    def heard(msg: Message) -> None:
        payload = msgspec.to_builtins(msg.payload)  # as it would cross the wire
        if not msg.errnum and payload["type"] == "finish":
            events.get().append(Event.now("finish", payload["data"]).to_line())
        responses.put(msg)

    body = {
        "id": jobid,
        "userid": os.getuid(),
        "jobspec": live.job(["true"]),
        "reattach": False,
        "R": live.make_R(),
    }
    send = functools.partial(live.broker.send, streaming=True)
    live.loop.call_soon_threadsafe(send, "job-exec.start", body, heard)
    kinds = []
    while not kinds or kinds[-1] != "release":
        msg = responses.get(timeout=TIMEOUT)
        assert not msg.errnum, msg.errstr
        kinds.append(msgspec.to_builtins(msg.payload)["type"])
    assert kinds == ["start", "finish", "release"]
    assert not committed.get(timeout=TIMEOUT).errnum

    def where(wanted_key: str, text: str) -> tuple[int, int]:
        (found,) = [
            (i, tx) for i, (tx, k, value) in enumerate(applied) if k == wanted_key and text in value
        ]
        return found

    done_at, done_tx = where(f"{key}.guest.exec.eventlog", '"done"')
    finish_at, finish_tx = where(f"{key}.eventlog", '"finish"')
    assert done_at < finish_at  # applied first
    assert done_tx == finish_tx  # and in the same transaction
