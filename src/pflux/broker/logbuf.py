"""The instance's log ring: its last log entries, served as ``log.dmesg`` (``pflux dmesg``).

As flux-core's broker does, the broker keeps its recent log entries in memory,
whatever reaches stderr, so that a user can read what the instance said without
having kept its stderr. ``LogRing`` is a logging handler on the broker process's
root logger; ``LogService`` serves it under flux's topics: ``log.dmesg``
(streaming: the backlog, then, with ``follow``, each new entry) and ``log.clear``;
module processes send theirs with ``log.append`` (``LogForward``).
"""

from __future__ import annotations

import errno
import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from pflux.broker.router import Broker, Request, Service, method
from pflux.errors import RPCError
from pflux.protocol.broker import DmesgRequest, LogEntry
from pflux.protocol.decode import decode

RING_SIZE = 1024  # entries kept, as flux-core's default log-ring-size

# Python's levels -> syslog severities (RFC 5424), which flux's log entries carry
SEVERITY = {
    logging.CRITICAL: 2,
    logging.ERROR: 3,
    logging.WARNING: 4,
    logging.INFO: 6,
    logging.DEBUG: 7,
}

Entry = dict[str, Any]


def severity(levelno: int) -> int:
    """The syslog severity of a Python log level (one between two levels takes the lower's)."""
    for level in sorted(SEVERITY, reverse=True):
        if levelno >= level:
            return SEVERITY[level]
    return 7


def appname(logger: str) -> str:
    """Who logged, as flux names it: the service's name, without the ``pflux.`` prefix."""
    return logger.removeprefix("pflux.") or logger


def entry_of(record: logging.LogRecord, rank: int = 0) -> Entry:
    """A log record as the ring keeps it (and a module process sends it); ``rank``: the
    broker's that logged it."""
    message = record.getMessage()
    if record.exc_info and record.exc_info[1] is not None:
        message += f": {record.exc_info[1]!r}"
    return {
        "timestamp": record.created,
        "name": appname(record.name),
        "severity": severity(record.levelno),
        "rank": rank,
        "message": message,
    }


class LogRing(logging.Handler):
    """The last ``size`` log entries, and who follows new ones."""

    def __init__(self, size: int = RING_SIZE, rank: int = 0) -> None:
        super().__init__()
        self.rank = rank
        self.entries: deque[Entry] = deque(maxlen=size)
        self.followers: set[Callable[[Entry], None]] = set()
        self._lock_entries = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            entry = entry_of(record, self.rank)
        except Exception:  # a bad format string must not stop the instance
            self.handleError(record)
            return
        self.add(entry)

    def add(self, entry: Entry) -> None:
        """Keep ``entry`` and pass it to the followers."""
        with self._lock_entries:
            self.entries.append(entry)
        for follower in list(self.followers):
            follower(entry)

    @property
    def size(self) -> int:
        """The entries kept at most."""
        return self.entries.maxlen or 0

    def resize(self, size: int) -> None:
        """Keep ``size`` entries at most from now on (the newest, if fewer than now)."""
        with self._lock_entries:
            self.entries = deque(self.entries, maxlen=size)

    def backlog(self) -> list[Entry]:
        with self._lock_entries:
            return list(self.entries)

    def clear(self) -> None:
        with self._lock_entries:
            self.entries.clear()


class LogService(Service):
    """``log.dmesg`` and ``log.clear`` over a ``LogRing``."""

    name = "log"

    def __init__(self, broker: Broker, ring: LogRing) -> None:
        super().__init__(broker)
        self.ring = ring
        self._streams: dict[Callable[[Entry], None], Request] = {}

    @method("dmesg")
    def dmesg(self, req: Request) -> None:
        payload = {} if req.payload is None else req.payload  # none: the backlog
        request = decode(req.topic, payload, DmesgRequest)
        if not req.streaming:
            raise RPCError(errno.EPROTO, "log.dmesg must be a streaming request")
        if not request.nobacklog:
            for entry in self.ring.backlog():
                req.respond(entry)
        if not request.follow:
            req.end()
            return
        loop = self.broker.loop

        def follow(entry: Entry) -> None:
            # an entry may be logged from another thread: respond on the loop's
            loop.call_soon_threadsafe(req.respond, entry)

        def gone() -> None:
            self.ring.followers.discard(follow)
            self._streams.pop(follow, None)

        self.ring.followers.add(follow)
        self._streams[follow] = req
        req.on_disconnect(gone)

    @method("append")
    def append(self, req: Request) -> None:
        """An entry logged in a module process (job-list), kept with the broker's."""
        if not req.owner:
            raise RPCError(errno.EPERM, "log.append: only the instance owner's processes")
        decode(req.topic, req.payload, LogEntry)
        self.ring.add(req.payload)
        req.respond({})

    @method("clear")
    def clear(self, req: Request) -> None:
        self.ring.clear()
        req.respond({})

    async def stop(self) -> None:
        """End the followers' streams: the instance's log ends with it."""
        for follow, req in self._streams.items():
            self.ring.followers.discard(follow)
            self.broker.loop.call_soon(req.end)  # after the entries already on their way
        self._streams.clear()


class LogForward(logging.Handler):
    """In a module process: each log entry also goes to the broker's ring (``log.append``)."""

    def __init__(self, send: Callable[[Entry], None], loop: Any) -> None:
        super().__init__(logging.INFO)
        self._send = send
        self._loop = loop

    def emit(self, record: logging.LogRecord) -> None:
        try:
            entry = entry_of(record)
        except Exception:
            self.handleError(record)
            return
        self._loop.call_soon_threadsafe(self._send, entry)
