"""The API's streaming methods, each described once and without I/O.

A streaming method opens one or more streaming requests (``calls``) and turns
each response into items (``feed``), until every stream has ended (``live``).
How a response becomes items, how a stream ends and which errors end it or
everything is the stream's; sending, waiting and timing out are the faces':
the blocking client drives a stream on its ``Handle`` (``pflux.api.driven``),
the asyncio client on its ``AsyncHandle`` (``drive``, there too), so a streaming
method is written once here, as the request methods are in ``exchange``.
An error response ends its stream (ENODATA: the normal end).
"""

from __future__ import annotations

import errno

from pflux.api.exchange import Call
from pflux.errors import RPCError, RPCTimeout
from pflux.spec.eventlog import Event, EventlogReader

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence
    from typing import Any, TypeVar
    from typing import Generic as Parametric

    from pflux.protocol.message import Message

    T = TypeVar("T")
else:
    Any = T = object  # what run-time subscripts take: only the type checker reads them

    class Parametric:
        """``typing.Generic`` to the type checker, a plain base at run time: subscripting
        generic classes would cost every command's start-up a few hundred µs."""

        def __class_getitem__(cls, item: object) -> type:
            return cls


EVENTLOG_WATCH = "job-info.eventlog-watch"
WATCH, CANCEL = "kvs.watch", "kvs.watch-cancel"

#: what one of several followed logs gives: an event, its end (None), or the error that ends it
LogItem = tuple[int, Event | RPCError | None]
#: what a command run on a rank gives: an entry of rexec.exec's stream, the error that
#: ended it, or None once it ended normally
ExecItem = tuple[int, dict[str, Any] | RPCError | None]


class Stream(Parametric[T]):
    """A streaming method: its requests, and the items each response gives."""

    def __init__(self, calls: list[Call]) -> None:
        self.calls = calls
        self.live = len(calls)  # streams not ended yet

    def opened(self, index: int, matchtag: int) -> None:
        """``calls[index]`` was sent with ``matchtag`` (what a cancel names)."""

    def feed(self, index: int, msg: Message) -> list[T]:
        """The items of response ``msg`` to ``calls[index]``; an error response other
        than the normal end raises RPCError."""
        if msg.errnum:
            self.live -= 1
            if msg.errnum != errno.ENODATA:
                raise RPCError(msg.errnum, msg.errstr)
            return []
        return self.items(msg.payload)

    def items(self, payload: Any) -> list[T]:
        """The items of one response's payload."""
        return [payload]

    def expired(self, timeout: float) -> RPCError:
        """The error when the caller's ``timeout`` passes before the stream ends."""
        return RPCTimeout(f"a response to {self.calls[0].topic}", timeout)


class Eventlog(Stream[Event]):
    """``events``: one job's eventlog (or a guest eventlog), live until the job is inactive."""

    def __init__(self, jobid: int, path: str) -> None:
        super().__init__([_watch(jobid, path)])
        self.reader = EventlogReader()

    def feed(self, index: int, msg: Message) -> list[Event]:
        if msg.errnum == errno.ENODATA:
            self.reader.finish()
        return super().feed(index, msg)

    def items(self, payload: Any) -> list[Event]:
        return self.reader.feed(payload["data"])


class Logs(Stream[LogItem]):
    """``follow_logs``: several logs at once, each ``(jobid, path)``; the error that ends
    one is an item, not raised."""

    def __init__(self, logs: Sequence[tuple[int, str]]) -> None:
        super().__init__([_watch(jobid, path) for jobid, path in logs])
        self.readers = [EventlogReader() for _ in logs]

    def feed(self, index: int, msg: Message) -> list[LogItem]:
        if msg.errnum:
            self.live -= 1  # an error response ends a stream, once
            if msg.errnum != errno.ENODATA:
                return [(index, RPCError(msg.errnum, msg.errstr))]
            self.readers[index].finish()
            return [(index, None)]
        return [(index, event) for event in self.readers[index].feed(msg.payload["data"])]


