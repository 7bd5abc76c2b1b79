"""The streaming methods, described once without I/O (``pflux.api.streams``), and both
faces' drivers (``pflux.api.driven``): the same responses give the same items, ends
and errors whether the blocking or the asyncio connection drives them."""

from __future__ import annotations

import asyncio
import errno
import time
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from pflux.api.driven import Driven, drive
from pflux.api.streams import Eventlog, Execs, Logs, Stream, Walk, Watches
from pflux.errors import RPCError, RPCTimeout
from pflux.protocol.message import RESPONSE, Message

T = TypeVar("T")
Script = list[tuple[int, Message]]  # (index of the call answered, its response)

LINE = '{"timestamp":1.0,"name":"submit","context":{}}\n'
END = errno.ENODATA


def reply(payload: Any = None, errnum: int = 0, errstr: str | None = None) -> Message:
    return Message(RESPONSE, "", 0, payload, errnum=errnum, errstr=errstr)


class _RPC:
    def __init__(self, handle: _Handle, index: int) -> None:
        self.matchtag = 100 + index
        self.handle, self.index = handle, index

    def then(self, callback: Callable[[Message], None]) -> _RPC:
        self.handle.callbacks[self.index] = callback
        return self


class _Handle:
    """A blocking handle that answers from a script, one response per ``process``."""

    timeout = 10.0

    def __init__(self, script: Script) -> None:
        self.script = list(script)
        self.sent: list[tuple[str, Any, int]] = []
        self.callbacks: dict[int, Callable[[Message], None]] = {}

    def rpc(self, topic: str, payload: Any, *, nodeid: int = -1, **_: Any) -> _RPC:
        self.sent.append((topic, payload, nodeid))
        return _RPC(self, len(self.sent) - 1)

    def flush(self) -> None:
        pass

    def process(self, timeout: float | None = None) -> bool:
        if not self.script:
            time.sleep(timeout or 0.0)
            return False
        index, msg = self.script.pop(0)
        self.callbacks[index](msg)
        return True


class _AsyncHandle:
    """The asyncio twin: the script's responses arrive on later loop turns."""

    def __init__(self, script: Script) -> None:
        self.script = list(script)
        self.sent: list[tuple[str, Any, int]] = []
        self.sinks: list[Callable[[Message], None]] = []

    def open(
        self, topic: str, payload: Any, sink: Callable[[Message], None], *, nodeid: int = -1
    ) -> int:
        self.sent.append((topic, payload, nodeid))
        self.sinks.append(sink)
        if len(self.sinks) == 1:
            asyncio.get_running_loop().call_soon(self._next)
        return 99 + len(self.sinks)

    def _next(self) -> None:
        if self.script:
            index, msg = self.script.pop(0)
            self.sinks[index](msg)
            asyncio.get_running_loop().call_soon(self._next)


def both(make: Callable[[], Stream[T]], script: Script, timeout: float | None = None) -> list[Any]:
    """What each face gives (its items, then the error that ended it, if any), checked equal;
    and the requests each sent, checked equal."""
    handle = _Handle(script)
    blocking: list[Any] = []
    try:
        blocking.extend(Driven(handle, make(), timeout))  # type: ignore[arg-type]
    except RPCError as exc:
        blocking.append(exc)
    ahandle = _AsyncHandle(script)

    async def main() -> list[Any]:
        items: list[Any] = []
        try:
            async for item in drive(ahandle, make(), timeout):  # type: ignore[arg-type]
                items.append(item)
        except RPCError as exc:
            items.append(exc)
        return items

    awaited = asyncio.run(main())
    assert _comparable(blocking) == _comparable(awaited)
    assert handle.sent == ahandle.sent
    return blocking


def _comparable(item: Any) -> Any:
    """Errors as what they say (two RPCErrors are never equal)."""
    if isinstance(item, RPCError):
        return type(item).__name__, item.errnum, item.errstr
    if isinstance(item, (list, tuple)):
        return [_comparable(i) for i in item]
    return item


def test_an_eventlog_gives_its_events_until_its_normal_end() -> None:
    script = [
        (0, reply({"data": LINE[:10]})),
        (0, reply({"data": LINE[10:] + LINE})),
        (0, reply(errnum=END)),
    ]
    events = both(lambda: Eventlog(5, "eventlog"), script)
    assert [event.name for event in events] == ["submit", "submit"]


