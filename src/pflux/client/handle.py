"""A blocking connection to an instance, for the CLI and the job shell.

It imports no asyncio, so a command pays only for a socket. Many requests may be
in flight at once (``rpc`` returns at once; ``get`` waits), which is how a
command submits thousands of jobs without a round trip each. A caller with its
own select loop can give an RPC a callback and call ``process`` when the
socket is readable.

Connecting waits for the broker to answer a ping, so a socket that is not an
instance's fails at once and not at the first wait. An answer the caller did
not ask to wait for (anything but an RPC made with ``wait=True``) comes within
the handle's timeout (``timeout=``, else PFLUX_TIMEOUT, else 10 s) or raises
RPCTimeout.
"""

from __future__ import annotations

import _socket
import errno
import select
import time

from _pfluxcore.readbuffer import ReadBuffer

from pflux.client.routing import Router, hello_failed
from pflux.errors import ProtocolError, RPCError, RPCTimeout
from pflux.protocol.message import FLAG_NORESPONSE, FLAG_STREAMING, NODEID_ANY, Message
from pflux.protocol.uri import cannot_connect, client_timeout, socket_path, unanswered, uri_for

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections import deque
    from collections.abc import Callable, Iterator
    from typing import Any
else:
    from _collections import deque  # the collections package costs a command more


class RPC:
    """One request in flight; iterate a streaming one, ``get`` a plain one."""

    __slots__ = (
        "_handle",
        "callback",
        "done",
        "matchtag",
        "queue",
        "streaming",
        "timeout",
        "topic",
    )

    def __init__(
        self, handle: Handle, topic: str, matchtag: int, streaming: bool, timeout: float | None
    ) -> None:
        self._handle = handle
        self.topic = topic
        self.matchtag = matchtag
        self.streaming = streaming
        self.timeout = timeout  # what ``get`` waits by default; None: no limit
        self.queue: deque[Message] = deque()
        self.callback: Callable[[Message], None] | None = None
        self.done = False

    def get(self, timeout: float | None = None) -> Any:
        """The payload of the next response; an error response raises RPCError."""
        return self.next_message(timeout).raise_for_error()

    def next_message(self, timeout: float | None = None) -> Message:
        """The next response as a Message, waiting up to ``timeout`` seconds (None: the
        RPC's own limit)."""
        if timeout is None:
            timeout = self.timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.queue:
            if self.done:
                raise RPCError(errno.ENODATA, f"{self.topic}: no more responses")
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if remaining == 0.0:
                assert timeout is not None
                raise RPCTimeout(f"a response to {self.topic}", timeout)
            self._handle.process(remaining)
        return self.queue.popleft()

    def __iter__(self) -> Iterator[Any]:
        """Payloads of a stream until its normal end (ENODATA); other errors raise."""
        while True:
            msg = self.next_message()
            if msg.errnum == errno.ENODATA:
                return
            yield msg.raise_for_error()

    def deliver(self, msg: Message) -> None:
        """A response has come (``Handle.route``): queue it, or give it to the callback."""
        if not self.streaming or msg.errnum:
            self.done = True
        if self.callback is not None:
            self.callback(msg)
        else:
            self.queue.append(msg)

    def then(self, callback: Callable[[Message], None]) -> RPC:
        """Deliver responses to ``callback`` (from ``Handle.process``) instead of queueing."""
        self.callback = callback
        while self.queue:
            callback(self.queue.popleft())
        return self


