"""A broker with only the kvs service, and a client that talks to it as a connection would."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from pflux.broker.router import Broker
from pflux.kvs.service import KVSService
from pflux.protocol.message import FLAG_STREAMING, REQUEST, ROLE_OWNER, ROLE_USER, Message
from support.wire import as_sent


class Client:
    """A fake connection: sends requests into the broker, collects responses by matchtag.

    ``hang_up`` is what the connector does when a client disconnects.
    """

    def __init__(self, broker: Broker, *, userid: int | None = None, owner: bool = True) -> None:
        self.broker = broker
        self.userid = broker.owner if userid is None else userid
        self.rolemask = ROLE_OWNER if owner else ROLE_USER
        self.responses: dict[int, list[Message]] = {}
        self._tag = 0
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._disconnect: dict[Callable[[], None], None] = {}

    # Route
    def deliver(self, msg: Message) -> None:
        msg.payload = as_sent(msg.payload)  # as the connector sends it
        self.responses.setdefault(msg.matchtag, []).append(msg)
        for waiter in list(self._waiters):
            tag, count, future = waiter
            if tag == msg.matchtag and len(self.responses[tag]) >= count and not future.done():
                future.set_result(None)
                self._waiters.remove(waiter)

    def add_disconnect(self, callback: Callable[[], None]) -> None:
        self._disconnect[callback] = None

    def discard_disconnect(self, callback: Callable[[], None]) -> None:
        self._disconnect.pop(callback, None)

    async def drain(self) -> None:
        """This fake reads everything at once."""

    def hang_up(self) -> None:
        callbacks, self._disconnect = list(self._disconnect), {}
        for callback in callbacks:
            callback()

    @property
    def watching(self) -> int:
        """Disconnect callbacks registered: one per live watch."""
        return len(self._disconnect)

    # requests
    def send(self, topic: str, payload: Any = None, *, streaming: bool = False) -> int:
        """Send a request now (dispatched on the next loop turn); return its matchtag."""
        self._tag += 1
        flags = FLAG_STREAMING if streaming else 0
        msg = Message(
            REQUEST,
            topic,
            self._tag,
            payload,
            flags=flags,
            userid=self.userid,
            rolemask=self.rolemask,
        )
        self.broker.dispatch(msg, self)
        return self._tag

    async def wait(self, tag: int, count: int = 1) -> list[Message]:
        """The first ``count`` responses to request ``tag``, once they have arrived."""
        if len(self.responses.get(tag, [])) < count:
            future = self.broker.loop.create_future()
            self._waiters.append((tag, count, future))
            await asyncio.wait_for(future, 5)
        return self.responses[tag][:count]

    async def call(self, topic: str, payload: Any = None) -> Any:
        """Send and return the payload; an error response raises RPCError."""
        tag = self.send(topic, payload)
        (msg,) = await self.wait(tag)
        return msg.raise_for_error()

    def values(self, tag: int) -> list[Any]:
        """What a stream has sent so far: payload values, and (errnum, errstr) for its end."""
        out: list[Any] = []
        for msg in self.responses.get(tag, []):
            out.append((msg.errnum, msg.errstr) if msg.errnum else msg.payload.get("value"))
        return out


Scenario = Callable[[Broker, Client], Awaitable[Any]]


@pytest.fixture
def run_kvs(tmp_path: Path) -> Callable[..., Any]:
    """Run ``scenario(broker, client)`` against a fresh broker whose only service is kvs."""

    def run(
        scenario: Scenario, *, config: dict[str, Any] | None = None, temporary: bool = False
    ) -> Any:
        attrs = {"state-dir": str(tmp_path), "state-dir-temporary": "1" if temporary else "0"}

        async def main() -> Any:
            broker = Broker(os.getuid(), attrs=attrs, config=config)
            broker.register(KVSService(broker))
            await broker.start()
            try:
                return await scenario(broker, Client(broker))
            finally:
                await broker.stop()

        return asyncio.run(main())

    return run
