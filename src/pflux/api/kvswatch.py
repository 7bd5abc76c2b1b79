"""Watches of several KVS keys at once, on one connection: what ``Client.kvs_watch``
and ``AsyncClient.kvs_watch`` return (``pflux kvs get -w`` uses them).

Iterating gives ``(index in keys, value)`` as values come; ``stop(index)`` cancels
one watch (values already on their way are dropped). Iteration ends when every
watch has ended: its key removed, or stopped.
"""

from __future__ import annotations

import errno
import time
from collections import deque
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from pflux.errors import RPCError

if TYPE_CHECKING:
    from pflux.client.aio import AsyncHandle
    from pflux.client.handle import Handle
    from pflux.protocol.message import Message

WATCH, CANCEL = "kvs.watch", "kvs.watch-cancel"


class KVSWatch:
    """Watches of a blocking Client; the requests are sent when it is made."""

    def __init__(self, handle: Handle, payloads: Sequence[Mapping[str, Any]]) -> None:
        self._handle = handle
        #: a ``time.monotonic()`` past which iteration raises RPCError ETIMEDOUT (None: never)
        self.deadline: float | None = None
        self._arrived: deque[tuple[int, Message]] = deque()
        self._tags: list[int] = []
        self._live = set(range(len(payloads)))
        self._stopped: set[int] = set()
        for index, payload in enumerate(payloads):
            rpc = handle.rpc(WATCH, dict(payload), streaming=True, wait=True)
            self._tags.append(rpc.matchtag)
            rpc.then(partial(_arrive, self._arrived, index))

    def __iter__(self) -> Iterator[tuple[int, str]]:
        """``(index, value)`` until every watch has ended; a watch's error raises RPCError."""
        while self._live:
            if not self._arrived:
                if self.deadline is None:
                    self._handle.process(None)
                elif not self._handle.process(max(0.0, self.deadline - time.monotonic())):
                    raise RPCError(errno.ETIMEDOUT, "kvs.watch: timed out")
                continue
            index, msg = self._arrived.popleft()
            if msg.errnum:
                self._live.discard(index)
                if msg.errnum != errno.ENODATA:
                    raise RPCError(msg.errnum, msg.errstr)
            elif index not in self._stopped:
                yield index, msg.payload["value"]

    def stop(self, index: int) -> None:
        """Cancel watch ``index``; its end arrives through the iteration."""
        if index not in self._stopped:
            self._stopped.add(index)
            # with a response: the broker identifies the sender of a cancel by its reply route
            self._handle.rpc(CANCEL, {"matchtag": self._tags[index]})


class AsyncKVSWatch:
    """Watches of an AsyncClient; the requests are sent when iteration begins."""

    def __init__(self, handle: AsyncHandle, payloads: Sequence[Mapping[str, Any]]) -> None:
        self._handle = handle
        self._payloads = payloads
        self._tags: dict[int, int] = {}
        self._stopped: set[int] = set()

    async def __aiter__(self) -> AsyncIterator[tuple[int, str]]:
        """As ``KVSWatch``'s iteration."""
        import asyncio

        arrived: asyncio.Queue[tuple[int, str | Exception | None]] = asyncio.Queue()

        async def follow(index: int, payload: Mapping[str, Any]) -> None:
            tag, replies = self._handle.open_stream(WATCH, dict(payload))
            self._tags[index] = tag
            try:
                async for reply in replies:
                    arrived.put_nowait((index, reply["value"]))
            except Exception as exc:  # an error ends every watch, as KVSWatch's does
                arrived.put_nowait((index, exc))
            else:
                arrived.put_nowait((index, None))

        tasks = [asyncio.ensure_future(follow(i, p)) for i, p in enumerate(self._payloads)]
        live = len(tasks)
        try:
            while live:
                index, item = await arrived.get()
                if isinstance(item, Exception):
                    raise item
                if item is None:
                    live -= 1
                elif index not in self._stopped:
                    yield index, item
        finally:
            for task in tasks:
                task.cancel()

    async def stop(self, index: int) -> None:
        """Cancel watch ``index`` (once iteration has begun)."""
        if index not in self._stopped:
            self._stopped.add(index)
            await self._handle.call(CANCEL, {"matchtag": self._tags[index]})


def _arrive(arrived: deque[tuple[int, Message]], index: int, msg: Message) -> None:
    arrived.append((index, msg))