class Walk(Stream[tuple[str, str]]):
    """``kvs_walk``: every ``(key, value)`` below a directory, a page at a time."""

    def __init__(self, payload: Mapping[str, Any]) -> None:
        super().__init__([Call("kvs.walk", payload, streaming=True)])

    def items(self, payload: Any) -> list[tuple[str, str]]:
        return [(key, value) for key, value in payload["entries"]]


def dmesg(follow: bool, new: bool) -> Call:
    """``dmesg``: the instance's log entries (``new``: only those to come; ``follow``:
    live), each response's payload one, as any stream's payloads are given by the
    handles (``RPC``'s iteration, ``AsyncHandle.stream``)."""
    return Call("log.dmesg", {"follow": follow, "nobacklog": new}, streaming=True, wait=True)


class Watches(Stream[tuple[int, str]]):
    """``kvs_watch``: several keys at once; ``(index, value)`` as each changes, none
    from a watch once it is stopped. An error ends every watch."""

    def __init__(self, payloads: Sequence[Mapping[str, Any]]) -> None:
        super().__init__([Call(WATCH, dict(p), streaming=True, wait=True) for p in payloads])
        self.tags: dict[int, int] = {}
        self.stopped: set[int] = set()

    def opened(self, index: int, matchtag: int) -> None:
        self.tags[index] = matchtag

    def feed(self, index: int, msg: Message) -> list[tuple[int, str]]:
        if msg.errnum:
            return super().feed(index, msg)
        return [] if index in self.stopped else [(index, msg.payload["value"])]

    def stop(self, index: int) -> Call | None:
        """The request that cancels watch ``index``; None once it is stopped already."""
        if index in self.stopped:
            return None
        self.stopped.add(index)
        # with a response: the broker identifies the sender of a cancel by its reply route
        return Call(CANCEL, {"matchtag": self.tags[index]})

    def expired(self, timeout: float) -> RPCError:
        return RPCError(errno.ETIMEDOUT, "kvs.watch: timed out")


class Execs(Stream[ExecItem]):
    """``rexec``: one command on each of ``ranks``; ``(rank, entry)`` as each process
    starts, writes and ends, the error that ends one an item, not raised."""

    def __init__(self, ranks: Sequence[int], payload: Mapping[str, Any]) -> None:
        calls = [Call("rexec.exec", payload, streaming=True, wait=True, nodeid=r) for r in ranks]
        super().__init__(calls)
        self.ranks = list(ranks)
        self.pids: dict[int, int] = {}  # rank -> pid, once started
        self.running = set(ranks)  # ranks whose stream has not ended

    def feed(self, index: int, msg: Message) -> list[ExecItem]:
        rank = self.ranks[index]
        if msg.errnum:
            self.live -= 1
            self.running.discard(rank)
            self.pids.pop(rank, None)
            ended = None if msg.errnum == errno.ENODATA else RPCError(msg.errnum, msg.errstr)
            return [(rank, ended)]
        entry: dict[str, Any] = msg.payload
        if entry.get("type") == "started":
            self.pids[rank] = entry["pid"]
        return [(rank, entry)]

    def writes(self, data: bytes, eof: bool) -> list[Call]:
        """The requests that give ``data`` to every started process's input (``eof``
        closes it)."""
        payload: dict[str, Any] = {"eof": eof}
        try:
            payload["data"] = data.decode()
        except UnicodeDecodeError:
            import base64

            payload.update(data=base64.b64encode(data).decode(), encoding="base64")
        return [
            Call("rexec.write", {**payload, "pid": pid}, nodeid=rank)
            for rank, pid in self.pids.items()
        ]

    def kills(self, signum: int) -> list[Call]:
        """The requests that send ``signum`` to every started process."""
        return [
            Call("rexec.kill", {"pid": pid, "signum": signum}, nodeid=rank)
            for rank, pid in self.pids.items()
        ]


def logged(text: str) -> Iterator[Event]:
    """``events`` not followed: the events of a log as read (``read_log``)."""
    reader = EventlogReader()
    yield from reader.feed(text)
    reader.finish()


def _watch(jobid: int, path: str) -> Call:
    return Call(EVENTLOG_WATCH, {"id": int(jobid), "path": path}, streaming=True, wait=True)
