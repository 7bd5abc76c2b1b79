"""A service in a process of its own: ``python -m pflux.broker.module FD MODULE:CLASS DIR``.

The process runs a router of its own holding the one service, linked to the
instance's broker by the socket FD (one end of a socket pair the instance
made; the broker serves the other as a connection of the local connector):
requests for the service arrive over the link and their responses go back,
and whatever the service asks of other services (``broker.send``/``call``/
``stream``) goes to the broker. The service's code is the same as in the
broker; only where it runs differs, so a busy service (job-list) costs the
broker no CPU and uses the second core.

The instance starts module processes before its own services and serves their
links once those have started: a service with a ``prepare`` method (job-list
loading its cache) does that first, knowing only the state directory DIR,
while the broker restarts; its requests wait in the socket until the broker
serves it.
"""

from __future__ import annotations

import asyncio
import errno
import importlib
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable
from typing import cast

from pflux.broker.heap import release_large_buffers
from pflux.broker.instance import freeze_gc, tune_gc
from pflux.broker.logbuf import LogForward
from pflux.broker.router import Broker, Route
from pflux.errors import ProtocolError, RPCError
from pflux.protocol.message import FLAG_NORESPONSE, REQUEST, RESPONSE, Decoder, Message, encode

log = logging.getLogger("pflux.module")


class _Reply:
    """Route for a request that came over the link: answers go back under its matchtag."""

    __slots__ = ("_disconnect", "link", "matchtag")

    def __init__(self, link: Link, matchtag: int) -> None:
        self.link = link
        self.matchtag = matchtag
        self._disconnect: dict[Callable[[], None], None] = {}

    def deliver(self, msg: Message) -> None:
        msg.matchtag = self.matchtag
        self.link.write(msg)
        if msg.errnum or not self.link.streaming.get(self.matchtag, False):
            self.link.replies.pop(self.matchtag, None)
            self.link.streaming.pop(self.matchtag, None)

    def add_disconnect(self, callback: Callable[[], None]) -> None:
        self._disconnect[callback] = None

    def discard_disconnect(self, callback: Callable[[], None]) -> None:
        self._disconnect.pop(callback, None)

    async def drain(self) -> None:
        await self.link.drain()

    def gone(self) -> None:
        callbacks, self._disconnect = self._disconnect, {}
        for callback in callbacks:
            callback()


