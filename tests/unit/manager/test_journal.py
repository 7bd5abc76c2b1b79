"""The events journal's sending: entries close together share a message, none waits long."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from pflux.broker.router import Broker
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
        journal.subscribers[subscriber] = None  # type: ignore[index]
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


def test_now_sends_what_waits_and_a_full_batch_goes_without_waiting() -> None:
    async def scenario(journal: Journal, subscriber: Subscriber) -> None:
        journal.publish([entry(1)])
        journal.publish([entry(2)])
        journal.publish([entry(3)], now=True)  # a commit that answers a client
        assert [ids for _, ids in subscriber.messages] == [[1], [2, 3]]
        many = [entry(i) for i in range(journal_module.BATCH)]
        journal.publish(many)
        assert len(subscriber.messages) == 3
        assert len(subscriber.messages[-1][1]) == journal_module.BATCH

    run(scenario)
