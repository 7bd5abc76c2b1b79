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

from pflux.errors import NoInstanceError, ProtocolError, RPCError, RPCTimeout
from pflux.protocol.message import (
    EVENT,
    FLAG_STREAMING,
    NODEID_ANY,
    REQUEST,
    RESPONSE,
    Decoder,
    Message,
    encode,
)
from pflux.protocol.uri import (
    cannot_connect,
    client_timeout,
    hung_up,
    not_an_instance,
    socket_path,
    unanswered,
    uri_for,
)


class _Protocol(asyncio.Protocol):
    def __init__(self, handle: AsyncHandle) -> None:
        self.handle = handle
        self.decoder = Decoder(types=(REQUEST, RESPONSE, EVENT))
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast("asyncio.Transport", transport)  # uvloop's do not subclass it

    def data_received(self, data: bytes) -> None:
        try:
            messages = self.decoder.feed(data)
        except ProtocolError as exc:
            self.handle._lost(RPCError(errno.EPROTO, not_an_instance(self.handle.uri, exc)))
            return
        for msg in messages:
            self.handle._route(msg)

    def connection_lost(self, exc: Exception | None) -> None:
        self.handle._lost(RPCError(errno.ECONNRESET, "lost connection to the instance"))


class AsyncHandle:
    """A connection; open it with ``await AsyncHandle.connect(uri)``."""

    def __init__(self, uri: str, timeout: float | None) -> None:
        self.uri = uri
        self.timeout = timeout
        self._protocol: _Protocol | None = None
        self._tag = 0
        self._sinks: dict[int, Callable[[Message], None]] = {}  # matchtag -> where responses go
        self._streams: set[int] = set()
        self._error: RPCError | None = None
        self.events: asyncio.Queue[Message] = asyncio.Queue()  # subscribed to, unread

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
            await self.call("broker.ping", {})
        except RPCTimeout:
            self.close()
            raise unanswered(self.uri, self.timeout) from None
        except RPCError as exc:
            self.close()
            if exc.errnum == errno.EPROTO:  # what the socket sent is not a message
                raise NoInstanceError(exc.errstr) from None
            if exc.errnum == errno.ECONNRESET:
                raise hung_up(self.uri) from None
            raise  # the broker's own refusal (permission) says enough

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
        self._tag += 1
        self._sinks[self._tag] = sink
        if flags & FLAG_STREAMING:
            self._streams.add(self._tag)
        self._protocol.transport.write(
            encode(Message(REQUEST, topic, self._tag, payload, flags=flags, nodeid=nodeid))
        )
        return self._tag

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
            self._sinks.pop(tag, None)
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

    def _route(self, msg: Message) -> None:
        if msg.type == EVENT:
            self.events.put_nowait(msg)
            return
        if msg.matchtag == 0 and msg.errnum:
            self._lost(RPCError(msg.errnum, msg.errstr))
            return
        sink = self._sinks.get(msg.matchtag)
        if sink is None:
            return
        if msg.errnum or msg.matchtag not in self._streams:
            del self._sinks[msg.matchtag]
            self._streams.discard(msg.matchtag)
        sink(msg)

    def _lost(self, error: RPCError) -> None:
        if self._error is None:
            self._error = error
        sinks = list(self._sinks.items())
        self._sinks.clear()
        for tag, sink in sinks:
            sink(Message(REQUEST, "", tag, errnum=error.errnum, errstr=error.errstr))
        self._streams.clear()