def test_an_eventlog_error_raises_after_the_events_before_it() -> None:
    script = [(0, reply({"data": LINE})), (0, reply(errnum=errno.ENOENT, errstr="no such job"))]
    items = both(lambda: Eventlog(5, "eventlog"), script)
    assert [type(item) for item in items] == [type(items[0]), RPCError]
    assert items[1].errnum == errno.ENOENT


def test_an_eventlog_not_ended_by_its_timeout_raises_rpc_timeout() -> None:
    items = both(lambda: Eventlog(5, "eventlog"), [(0, reply({"data": LINE}))], timeout=0.05)
    assert isinstance(items[-1], RPCTimeout)
    assert "job-info.eventlog-watch" in str(items[-1])


def test_several_logs_give_each_error_as_an_item_and_end_once_all_have() -> None:
    script = [
        (1, reply(errnum=errno.ENOENT, errstr="nope")),
        (0, reply({"data": LINE})),
        (0, reply(errnum=END)),
    ]
    items = both(lambda: Logs([(1, "eventlog"), (2, "guest.output")]), script)
    assert [(index, type(item).__name__) for index, item in items] == [
        (1, "RPCError"),
        (0, "Event"),
        (0, "NoneType"),
    ]


def test_a_walk_gives_each_page_s_entries() -> None:
    script = [
        (0, reply({"entries": [["a", "1"], ["b", "2"]]})),
        (0, reply({"entries": [["c", "3"]]})),
        (0, reply(errnum=END)),
    ]
    assert both(lambda: Walk({"key": "."}), script) == [("a", "1"), ("b", "2"), ("c", "3")]


def test_watches_drop_a_stopped_watch_s_values_and_cancel_it_once() -> None:
    watches = Watches([{"key": "a"}, {"key": "b"}])
    watches.opened(0, 7)
    watches.opened(1, 8)
    cancel = watches.stop(1)
    assert cancel is not None
    assert (cancel.topic, cancel.payload) == (
        "kvs.watch-cancel",
        {"matchtag": 8},
    )
    assert watches.stop(1) is None
    assert watches.feed(1, reply({"value": "x"})) == []
    assert watches.feed(0, reply({"value": "y"})) == [(0, "y")]
    assert watches.feed(1, reply(errnum=END)) == []
    assert watches.live == 1
    with pytest.raises(RPCError):
        watches.feed(0, reply(errnum=errno.EPERM, errstr="no"))


def test_a_watch_past_its_deadline_raises_etimedout() -> None:
    items = both(lambda: Watches([{"key": "a"}]), [(0, reply({"value": "1"}))], timeout=0.05)
    assert items[0] == (0, "1")
    assert isinstance(items[1], RPCError)
    assert items[1].errnum == errno.ETIMEDOUT


def test_execs_track_each_rank_s_process_and_feed_only_the_started() -> None:
    script = [
        (0, reply({"type": "started", "pid": 42})),
        (1, reply(errnum=errno.EHOSTUNREACH, errstr="down")),
        (0, reply({"type": "exited", "status": 0})),
        (0, reply(errnum=END)),
    ]
    items = both(lambda: Execs([0, 3], {"cmd": ["true"]}), script)
    assert [(rank, type(item).__name__) for rank, item in items] == [
        (0, "dict"),
        (3, "RPCError"),
        (0, "dict"),
        (0, "NoneType"),
    ]
    execs = Execs([0, 3], {"cmd": ["true"]})
    execs.feed(0, reply({"type": "started", "pid": 42}))
    assert execs.pids == {0: 42}
    assert execs.running == {0, 3}
    (write,) = execs.writes(b"\xff", eof=True)
    assert (write.topic, write.nodeid) == ("rexec.write", 0)
    assert write.payload == {"eof": True, "data": "/w==", "encoding": "base64", "pid": 42}
    (kill,) = execs.kills(15)
    assert (kill.topic, kill.payload) == ("rexec.kill", {"pid": 42, "signum": 15})


def test_the_blocking_client_s_streams_load_no_asyncio() -> None:
    """The asyncio driver lives beside the blocking one; only using it loads asyncio."""
    import subprocess
    import sys

    code = (
        "import sys, pflux.api.client, pflux.api.logfollow, pflux.api.kvswatch, pflux.api.remote;"
        "print('asyncio' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
