"""The local connector: a Unix socket whose peers are known by kernel credentials.

The userid of every request is the one the kernel reports for the connection
(SO_PEERCRED), never anything the client says, and so is its role: the
instance owner's connections (and root's where ``[access] allow-root-owner``
lets it, as the owner) carry the owner role, another local user's the user
role only, where ``[access] allow-guest-user`` lets guests in at all
(``pflux.broker.access``, read once when the socket is served); anyone else is
told so and disconnected. With guests allowed the socket is mode 0777 and its
directory 0711 (others may reach the socket but list nothing there); else they
are the owner's alone.

What a client makes the broker hold is bounded. A message longer than
``Broker.max_request`` is refused from its length header. The bytes of
incomplete messages, across every connection of one socket, stay within
``PARTIAL_BUDGET`` times that (``Inbound``): a connection that would hold more
is refused (EAGAIN), and one that sends nothing for ``STALL_TIMEOUT`` seconds in
the middle of a message is closed.

So is what the broker holds for a client that does not read. A stream that
could outrun it (a followed job output: the KVS's append watches) waits while
the connection is paused (``paused``, ``drain``: the transport's buffer is over
its high-water mark) and reads on from the store when it drains; a plain
watch keeps its latest value meanwhile and sends that. Anything else is sent
as it comes, up to ``OUTPUT_LIMIT`` bytes unread: past that the
connection is closed, logged, and what it had not read let go. The link of a
module process the instance started (job-list's) is the instance's own and is
never closed for it; a client that provides a service of its own
(``broker.service-add``) is bounded as any other client.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import cast

from pflux.broker import access as access_table
from pflux.broker import private
from pflux.broker.access import Access
from pflux.broker.router import Broker, Route
from pflux.errors import ProtocolError, RPCError
from pflux.protocol.message import (
    FLAG_NORESPONSE,
    MAX_SIZE,
    REQUEST,
    RESPONSE,
    ROLE_OWNER,
    ROLE_USER,
    Decoder,
    Message,
    encode,
    frame,
)
from pflux.protocol.peer import peer_credentials

log = logging.getLogger("pflux.connector")

PARTIAL_BUDGET = 4  # longest requests' worth of incomplete messages held at once
STALL_TIMEOUT = 30.0  # seconds a connection may stop in the middle of a message
OUTPUT_LIMIT = 2 * MAX_SIZE  # bytes a client may leave unread before it is disconnected
OWNER_ONLY = Access()  # no [access] table: the owner alone connects


class Inbound:
    """The bytes of incomplete messages held for the connections of one socket."""

    __slots__ = ("held",)

    def __init__(self) -> None:
        self.held = 0


class Connection(asyncio.Protocol):
    """One client connection: decodes its requests and delivers their responses."""

    def __init__(
        self,
        broker: Broker,
        inbound: Inbound | None = None,
        *,
        access: Access = OWNER_ONLY,
        module: bool = False,
    ) -> None:
        self.broker = broker
        self.access = access  # the [access] table, read once by ``serve``
        self.module = module  # the link of a module process the instance started
        self.transport: asyncio.Transport | None = None
        self.decoder = Decoder(broker.max_request)
        self.inbound = Inbound() if inbound is None else inbound
        self._held = 0  # this connection's share of inbound.held
        self._heard = 0.0  # when a byte last arrived, while a message is incomplete
        self._stall: asyncio.TimerHandle | None = None
        self.userid = -1
        self.pid = 0
        self.rolemask = 0
        self._disconnect: dict[Callable[[], None], None] = {}
        self.closed = False
        self.provider: Provider | None = None  # set once this peer provides a service
        self._writable: asyncio.Event | None = None  # set while the peer keeps up

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it
        self.transport = cast("asyncio.Transport", transport)
        sock = transport.get_extra_info("socket")
        self.pid, self.userid, _ = peer_credentials(sock)
        owner = self.broker.owner
        if self.userid == 0 and owner != 0:
            if self.access.root_owner:
                log.info("root (pid %d) connected as the instance owner, uid %d", self.pid, owner)
                self.userid = owner  # what root submits runs as the owner, so it is the owner's
            elif not self.access.guest_user:
                self.refuse(
                    errno.EPERM,
                    f"permission denied: uid 0 (root) may not connect to the instance of"
                    f" uid {owner} unless its config sets [access] allow-root-owner = true",
                )
                return
        if self.userid == owner:
            self.rolemask = ROLE_OWNER
            return
        if not self.access.guest_user:
            self.refuse(
                errno.EPERM,
                f"permission denied: uid {self.userid} may not connect to the instance"
                f" of uid {owner}",
            )
            return
        self.rolemask = ROLE_USER  # a guest: each service serves it what its handlers allow

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        try:
            messages = self.decoder.feed(data)
        except ProtocolError as exc:
            self.refuse(errno.EPROTO, f"protocol error: {exc}")
            return
        if self._hold(self.decoder.pending):
            return
        for msg in messages:
            if msg.type != REQUEST:
                # a response answers a request forwarded to a service this peer provides;
                # from anyone else it is stray, and ignored as Flux does
                if self.provider is not None:
                    self.provider.response(msg)
                continue
            msg.userid = self.userid
            msg.rolemask = self.rolemask
            if msg.errnum:  # refused as it was decoded (decode_body)
                if not msg.flags & FLAG_NORESPONSE:
                    self.deliver(
                        Message(
                            RESPONSE, msg.topic, msg.matchtag, errnum=msg.errnum, errstr=msg.errstr
                        )
                    )
                continue
            self.broker.dispatch(msg, self)

    def _hold(self, pending: int) -> bool:
        """Account for ``pending`` bytes of an incomplete message; True: refused for it."""
        inbound = self.inbound
        inbound.held += pending - self._held
        self._held = pending
        if not pending:
            if self._stall is not None:
                self._stall.cancel()
                self._stall = None
            return False
        budget = PARTIAL_BUDGET * self.decoder.limit
        if inbound.held > budget and not self.module:
            self.refuse(
                errno.EAGAIN,
                f"the broker holds {inbound.held} bytes of incomplete messages, more than"
                f" its limit of {budget}; try again",
            )
            return True
        loop = asyncio.get_running_loop()
        self._heard = loop.time()
        if self._stall is None:
            self._stall = loop.call_at(self._heard + STALL_TIMEOUT, self._stalled)
        return False

    def _stalled(self) -> None:
        """Close a connection that sent nothing for STALL_TIMEOUT in the middle of a message."""
        loop = asyncio.get_running_loop()
        quiet = loop.time() - self._heard
        if quiet < STALL_TIMEOUT:
            self._stall = loop.call_at(self._heard + STALL_TIMEOUT, self._stalled)
            return
        self._stall = None
        self.refuse(
            errno.ETIMEDOUT,
            f"protocol error: nothing received for {quiet:.0f}s in the middle of a message"
            f" ({self.decoder.pending} bytes held)",
        )

    def connection_lost(self, exc: Exception | None) -> None:
        self._hold(0)
        if self._writable is not None:
            self._writable.set()  # nobody waits on a connection that is gone
        if self.decoder.pending:
            log.info("uid %d pid %d disconnected mid-message", self.userid, self.pid)
            self.decoder.clear()
        self.closed = True
        if self.provider is not None:
            self.provider.lost()
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
            data = frame(msg)
        except RPCError as exc:
            data = frame(
                Message(RESPONSE, msg.topic, msg.matchtag, errnum=exc.errnum, errstr=exc.errstr)
            )
        self.transport.writelines(data)
        unread = self.transport.get_write_buffer_size()
        if unread > OUTPUT_LIMIT and not self.module:
            log.warning(
                "closing connection of uid %d pid %d: %d bytes sent to it unread, more than %d",
                self.userid,
                self.pid,
                unread,
                OUTPUT_LIMIT,
            )
            self.transport.abort()  # what it has not read is let go at once
            self.closed = True

    # flow control: asyncio calls these as the transport's buffer fills and empties

    def pause_writing(self) -> None:
        if self._writable is None:
            self._writable = asyncio.Event()
        self._writable.clear()

    def resume_writing(self) -> None:
        if self._writable is not None:
            self._writable.set()

    async def drain(self) -> None:
        if self._writable is not None and not self.closed:
            await self._writable.wait()

    @property
    def paused(self) -> bool:
        """The peer has not read what was sent (the transport's buffer is over its mark)."""
        return self._writable is not None and not self._writable.is_set() and not self.closed

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
        self._hold(0)
        self.decoder.clear()


class _Forwarded:
    __slots__ = ("matchtag", "on_gone", "route", "streaming", "topic")

    def __init__(self, route: Route, msg: Message, on_gone: Callable[[], None]) -> None:
        self.route = route
        self.matchtag = msg.matchtag
        self.topic = msg.topic
        self.streaming = msg.streaming
        self.on_gone = on_gone

    def answer(self, payload: object, errnum: int = 0, errstr: str | None = None) -> None:
        """Deliver a response to the requester, under its own matchtag."""
        self.route.deliver(
            Message(RESPONSE, self.topic, self.matchtag, payload, errnum=errnum, errstr=errstr)
        )


class Provider:
    """A connection whose peer provides services: requests go to it, its responses come back.

    A guest's request reaches only a module process's services (whose handlers say
    which serve guests); another client's are the owner's alone. Each forwarded
    request gets a matchtag of this connection's own; the peer
    answers with it and the answer is delivered to the requester under the
    requester's matchtag. A requester that goes away is reported to the peer as
    a ``<service>.disconnect`` request naming the forwarded matchtag.
    """

    def __init__(self, broker: Broker, conn: Connection) -> None:
        self.broker = broker
        self.conn = conn
        self.services: set[str] = set()
        self._tag = 0
        self._pending: dict[int, _Forwarded] = {}
        conn.decoder.limit = MAX_SIZE  # a service's answers (job-list's) may be long

    def add(self, service: str) -> None:
        self.services.add(service)
        self.broker.remote[service] = self.forward

    def remove(self, service: str) -> None:
        """Requests for ``service`` no longer come here (those already forwarded are answered)."""
        self.services.discard(service)
        if self.broker.remote.get(service) == self.forward:
            del self.broker.remote[service]

    def forward(self, msg: Message, route: Route) -> None:
        if not msg.rolemask & ROLE_OWNER and not self.conn.module:
            # a client's service declares no guest methods: the owner's alone, as a flux
            # handler is unless it allows the user role; a module process's checks its own
            if not msg.flags & FLAG_NORESPONSE:
                route.deliver(
                    Message(
                        RESPONSE,
                        msg.topic,
                        msg.matchtag,
                        errnum=errno.EPERM,
                        errstr=f"{msg.topic}: only the instance owner may do this",
                    )
                )
            return
        self._tag += 1
        tag = self._tag
        if not msg.flags & FLAG_NORESPONSE:

            def gone() -> None:
                if self._pending.pop(tag, None) is not None:
                    service = msg.topic.partition(".")[0]
                    self.conn.deliver(
                        Message(
                            REQUEST,
                            f"{service}.disconnect",
                            0,
                            {"matchtag": tag},
                            flags=FLAG_NORESPONSE,
                            userid=self.broker.owner,
                            rolemask=ROLE_OWNER,
                        )
                    )

            self._pending[tag] = _Forwarded(route, msg, gone)
            route.add_disconnect(gone)
        self.conn.deliver(
            Message(
                REQUEST,
                msg.topic,
                tag,
                msg.payload,
                flags=msg.flags,
                userid=msg.userid,
                rolemask=msg.rolemask,
            )
        )

    def response(self, msg: Message) -> None:
        entry = self._pending.get(msg.matchtag)
        if entry is None:
            return
        if msg.errnum or not entry.streaming:
            del self._pending[msg.matchtag]
            entry.route.discard_disconnect(entry.on_gone)
        entry.answer(msg.payload, msg.errnum, msg.errstr)

    def lost(self) -> None:
        """The peer is gone: its services with it, and every request it held fails."""
        for service in self.services:
            if self.broker.remote.get(service) == self.forward:
                del self.broker.remote[service]
        pending, self._pending = self._pending, {}
        for entry in pending.values():
            entry.route.discard_disconnect(entry.on_gone)
            entry.answer(None, errno.ENOSYS, f"the service providing {entry.topic!r} went away")


async def serve(broker: Broker, path: Path) -> asyncio.AbstractServer:
    """Listen on ``path``, in a directory the caller has made safe (``pflux.broker.private``,
    ``pflux.safefs.shared.socket_dir``); the socket is the owner's only (mode 0600,
    set before it listens), wherever others may enter the directory."""
    if path.exists() or path.is_symlink():
        path.unlink()
    loop = asyncio.get_running_loop()
    inbound = Inbound()
    access = access_table.access(broker.config)  # once: the config is loaded
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(path))
        os.chmod(path, 0o600)  # nobody connects before the mode below is set
    except BaseException:
        sock.close()
        raise
    server = await loop.create_unix_server(
        lambda: Connection(broker, inbound, access=access), sock=sock, backlog=1024
    )
    if access.guest_user:
        if not broker.config.get("exec", {}).get("imp"):
            log.warning(
                "[access] allow-guest-user: guests may connect; their jobs are refused,"
                " since none may run as uid %d, the instance owner's, without a privileged"
                " helper ([exec] imp)",
                broker.owner,
            )
        path.chmod(0o777)  # connecting needs write permission on the socket
        private.open_to_guests(path)
    else:
        path.chmod(0o600)
    return server
