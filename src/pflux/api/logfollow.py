"""Several logs followed at once on one connection: what ``Client.follow_logs`` returns
(``pflux submit --wait``, ``run`` and ``job attach`` use it).

Iterating waits for ``(index in logs, item)``: an ``Event``, ``None`` once that log
has ended, or an ``RPCError`` that ends it. A caller with a select loop of its own
(``job attach`` reads stdin and signals too) selects on ``fileno()`` and takes what
has arrived with ``poll()``, which never waits. A request made on the client reads
the connection while it waits, and what the logs brought then is queued here, not
readable on ``fileno()``: such a caller polls until ``poll()`` returns nothing.
"""

from __future__ import annotations

import errno
from collections import deque
from collections.abc import Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING

from pflux.errors import RPCError
from pflux.spec.eventlog import Event, EventlogReader

if TYPE_CHECKING:
    from pflux.client.handle import Handle
    from pflux.protocol.message import Message

#: what one followed log gives: an event, its end (None), or the error that ends it
Item = tuple[int, Event | RPCError | None]


class LogFollow:
    """Logs of a blocking Client, each ``(jobid, path)``; the requests are sent when it
    is made."""

    def __init__(self, handle: Handle, logs: Sequence[tuple[int, str]]) -> None:
        self._handle = handle
        self._arrived: deque[tuple[int, Message]] = deque()
        self._readers = [EventlogReader() for _ in logs]
        self.following = len(logs)  # logs not ended yet
        for index, (jobid, path) in enumerate(logs):
            payload = {"id": int(jobid), "path": path}
            rpc = handle.rpc("job-info.eventlog-watch", payload, streaming=True, wait=True)
            rpc.then(partial(_arrive, self._arrived, index))
        handle.flush()  # so that a caller may select on fileno() at once

    def __iter__(self) -> Iterator[Item]:
        """Every log's items as they come, until every log has ended."""
        while self.following:
            if not self._arrived:
                self._handle.process(None)
                continue
            yield from self._parsed(*self._arrived.popleft())

    def fileno(self) -> int:
        """The connection's file descriptor: readable when more has come to ``poll``."""
        return self._handle.fileno()

    def poll(self) -> list[Item]:
        """The items that have arrived, without waiting; requests made since on the
        client are sent."""
        if self.following:
            self._handle.process(0.0)
        items: list[Item] = []
        while self._arrived:
            items.extend(self._parsed(*self._arrived.popleft()))
        return items

    def _parsed(self, index: int, msg: Message) -> list[Item]:
        if msg.errnum:
            self.following -= 1  # an error response ends a stream, once
            if msg.errnum != errno.ENODATA:
                return [(index, RPCError(msg.errnum, msg.errstr))]
            self._readers[index].finish()
            return [(index, None)]
        return [(index, event) for event in self._readers[index].feed(msg.payload["data"])]


def _arrive(arrived: deque[tuple[int, Message]], index: int, msg: Message) -> None:
    arrived.append((index, msg))
