"""The local connector: a Unix socket whose peers are known by kernel credentials.

The userid of every request is the one the kernel reports for the connection
(SO_PEERCRED), never anything the client says. Only the instance owner and
root may connect for now; anyone else is told so and disconnected.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
import struct
from collections.abc import Callable
from pathlib import Path

from pflux.broker.message import (
    REQUEST,
    RESPONSE,
    ROLE_OWNER,
    ROLE_USER,
    Decoder,
    Message,
    ProtocolError,
    RPCError,
    encode,
)
from pflux.broker.router import Broker

log = logging.getLogger("pflux.connector")

_UCRED = struct.Struct("3i")  # pid, uid, gid


def peer_credentials(sock: socket.socket) -> tuple[int, int, int]:
    """The (pid, uid, gid) of a Unix socket's peer, from the kernel."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
    pid, uid, gid = _UCRED.unpack(raw)
    return pid, uid, gid


class Connection(asyncio.Protocol):
    """One client connection: decodes its requests and delivers their responses."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.transport: asyncio.Transport | None = None
        self.decoder = Decoder()
        self.userid = -1
        self.pid = 0
        self.rolemask = 0
        self._disconnect: dict[Callable[[], None], None] = {}
        self.closed = False

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        self.pid, self.userid, _ = peer_credentials(sock)
        if self.userid not in (self.broker.owner, 0):
            self.refuse(
                errno.EPERM,
                f"permission denied: uid {self.userid} may not connect to the instance"
                f" of uid {self.broker.owner}",
            )
            return
        self.rolemask = ROLE_OWNER

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        try:
            messages = self.decoder.feed(data)
        except ProtocolError as exc:
            self.refuse(errno.EPROTO, f"protocol error: {exc}")
            return
        for msg in messages:
            if msg.type != REQUEST:
                # clients only send requests; a stray response is ignored, as in Flux
                continue
            msg.userid = self.userid
            msg.rolemask = self.rolemask or ROLE_USER
            self.broker.dispatch(msg, self)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.decoder.pending:
            log.info("uid %d pid %d disconnected mid-message", self.userid, self.pid)
        self.closed = True
        callbacks = list(self._disconnect)
        self._disconnect.clear()
        for callback in callbacks:
            try:
                callback()
            except Exception:
                log.exception("disconnect callback failed")

    # Route

    def deliver(self, msg: Message) -> None:
        if self.closed or self.transport is None:
            return
        try:
            data = encode(msg)
        except RPCError as exc:
            data = encode(
                Message(RESPONSE, msg.topic, msg.matchtag, errnum=exc.errnum, errstr=exc.errstr)
            )
        self.transport.write(data)

    def add_disconnect(self, callback: Callable[[], None]) -> None:
        if self.closed:
            callback()
        else:
            self._disconnect[callback] = None

    def discard_disconnect(self, callback: Callable[[], None]) -> None:
        self._disconnect.pop(callback, None)

    def refuse(self, errnum: int, errstr: str) -> None:
        """Tell the client what is wrong (matchtag 0), then hang up."""
        log.info("closing connection of uid %d: %s", self.userid, errstr)
        if self.transport is not None:
            self.transport.write(
                encode(Message(RESPONSE, "broker.error", 0, errnum=errnum, errstr=errstr))
            )
            self.transport.close()
        self.closed = True


async def serve(broker: Broker, path: Path) -> asyncio.AbstractServer:
    """Listen on ``path`` (its directory is made private to the owner)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    if path.exists() or path.is_symlink():
        path.unlink()
    loop = asyncio.get_running_loop()
    server = await loop.create_unix_server(lambda: Connection(broker), str(path), backlog=1024)
    return server