class Handle(Router):
    """A connection to an instance (``uri``, else PFLUX_URI, else the system instance);
    ``timeout`` as ``client_timeout``."""

    def __init__(self, uri: str | None = None, *, timeout: float | None = None) -> None:
        path = socket_path(uri)
        self.uri = uri_for(path)
        self.timeout = client_timeout(timeout)
        # _socket's own: the socket module would load enum's conversions for its constants
        self.sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        try:
            self.sock.connect(path)
        except TimeoutError:
            self.sock.close()
            raise unanswered(self.uri, self.timeout) from None
        except OSError as exc:
            self.sock.close()
            raise cannot_connect(path, exc) from None
        self.sock.settimeout(None)
        super().__init__()
        self.events: deque[Message] = deque()  # those subscribed to (event.subscribe), unread
        self._out = bytearray()
        self._reads = ReadBuffer()
        self._poller: select.poll | None = None
        self.closed = False
        self.hello: Any = None  # the first ping's answer: who the instance takes us for
        self._hello()

    def _hello(self) -> None:
        """Wait for the broker to answer a ping: any response proves a pflux instance."""
        try:
            self.hello = self.rpc("broker.ping", {}).next_message().payload
        except (ProtocolError, RPCError) as exc:
            self.close()
            error = hello_failed(self.uri, self.timeout, exc)
            if error is exc:
                raise
            raise error from None

    def __enter__(self) -> Handle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.sock.close()
            self._poller = None

    def fileno(self) -> int:
        return self.sock.fileno()

    # --- sending ----------------------------------------------------------------------

    def rpc(
        self,
        topic: str,
        payload: Any = None,
        *,
        streaming: bool = False,
        wait: bool = False,
        nodeid: int = NODEID_ANY,
    ) -> RPC:
        """Send a request now (buffered until the next wait or ``flush``) and return its RPC.

        ``wait``: its responses come when something happens (a job ends, a log grows),
        so waiting for them has no limit unless one is given. ``nodeid``: the rank
        whose service is asked (default: whichever provides it).
        """
        flags = FLAG_STREAMING if streaming else 0
        self._out += self.request(topic, payload, flags, nodeid)
        rpc = RPC(self, topic, self.matchtag, streaming, None if wait else self.timeout)
        self.expect(rpc.deliver, flags)
        if len(self._out) > 65536:
            self.flush()
        return rpc

    def send(self, topic: str, payload: Any = None) -> None:
        """Send a request that wants no response."""
        self._out += self.request(topic, payload, FLAG_NORESPONSE)

    def call(
        self,
        topic: str,
        payload: Any = None,
        timeout: float | None = None,
        *,
        wait: bool = False,
        nodeid: int = NODEID_ANY,
    ) -> Any:
        """Send a request (to rank ``nodeid``: default any) and wait for its payload
        (``timeout``: as ``RPC.get``)."""
        return self.rpc(topic, payload, wait=wait, nodeid=nodeid).get(timeout)

    def flush(self) -> None:
        if self._out:
            try:
                self.sock.sendall(self._out)
            except OSError as exc:
                raise self._lost(exc) from None
            self._out.clear()

    # --- receiving --------------------------------------------------------------------

    def process(self, timeout: float | None = None) -> bool:
        """Send what is buffered, then read what arrives within ``timeout``; False on timeout."""
        if self.closed:  # every RPC still waiting hears why, not only the first
            raise self._lost(None)
        self.flush()
        if timeout is not None:
            if self._poller is None:
                self._poller = select.poll()
                self._poller.register(self.sock, select.POLLIN)
            if not self._poller.poll(max(timeout, 0.0) * 1e3):  # ms, rounded up
                return False
        try:
            data = self._reads.recv(self.sock)
        except OSError as exc:
            raise self._lost(exc) from None
        if not data:
            raise self._lost(None)
        try:
            messages = self.decoder.feed(data)
        except ProtocolError:
            self.close()
            raise
        for msg in messages:
            self.route(msg)
        return True

    def next_event(self, timeout: float | None = None) -> Message | None:
        """The next event subscribed to, waiting ``timeout`` seconds at most (None: no
        limit); None if none came."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.events:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return None
            self.process(remaining)
        return self.events.popleft()

    def event(self, msg: Message) -> None:
        self.events.append(msg)

    def refused(self, error: RPCError) -> None:
        self.close()
        raise error

    def _lost(self, exc: OSError | None) -> RPCError:
        # the broker may have said why it hung up (permission, protocol): prefer its words
        if not self.closed:
            try:
                data = self.sock.recv(1 << 16, _socket.MSG_DONTWAIT)
                for msg in self.decoder.feed(data):
                    if msg.matchtag == 0 and msg.errnum:
                        self.close()
                        return RPCError(msg.errnum, msg.errstr)
            except (OSError, ProtocolError):
                pass
        self.close()
        reason = f": {exc.strerror}" if exc is not None and exc.strerror else ""
        return RPCError(errno.ECONNRESET, f"lost connection to the instance{reason}")
