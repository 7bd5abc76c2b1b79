"""An asyncio connection to an instance, for the Python API.

Requests are futures; a streaming request is an async iterator of payloads
that ends at the stream's normal end (ENODATA) and raises RPCError on others.
As the blocking handle, connecting waits for the broker to answer a ping, and
a plain request not made with ``wait=True`` is answered within the handle's
timeout or raises RPCTimeout; a stream follows something live, without limit.
"""

from __future__ import annotations

import asyncio
import errno
from collections.abc import AsyncIterator, Callable
from typing import Any, cast

from pflux.client.routing import Router, hello_failed
from pflux.errors import ProtocolError, RPCError, RPCTimeout
from pflux.protocol.message import FLAG_STREAMING, NODEID_ANY, Message
from pflux.protocol.uri import (
    cannot_connect,
    client_timeout,
    not_an_instance,
    socket_path,
    unanswered,
    uri_for,
)


class _Protocol(asyncio.Protocol):
    def __init__(self, handle: AsyncHandle) -> None:
        self.handle = handle
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast("asyncio.Transport", transport)  # uvloop's do not subclass it

    def data_received(self, data: bytes) -> None:
        try:
            messages = self.handle.decoder.feed(data)
        except ProtocolError as exc:
            self.handle._lost(RPCError(errno.EPROTO, not_an_instance(self.handle.uri, exc)))
            return
        for msg in messages:
            self.handle.route(msg)

    def connection_lost(self, exc: Exception | None) -> None:
        self.handle._lost(RPCError(errno.ECONNRESET, "lost connection to the instance"))


class AsyncHandle(Router):
    """A connection; open it with ``await AsyncHandle.connect(uri)``."""

    def __init__(self, uri: str, timeout: float | None) -> None:
        super().__init__()
        self.uri = uri
        self.timeout = timeout
        self._protocol: _Protocol | None = None
        self._error: RPCError | None = None
        self.events: asyncio.Queue[Message] = asyncio.Queue()  # subscribed to, unread
        self.hello: Any = None  # the first ping's answer: who the instance takes us for

    @classmethod
    async def connect(cls, uri: str | None = None, *, timeout: float | None = None) -> AsyncHandle:
        """Connect to ``uri`` (else PFLUX_URI, else the system instance); ``timeout`` as
        ``client_timeout``."""
        path = socket_path(uri)
        handle = cls(uri_for(path), client_timeout(timeout))
        loop = asyncio.get_running_loop()
        opening = loop.create_unix_connection(lambda: _Protocol(handle), path)
        try:
            _, protocol = await asyncio.wait_for(opening, handle.timeout)
        except TimeoutError:
            raise unanswered(handle.uri, handle.timeout) from None
        except OSError as exc:
            raise cannot_connect(path, exc) from None
        handle._protocol = protocol
        await handle._hello()
        return handle

    async def _hello(self) -> None:
        """Wait for the broker to answer a ping: any response proves a pflux instance."""
        try:
            self.hello = await self.call("broker.ping", {})
        except RPCError as exc:
            self.close()
            error = hello_failed(self.uri, self.timeout, exc)
            if error is exc:
                raise
            raise error from None

    async def __aenter__(self) -> AsyncHandle:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._protocol is not None and self._protocol.transport is not None:
            self._protocol.transport.close()

    def open(
        self,
        topic: str,
        payload: Any,
        sink: Callable[[Message], None],
        *,
        flags: int = FLAG_STREAMING,
        nodeid: int = NODEID_ANY,
    ) -> int:
        """Send a request now and give each of its responses, as a Message, to ``sink``:
        its matchtag (which a cancel names)."""
        if self._error is not None:
            raise self._error
        assert self._protocol is not None
        assert self._protocol.transport is not None
        self._protocol.transport.write(self.request(topic, payload, flags, nodeid))
        self.expect(sink, flags)
        return self.matchtag

    async def call(
        self,
        topic: str,
        payload: Any = None,
        *,
        wait: bool = False,
        timeout: float | None = None,
        nodeid: int = NODEID_ANY,
    ) -> Any:
        """Send a request and return its response's payload (RPCError on an error).

        ``wait``: the response comes when something happens (a job ends), so it has
        no limit unless ``timeout`` gives one; otherwise the limit is ``timeout``,
        else the handle's. ``nodeid``: the rank whose service is asked.
        """
        queue: asyncio.Queue[Message] = asyncio.Queue()
        tag = self.open(topic, payload, queue.put_nowait, flags=0, nodeid=nodeid)
        limit = timeout if timeout is not None else None if wait else self.timeout
        try:
            msg = await asyncio.wait_for(queue.get(), limit)
        except TimeoutError:
            self.forget(tag)
            assert limit is not None
            raise RPCTimeout(f"a response to {topic}", limit) from None
        return msg.raise_for_error()

    async def stream(
        self, topic: str, payload: Any = None, *, nodeid: int = NODEID_ANY
    ) -> AsyncIterator[Any]:
        """Send a streaming request (to rank ``nodeid``: default any) and yield each
        response's payload until its end."""
        queue: asyncio.Queue[Message] = asyncio.Queue()
        self.open(topic, payload, queue.put_nowait, nodeid=nodeid)
        while True:
            msg = await queue.get()
            if msg.errnum == errno.ENODATA:
                return
            yield msg.raise_for_error()

    async def next_event(self) -> Message:
        """The next event subscribed to (``event.subscribe``)."""
        return await self.events.get()

    def event(self, msg: Message) -> None:
        self.events.put_nowait(msg)

    def refused(self, error: RPCError) -> None:
        self._lost(error)

    def _lost(self, error: RPCError) -> None:
        if self._error is None:
            self._error = error
        self.abandon(error)