class Link(asyncio.Protocol):
    """The module's connection to the broker, carrying requests both ways."""

    def __init__(self, local: Broker) -> None:
        self.local = local
        self.decoder = Decoder()
        self.transport: asyncio.Transport | None = None
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._tag = 0
        self._out: dict[int, tuple[Route, int, str, bool]] = {}  # our requests to the broker
        self.replies: dict[int, _Reply] = {}  # the broker's requests to us
        self.streaming: dict[int, bool] = {}
        self._writable = asyncio.Event()
        self._writable.set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast("asyncio.Transport", transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self._writable.set()
        if not self.closed.done():
            self.closed.set_result(None)
        # requests to the broker will never be answered now: say so
        out, self._out = self._out, {}
        for route, matchtag, topic, _ in out.values():
            route.deliver(_link_closed(topic, matchtag))

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    # flow control, as the broker's connections do it
    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    async def drain(self) -> None:
        await self._writable.wait()

    def write(self, msg: Message) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(encode(msg))

    def data_received(self, data: bytes) -> None:
        try:
            messages = self.decoder.feed(data)
        except ProtocolError as exc:
            log.error("link to the broker: %s", exc)
            if self.transport is not None:
                self.transport.close()
            return
        for msg in messages:
            if msg.type == RESPONSE:
                self._response(msg)
            elif msg.topic.endswith(".disconnect") and msg.flags & FLAG_NORESPONSE:
                reply = self.replies.pop(int((msg.payload or {}).get("matchtag", 0)), None)
                if reply is not None:
                    reply.gone()
            else:
                self._request(msg)

    def _request(self, msg: Message) -> None:
        reply = _Reply(self, msg.matchtag)
        if not msg.flags & FLAG_NORESPONSE:
            self.replies[msg.matchtag] = reply
            self.streaming[msg.matchtag] = msg.streaming
        self.local.dispatch(msg, reply)

    def forward(self, msg: Message, route: Route) -> None:
        """A request of the module's service for a service elsewhere: send it to the broker."""
        if self.closed.done():  # nobody will answer it (a service stopping after the broker)
            if not msg.flags & FLAG_NORESPONSE:
                route.deliver(_link_closed(msg.topic, msg.matchtag))
            return
        self._tag += 1
        if not msg.flags & FLAG_NORESPONSE:
            self._out[self._tag] = (route, msg.matchtag, msg.topic, msg.streaming)
        self.write(Message(REQUEST, msg.topic, self._tag, msg.payload, flags=msg.flags))

    def _response(self, msg: Message) -> None:
        entry = self._out.get(msg.matchtag)
        if entry is None:
            return
        route, matchtag, topic, streaming = entry
        if msg.errnum or not streaming:
            del self._out[msg.matchtag]
        route.deliver(
            Message(RESPONSE, topic, matchtag, msg.payload, errnum=msg.errnum, errstr=msg.errstr)
        )

    async def call(self, topic: str, payload: object) -> object:
        """A request of the module host itself (service-add, attrs)."""
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()

        class _Once:
            def deliver(self, msg: Message) -> None:
                if not future.done():
                    future.set_result(msg)

            def add_disconnect(self, callback: Callable[[], None]) -> None:
                """The host never goes away while it waits."""

            def discard_disconnect(self, callback: Callable[[], None]) -> None:
                """Nothing was added."""

            async def drain(self) -> None:
                """One response: nothing to hold up."""

        self.forward(Message(REQUEST, topic, 0, payload), _Once())
        return (await future).raise_for_error()


def _log_append(entry: dict[str, object]) -> Message:
    return Message(REQUEST, "log.append", 0, entry, flags=FLAG_NORESPONSE)


def _link_closed(topic: str, matchtag: int) -> Message:
    return Message(
        RESPONSE, topic, matchtag, None, errnum=errno.ECONNRESET,
        errstr="the link to the broker is closed",
    )  # fmt: skip


async def run(fd: int, path: str, state_dir: str) -> int:
    """Provide the service ``path`` names (``module:Class``) until the link closes."""
    tune_gc()
    release_large_buffers()
    loop = asyncio.get_running_loop()
    local = Broker(os.getuid(), attrs={"state-dir": state_dir})
    module, _, cls = path.partition(":")
    service = getattr(importlib.import_module(module), cls)(local)
    prepare = getattr(service, "prepare", None)
    if prepare is not None:
        await prepare()  # work that needs no other service, while the broker starts
    link = Link(local)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, fileno=fd)
    await loop.create_unix_connection(lambda: link, sock=sock)
    local.fallback = link.forward
    try:
        attrs = await link.call("broker.attrs", {})
    except RPCError as exc:  # the broker did not start
        log.info("%s: %s", path, exc.errstr)
        return 1
    local.attrs.update(attrs["attrs"])  # type: ignore[index]
    forward = LogForward(lambda entry: link.write(_log_append(entry)), loop)
    logging.getLogger().addHandler(forward)
    local.register(service)
    await local.start()
    freeze_gc()
    # SIGTERM (the instance stopping) ends the service as the broker going away does,
    # but the service stops with the link still up: it may still ask the broker for
    # what it needs to finish (job-list: the journal's last entries, for its cache)
    stopping: asyncio.Future[None] = loop.create_future()

    def stop() -> None:
        if not stopping.done():
            stopping.set_result(None)

    loop.add_signal_handler(signal.SIGTERM, stop)
    try:
        await link.call("broker.service-add", {"service": service.name})
        await asyncio.wait((link.closed, stopping), return_when=asyncio.FIRST_COMPLETED)
    except RPCError as exc:
        log.error("%s: %s", path, exc.errstr)
    await local.stop()
    logging.getLogger().removeHandler(forward)
    link.close()
    return 0


def main(argv: list[str]) -> int:
    logging.basicConfig(format="%(asctime)s %(name)s %(levelname)s: %(message)s")
    root = logging.getLogger()
    level = logging.getLevelName(os.environ.get("PFLUX_MODULE_LOGLEVEL", "WARNING"))
    for handler in root.handlers:
        handler.setLevel(level)  # stderr; the broker's log ring gets INFO (LogForward)
    root.setLevel(min(level, logging.INFO) if isinstance(level, int) else logging.INFO)
    fd, path, state_dir = argv
    import uvloop

    return uvloop.run(run(int(fd), path, state_dir))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
