"""The events journal's sending: entries close together share a message, none waits long."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import orjson
import pytest

from pflux.broker.router import Broker
from pflux.errors import RPCError
from pflux.manager import journal as journal_module
from pflux.manager.journal import DELAY, Journal


class Subscriber:
    def __init__(self) -> None:
        self.messages: list[tuple[float, list[Any]]] = []
        self.arrived = asyncio.Event()

    def respond(self, payload: Any) -> None:
        self.messages.append((time.monotonic(), [e["id"] for e in payload["events"]]))
        self.arrived.set()


class Manager:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker


def entry(jobid: int) -> dict[str, Any]:
    return {"id": jobid, "seq": 0, "entry": {"timestamp": 1.0, "name": "submit"}}


def run(scenario: Any) -> None:
    async def main() -> None:
        broker = Broker(os.getuid())
        journal = Journal(Manager(broker))  # type: ignore[arg-type]
        subscriber = Subscriber()
        journal.subscribers[subscriber] = False  # type: ignore[index]
        await scenario(journal, subscriber)

    asyncio.run(main())


def test_after_a_quiet_spell_entries_go_at_once_and_followers_wait_together() -> None:
    async def scenario(journal: Journal, subscriber: Subscriber) -> None:
        journal.publish([entry(1)])
        assert [ids for _, ids in subscriber.messages] == [[1]]
        journal.publish([entry(2)])
        journal.publish([entry(3), entry(4)])
        assert len(subscriber.messages) == 1  # within DELAY of the last message: they wait
        subscriber.arrived.clear()
        await asyncio.wait_for(subscriber.arrived.wait(), 5)
        assert [ids for _, ids in subscriber.messages] == [[1], [2, 3, 4]]
        sent_first, sent_second = (t for t, _ in subscriber.messages)
        assert sent_second - sent_first < DELAY * 10  # waited about DELAY, not longer

    run(scenario)


class Request:
    """A journal-sync request: who asks, and what it was answered."""

    def __init__(self, owner: bool) -> None:
        self.owner = owner
        self.payload: Any = {}
        self.answers: list[Any] = []

    def respond(self, payload: Any) -> None:
        self.answers.append(payload)


def test_sync_sends_what_waits_before_answering_and_a_full_batch_goes_at_once() -> None:
    async def scenario(journal: Journal, subscriber: Subscriber) -> None:
        journal.publish([entry(1)])
        journal.publish([entry(2), entry(3)])
        req = Request(owner=True)
        journal.sync(req)  # type: ignore[arg-type]
        assert [ids for _, ids in subscriber.messages] == [[1], [2, 3]]
        assert req.answers == [{}]
        journal.sync(req)  # type: ignore[arg-type]  # nothing waits: nothing sent
        assert len(subscriber.messages) == 2
        many = [entry(i) for i in range(journal_module.BATCH)]
        journal.publish(many)
        assert len(subscriber.messages) == 3
        assert len(subscriber.messages[-1][1]) == journal_module.BATCH

    run(scenario)


def test_only_the_owner_may_sync() -> None:
    async def scenario(journal: Journal, subscriber: Subscriber) -> None:
        with pytest.raises(RPCError, match="journal-sync: only the instance owner"):
            journal.sync(Request(owner=False))  # type: ignore[arg-type]

    run(scenario)


class Raw:
    """A subscriber that keeps each payload as given."""

    def __init__(self) -> None:
        self.payloads: list[Any] = []

    def respond(self, payload: Any) -> None:
        self.payloads.append(payload)


def test_a_subscriber_inside_the_broker_gets_the_events_decoded() -> None:
    async def scenario(journal: Journal, subscriber: Subscriber) -> None:
        local, remote = Raw(), Raw()
        journal.subscribers[local] = True  # type: ignore[index]
        journal.subscribers[remote] = False  # type: ignore[index]
        line = '{"timestamp":1.0,"name":"start"}\n'
        journal.publish([{"id": 7, "seq": 3, "entry": orjson.Fragment(line)}])
        decoded = {"events": [{"id": 7, "seq": 3, "entry": {"timestamp": 1.0, "name": "start"}}]}
        assert local.payloads == [decoded]
        (sent,) = remote.payloads
        assert type(sent["events"][0]["entry"]) is orjson.Fragment  # encoded as it is, once
        assert orjson.loads(orjson.dumps(sent)) == decoded

    run(scenario)
