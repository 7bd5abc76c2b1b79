"""A blocking connection to an instance, for the CLI and the job shell.

It imports no asyncio, so a command pays only for a socket. Many requests may be
in flight at once (``rpc`` returns at once; ``get`` waits), which is how a
command submits thousands of jobs without a round trip each. A caller with its
own select loop can give an RPC a callback and call ``process`` when the
socket is readable.
"""

from __future__ import annotations

import errno
import selectors
import socket
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from pflux.broker.message import (
    FLAG_NORESPONSE,
    FLAG_STREAMING,
    REQUEST,
    Decoder,
    Message,
    ProtocolError,
    RPCError,
    encode,
)
from pflux.client.uri import NoInstanceError, socket_path


class RPCTimeout(RPCError):
    """No response within the time asked for."""

    def __init__(self, what: str) -> None:
        super().__init__(errno.ETIMEDOUT, f"timed out waiting for {what}")


class RPC:
    """One request in flight; iterate a streaming one, ``get`` a plain one."""

    __slots__ = ("_handle", "callback", "done", "matchtag", "queue", "streaming", "topic")

    def __init__(self, handle: Handle, topic: str, matchtag: int, streaming: bool) -> None:
        self._handle = handle
        self.topic = topic
        self.matchtag = matchtag
        self.streaming = streaming
        self.queue: deque[Message] = deque()
        self.callback: Callable[[Message], None] | None = None
        self.done = False

    def get(self, timeout: float | None = None) -> Any:
        """The payload of the next response; an error response raises RPCError."""
        return self.next_message(timeout).raise_for_error()

    def next_message(self, timeout: float | None = None) -> Message:
        """The next response as a Message, waiting up to ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.queue:
            if self.done:
                raise RPCError(errno.ENODATA, f"{self.topic}: no more responses")
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if remaining == 0.0:
                raise RPCTimeout(f"a response to {self.topic}")
            self._handle.process(remaining)
        return self.queue.popleft()

    def __iter__(self) -> Iterator[Any]:
        """Payloads of a stream until its normal end (ENODATA); other errors raise."""
        while True:
            msg = self.next_message()
            if msg.errnum == errno.ENODATA:
                return
            yield msg.raise_for_error()

    def then(self, callback: Callable[[Message], None]) -> RPC:
        """Deliver responses to ``callback`` (from ``Handle.process``) instead of queueing."""
        self.callback = callback
        while self.queue:
            callback(self.queue.popleft())
        return self


class Handle:
    """A connection to an instance (``uri`` or PFLUX_URI)."""

    def __init__(self, uri: str | None = None) -> None:
        path = socket_path(uri)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.connect(path)
        except OSError as exc:
            self.sock.close()
            raise NoInstanceError(
                f"cannot connect to the instance at {path}: {exc.strerror}"
            ) from None
        self._decoder = Decoder()
        self._tag = 0
        self._rpcs: dict[int, RPC] = {}
        self._out = bytearray()
        self._selector: selectors.BaseSelector | None = None
        self.closed = False

    def __enter__(self) -> Handle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.sock.close()
            if self._selector is not None:
                self._selector.close()

    def fileno(self) -> int:
        return self.sock.fileno()

    # --- sending ----------------------------------------------------------------------

    def rpc(self, topic: str, payload: Any = None, *, streaming: bool = False) -> RPC:
        """Send a request now (buffered until the next wait or ``flush``) and return its RPC."""
        self._tag += 1
        flags = FLAG_STREAMING if streaming else 0
        self._out += encode(Message(REQUEST, topic, self._tag, payload, flags=flags))
        rpc = RPC(self, topic, self._tag, streaming)
        self._rpcs[self._tag] = rpc
        if len(self._out) > 65536:
            self.flush()
        return rpc

    def send(self, topic: str, payload: Any = None) -> None:
        """Send a request that wants no response."""
        self._tag += 1
        self._out += encode(Message(REQUEST, topic, self._tag, payload, flags=FLAG_NORESPONSE))

    def call(self, topic: str, payload: Any = None, timeout: float | None = None) -> Any:
        """Send a request and wait for its payload."""
        return self.rpc(topic, payload).get(timeout)

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
        self.flush()
        if timeout is not None:
            if self._selector is None:
                self._selector = selectors.DefaultSelector()
                self._selector.register(self.sock, selectors.EVENT_READ)
            if not self._selector.select(timeout):
                return False
        try:
            data = self.sock.recv(1 << 20)
        except OSError as exc:
            raise self._lost(exc) from None
        if not data:
            raise self._lost(None)
        for msg in self._decoder.feed(data):
            self._route(msg)
        return True

    def _route(self, msg: Message) -> None:
        if msg.matchtag == 0 and msg.errnum:
            # the broker refused this connection (permission, protocol)
            self.close()
            raise RPCError(msg.errnum, msg.errstr)
        rpc = self._rpcs.get(msg.matchtag)
        if rpc is None:
            return
        if not rpc.streaming or msg.errnum:
            rpc.done = True
            del self._rpcs[msg.matchtag]
        if rpc.callback is not None:
            rpc.callback(msg)
        else:
            rpc.queue.append(msg)

    def _lost(self, exc: OSError | None) -> RPCError:
        # the broker may have said why it hung up (permission, protocol): prefer its words
        if not self.closed:
            try:
                data = self.sock.recv(1 << 16, socket.MSG_DONTWAIT)
                for msg in self._decoder.feed(data):
                    if msg.matchtag == 0 and msg.errnum:
                        self.close()
                        return RPCError(msg.errnum, msg.errstr)
            except (OSError, ProtocolError):
                pass
        self.close()
        reason = f": {exc.strerror}" if exc is not None and exc.strerror else ""
        return RPCError(errno.ECONNRESET, f"lost connection to the instance{reason}")
