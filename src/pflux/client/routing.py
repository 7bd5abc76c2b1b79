"""What both connections share: matchtags, requests encoded, responses routed.

A request takes the next matchtag; a response goes to the sink its request
registered (``expect``), which is forgotten once the response is an error or
the request was not streaming. An event goes to ``event``; an error response
with no matchtag is the broker refusing the connection (``refused``). The
blocking ``Handle`` and the ``AsyncHandle`` differ only in how they write, read
and wait, and in what their sinks are (an ``RPC``, a queue).
"""

from __future__ import annotations

import errno

# the class collections.abc re-exports, without the collections package (a command
# that loads it pays for OrderedDict, Counter, ChainMap...)
from _collections_abc import Callable

from pflux.errors import NoInstanceError, PfluxError, ProtocolError, RPCError, RPCTimeout
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
from pflux.protocol.uri import hung_up, not_an_instance, unanswered

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

Sink = Callable[[Message], None]


class Router:
    """A connection's RPC bookkeeping; ``event`` and ``refused`` are its owner's."""

    def __init__(self) -> None:
        self.decoder = Decoder(types=(REQUEST, RESPONSE, EVENT))
        self.matchtag = 0  # the last one taken
        self._sinks: dict[int, Sink] = {}  # matchtag -> where its responses go
        self._streams: set[int] = set()  # those of streaming requests

    def request(self, topic: str, payload: Any, flags: int = 0, nodeid: int = NODEID_ANY) -> bytes:
        """A request's wire form, with the next matchtag."""
        self.matchtag += 1
        return encode(Message(REQUEST, topic, self.matchtag, payload, flags=flags, nodeid=nodeid))

    def expect(self, sink: Sink, flags: int) -> None:
        """Give the last request's responses to ``sink``."""
        self._sinks[self.matchtag] = sink
        if flags & FLAG_STREAMING:
            self._streams.add(self.matchtag)

    def forget(self, matchtag: int) -> None:
        """Drop what comes for ``matchtag`` from now on."""
        self._sinks.pop(matchtag, None)
        self._streams.discard(matchtag)

    def route(self, msg: Message) -> None:
        """Deliver one message read from the connection."""
        if msg.type == EVENT:
            self.event(msg)
            return
        if msg.matchtag == 0 and msg.errnum:  # the broker refused this connection
            self.refused(RPCError(msg.errnum, msg.errstr))
            return
        tag = msg.matchtag
        sink = self._sinks.get(tag)
        if sink is None:
            return
        if msg.errnum or tag not in self._streams:
            del self._sinks[tag]
            self._streams.discard(tag)
        sink(msg)

    def abandon(self, error: RPCError) -> None:
        """Tell every request still waiting that ``error`` ended it."""
        sinks = list(self._sinks.items())
        self._sinks.clear()
        self._streams.clear()
        for tag, sink in sinks:
            sink(Message(REQUEST, "", tag, errnum=error.errnum, errstr=error.errstr))

    def event(self, msg: Message) -> None:
        """An event subscribed to has come."""
        raise NotImplementedError

    def refused(self, error: RPCError) -> None:
        """The broker refused the connection (permission, protocol)."""
        raise NotImplementedError


def hello_failed(uri: str, timeout: float | None, exc: PfluxError) -> PfluxError:
    """What a connection's first ping failing with ``exc`` means: nothing answered,
    what answered is not an instance, it hung up, or the broker's own refusal."""
    if isinstance(exc, RPCTimeout):
        return unanswered(uri, timeout)
    if isinstance(exc, ProtocolError):  # what the socket sent is not a message
        return NoInstanceError(not_an_instance(uri, exc))
    if isinstance(exc, RPCError) and exc.errnum == errno.EPROTO:  # as the asyncio one says it
        return NoInstanceError(exc.errstr)
    if isinstance(exc, RPCError) and exc.errnum == errno.ECONNRESET:
        return hung_up(uri)
    return exc  # the broker's own refusal (permission) says enough
