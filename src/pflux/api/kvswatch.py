"""Watches of several KVS keys at once, on one connection: what ``Client.kvs_watch``
and ``AsyncClient.kvs_watch`` return (``pflux kvs get -w`` uses them).

Iterating gives ``(index in keys, value)`` as values come; ``stop(index)`` cancels
one watch (values already on their way are dropped). Iteration ends when every
watch has ended: its key removed, or stopped. What a watch gives is
``pflux.api.streams.Watches``; each class here drives it on its face's handle.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence

from pflux.api.driven import Driven, drive
from pflux.api.streams import Watches

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from pflux.client.aio import AsyncHandle
    from pflux.client.handle import Handle


class KVSWatch(Driven[tuple[int, str]]):
    """Watches of a blocking Client; the requests are sent when it is made. Its
    ``deadline`` (a ``time.monotonic()``; None: never) makes iteration raise RPCError
    ETIMEDOUT once passed."""

    def __init__(self, handle: Handle, payloads: Sequence[Mapping[str, Any]]) -> None:
        self._watches = Watches(payloads)
        super().__init__(handle, self._watches)

    def stop(self, index: int) -> None:
        """Cancel watch ``index``; its end arrives through the iteration."""
        cancel = self._watches.stop(index)
        if cancel is not None:
            self.send([cancel])


class AsyncKVSWatch:
    """Watches of an AsyncClient; the requests are sent when iteration begins."""

    def __init__(self, handle: AsyncHandle, payloads: Sequence[Mapping[str, Any]]) -> None:
        self._handle = handle
        self._watches = Watches(payloads)

    async def __aiter__(self) -> AsyncIterator[tuple[int, str]]:
        """As ``KVSWatch``'s iteration."""
        async for item in drive(self._handle, self._watches):
            yield item

    async def stop(self, index: int) -> None:
        """Cancel watch ``index`` (once iteration has begun)."""
        cancel = self._watches.stop(index)
        if cancel is not None:
            await self._handle.call(cancel.topic, cancel.payload)
