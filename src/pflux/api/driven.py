"""A stream (``pflux.api.streams``) driven on a connection: ``Driven`` on a blocking
``Handle`` (what the blocking client's streaming methods return or iterate),
``drive`` on an ``AsyncHandle`` (what the asyncio client's iterate; asyncio is
loaded only then).

A ``Driven``'s requests are sent when it is made (buffered until the first wait, ``poll``
or ``flush``); iterating waits for the items until every
stream has ended. A caller with a select loop of its own selects on ``fileno()``
and takes what has arrived with ``poll()``, which never waits. A request made on
the same handle reads the connection while it waits, and what the streams
brought then is queued here, not readable on ``fileno()``: such a caller polls
until ``poll()`` returns nothing.
"""

from __future__ import annotations

import time

from pflux.errors import RPCTimeout

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import asyncio
    from collections import deque
    from collections.abc import AsyncIterator, Callable, Iterator
    from typing import Generic as Parametric
    from typing import TypeVar

    from pflux.api.exchange import Call
    from pflux.api.streams import Stream
    from pflux.client.aio import AsyncHandle
    from pflux.client.handle import Handle
    from pflux.protocol.message import Message

    T = TypeVar("T")
else:
    from _collections import deque  # the collections package costs a command more

    from pflux.api.streams import Parametric

    T = object  # what ``Parametric[T]`` takes at run time: only the type checker reads it


class Driven(Parametric[T]):
    """``stream`` on ``handle``; ``timeout``: seconds in all before iteration raises
    the stream's ``expired`` error (None: no limit)."""

    def __init__(self, handle: Handle, stream: Stream[T], timeout: float | None = None) -> None:
        self._handle = handle
        self.stream = stream
        self.timeout = timeout
        #: a ``time.monotonic()`` past which iteration raises the stream's ``expired``
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self._arrived: deque[tuple[int, Message]] = deque()
        # a stream not waited for (``wait``) answers each response within the handle's limit
        self._limit = None if all(call.wait for call in stream.calls) else handle.timeout
        for index, call in enumerate(stream.calls):
            rpc = handle.rpc(
                call.topic, call.payload, streaming=True, wait=call.wait, nodeid=call.nodeid
            )
            stream.opened(index, rpc.matchtag)
            rpc.then(_arriving(self._arrived, index))

    def __iter__(self) -> Iterator[T]:
        """Every stream's items as they come, until every stream has ended."""
        stream, arrived = self.stream, self._arrived
        while stream.live or arrived:
            if not arrived:
                self._wait()
                continue
            yield from stream.feed(*arrived.popleft())

    def _wait(self) -> None:
        """Read the connection until something arrives, or raise the limit passed."""
        limit = self._limit
        if limit is None and self.deadline is None:
            self._handle.process(None)
            return
        until = None if limit is None else time.monotonic() + limit
        while not self._arrived:
            now = time.monotonic()
            if self.deadline is not None and now >= self.deadline:
                raise self.stream.expired(self.timeout if self.timeout is not None else 0.0)
            if until is not None and now >= until:
                assert limit is not None
                raise RPCTimeout(f"a response to {self.stream.calls[0].topic}", limit)
            ends = [t for t in (self.deadline, until) if t is not None]
            self._handle.process(max(0.0, min(ends) - now))

    def fileno(self) -> int:
        """The connection's file descriptor: readable when more has come to ``poll``."""
        return self._handle.fileno()

    def poll(self) -> list[T]:
        """The items that have arrived, without waiting; requests made since on the
        handle are sent."""
        if self.stream.live:
            self._handle.process(0.0)
        items: list[T] = []
        while self._arrived:
            items.extend(self.stream.feed(*self._arrived.popleft()))
        return items

    def flush(self) -> None:
        """Send the requests now, so that a caller may select on ``fileno()`` at once."""
        self._handle.flush()

    def send(self, calls: list[Call]) -> None:
        """Send ``calls`` (cancels, input) with the next wait or ``poll``; their answers
        are not waited for."""
        for call in calls:
            self._handle.rpc(call.topic, call.payload, nodeid=call.nodeid).then(_ignore)


def _arriving(arrived: deque[tuple[int, Message]], index: int) -> Callable[[Message], None]:
    """What an answer to stream ``index`` does: join ``arrived`` (a closure, as
    functools.partial would cost a short command that module's import)."""
    return lambda msg: arrived.append((index, msg))


def _ignore(msg: Message) -> None:
    """An answer no one waits for (a process that ended meanwhile answers ESRCH)."""


async def drive(
    handle: AsyncHandle, stream: Stream[T], timeout: float | None = None
) -> AsyncIterator[T]:
    """``stream`` (``pflux.api.streams``) on ``handle``: its requests sent when iteration
    begins, its items as they come until every stream has ended; once ``timeout``
    seconds have passed in all, the stream's ``expired`` error."""
    import asyncio

    arrived: asyncio.Queue[tuple[int, Message]] = asyncio.Queue()
    for index, call in enumerate(stream.calls):
        sink = _putting(arrived, index)
        stream.opened(index, handle.open(call.topic, call.payload, sink, nodeid=call.nodeid))
    deadline = None if timeout is None else time.monotonic() + timeout
    while stream.live or not arrived.empty():
        if deadline is None:
            index, msg = await arrived.get()
        else:
            try:
                remaining = max(0.0, deadline - time.monotonic())
                index, msg = await asyncio.wait_for(arrived.get(), remaining)
            except TimeoutError:
                assert timeout is not None
                raise stream.expired(timeout) from None
        for item in stream.feed(index, msg):
            yield item


def _putting(arrived: asyncio.Queue[tuple[int, Message]], index: int) -> Callable[[Message], None]:
    return lambda msg: arrived.put_nowait((index, msg))
