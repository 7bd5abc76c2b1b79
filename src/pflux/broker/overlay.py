"""The overlay: the brokers of one instance as a tree, over ZeroMQ with CURVE.

Each broker binds a ROUTER for its children (``Boot.bind``) and connects a
DEALER to its parent (``Boot.parent``); a peer's ZeroMQ identity is its rank in
decimal. Every socket uses CURVE: this broker's ROUTER is a CURVE server whose
ZAP handler (``inproc://zeromq.zap.01`` in the overlay's own context) lets in
only the public keys of ``Boot.allowed`` and logs every other at ERROR; its
DEALER proves the parent's key (``Boot.parent_key``). Nothing listens without
CURVE.

A message is the local connector's JSON body in one frame; a ``bytes`` payload
(job-exec's records) follows as a second, raw frame. Requests are routed by
``nodeid`` (``forward``): down to the child whose subtree holds the rank, or up;
each hop gives a forwarded request a matchtag of its own and sends the responses
back the way the request came. The overlay's own messages (``overlay.*``, never
answered) are handled here, never dispatched:

- ``overlay.hello {rank, info, uuid?}``: up, from a child for itself (with its
  process's uuid) and for each rank of its subtree, on connecting and whenever its
  parent comes back; rank 0 passes it to ``Broker.rank_changed`` (the rank is up and
  offers ``info``). A child saying hello with another uuid restarted: it is lost
  first, then up again.
- ``overlay.lost {ranks}``: up, ranks that went down below a broker.
- ``overlay.heartbeat``: both ways every ``heartbeat`` seconds; a peer silent for
  ``timeout`` seconds is lost. A lost child takes its subtree down; requests in
  flight through it fail with EHOSTUNREACH. A broker that lost its parent keeps
  its services and says hello again until the parent answers.
- ``overlay.rehello``: down, to a child the parent does not know (it restarted).
- ``overlay.cancel {matchtag}``: either way, the requester of a forwarded request
  went away (the disconnect callbacks of whoever serves it run).
- ``overlay.shutdown``: down the tree; each broker passes it on and stops.

A message is at most ``Overlay.limit`` bytes, a frame at a time: the longest
request a connection may send (``Broker.max_request``, or ``MAX_SIZE``, the
longest response) and ``OVERLAY_ROOM`` for the envelope a hop adds. ZeroMQ
refuses a longer frame as it arrives (``MAXMSGSIZE``: the peer that sent it is
disconnected, and reconnects), so no broker holds one; a broker never sends
one: a response over the limit goes as an EMSGSIZE error, a request is answered
EMSGSIZE where it was sent, and each drop is logged, ``DROPS_LOGGED`` a minute in
full and the rest as one count line. A connection lost once it was in (its peer
went away, or sent a frame over the limit) is logged from the sockets' monitors,
naming the peer: its address, or for ipc its process (``_peer_of``), ten a
minute in full and the rest as one count line (``RefusalLog``).

The sockets are plain (blocking-free) pyzmq sockets watched with the loop's
``add_reader`` on their ZMQ_FD, which is edge-triggered: a reader drains every
queued message, and after sending the overlay checks again on the next turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import zmq
from zmq.utils import z85
from zmq.utils.monitor import parse_monitor_message

from pflux.broker.boot import Boot
from pflux.broker.refusals import RefusalLog
from pflux.broker.router import Broker, LocalRoute, Route
from pflux.errors import ProtocolError, RPCError
from pflux.protocol.message import (
    FLAG_NORESPONSE,
    FLAG_STREAMING,
    MAX_SIZE,
    REQUEST,
    RESPONSE,
    ROLE_OWNER,
    Message,
    decode_body,
    encode_body,
)
from pflux.protocol.peer import peer_credentials

__all__ = ["HEARTBEAT", "TIMEOUT", "Overlay"]

log = logging.getLogger("pflux.overlay")

HEARTBEAT = 1.0  # seconds between heartbeats (tbon.heartbeat)
TIMEOUT = 5.0  # seconds of silence after which a peer is lost (tbon.timeout)
PARENT = -1  # the parent, as a peer
ZAP_ENDPOINT = "inproc://zeromq.zap.01"
SHUTDOWN_LINGER_MS = 2000  # how long closing waits for overlay.shutdown to leave
# on the overlay only: a service of the sending broker sent the request (not a client);
# set and cleared by the overlay, so that no client can claim it
FLAG_FROM_SERVICE = 1 << 8
REFUSAL_LOG_INTERVAL = 60.0  # a refused key retrying is logged again after this long
OVERLAY_ROOM = 64 << 10  # bytes a forwarded message may add to the longest one accepted
DROPS_LOGGED = 10  # oversize messages logged in full each REFUSAL_LOG_INTERVAL
PEERS_KEPT = 1024  # connections whose peer is remembered until they close
HANDSHAKE_FAILED = (
    zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
    | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
    | zmq.EVENT_HANDSHAKE_FAILED_AUTH
)


def _fd(sock: zmq.Socket[bytes]) -> int:
    """The socket's ZMQ_FD, readable when it has something (edge-triggered)."""
    return int(sock.getsockopt(zmq.FD))


def _events(sock: zmq.Socket[bytes]) -> int:
    return int(sock.getsockopt(zmq.EVENTS))


def _monitor_events(sock: zmq.Socket[bytes] | None) -> Iterator[tuple[int, int]]:
    """The (event, value) pairs queued on a monitor socket, in the order ZeroMQ sent them."""
    while sock is not None and not sock.closed and _events(sock) & zmq.POLLIN:
        try:
            frames = sock.recv_multipart(zmq.NOBLOCK)
        except zmq.Again:
            return
        event = parse_monitor_message(frames)
        yield int(event["event"]), int(event["value"])


def _peer_of(fd: int) -> str | None:
    """Who is at the other end of ZeroMQ's socket ``fd``: its address, or the process of
    an ipc peer (its pid and uid); None once it has closed."""
    try:
        copy = os.dup(fd)
    except OSError:
        return None
    try:
        sock = socket.socket(fileno=copy)
    except OSError:
        os.close(copy)
        return None
    with sock:
        try:
            if sock.family == socket.AF_UNIX:
                pid, uid, _ = peer_credentials(sock)
                return f"pid {pid} (uid {uid})"
            host, port = sock.getpeername()[:2]
        except OSError:
            return None
        return f"{host}:{port}"


class _Child:
    """A child as its parent knows it: its broker's uuid, when it was last heard, its
    subtree's hellos."""

    __slots__ = ("heard", "subtree", "uuid")

    def __init__(self, now: float, uuid: Any) -> None:
        self.heard = now
        self.uuid = uuid
        self.subtree: dict[int, dict[str, Any]] = {}


class _Pending:
    """A request this broker forwarded to ``peer``, awaiting responses."""

    __slots__ = ("gone", "matchtag", "peer", "route", "streaming", "topic")

    def __init__(self, peer: int, msg: Message, route: Route, gone: Callable[[], None]) -> None:
        self.peer = peer
        self.route = route
        self.matchtag = msg.matchtag
        self.topic = msg.topic
        self.streaming = msg.streaming
        self.gone = gone

    def answer(self, payload: Any, errnum: int, errstr: str | None) -> None:
        """A response to the requester, under its own topic and matchtag."""
        self.route.deliver(
            Message(RESPONSE, self.topic, self.matchtag, payload, errnum=errnum, errstr=errstr)
        )


class PeerRoute:
    """Route of a request that came from a peer: responses go back to it. ``from_service``:
    a broker's service sent it, not a client (``Request.require_internal``)."""

    __slots__ = ("_disconnect", "from_service", "matchtag", "overlay", "peer", "streaming")

    def __init__(self, overlay: Overlay, peer: int, msg: Message) -> None:
        self.overlay = overlay
        self.peer = peer
        self.matchtag = msg.matchtag
        self.streaming = bool(msg.flags & FLAG_STREAMING)
        self.from_service = bool(msg.flags & FLAG_FROM_SERVICE)
        self._disconnect: dict[Callable[[], None], None] = {}

    def deliver(self, msg: Message) -> None:
        msg.matchtag = self.matchtag
        if msg.errnum or not self.streaming:
            self.overlay._served.pop((self.peer, self.matchtag), None)
        self.overlay._send(self.peer, msg)

    def add_disconnect(self, callback: Callable[[], None]) -> None:
        self._disconnect[callback] = None

    def discard_disconnect(self, callback: Callable[[], None]) -> None:
        self._disconnect.pop(callback, None)

    async def drain(self) -> None:
        """ZeroMQ queues what the peer has not read yet."""

    def gone(self) -> None:
        """The requester went away (it canceled, or its broker was lost)."""
        callbacks, self._disconnect = self._disconnect, {}
        for callback in callbacks:
            try:
                callback()
            except Exception:
                log.exception("overlay: disconnect callback failed")


class Overlay:
    """This broker's links to its parent and children (see the module docstring)."""

    def __init__(
        self,
        broker: Broker,
        boot: Boot,
        info: dict[str, Any],
        *,
        heartbeat: float = HEARTBEAT,
        timeout: float = TIMEOUT,
    ) -> None:
        self.broker = broker
        self.boot = boot
        self.info = info  # this rank's hello
        self.heartbeat = heartbeat
        self.timeout = timeout
        self.endpoint = ""  # where the ROUTER listens, once bound (tbon.endpoint)
        self.on_shutdown: Callable[[], None] | None = None  # the parent said overlay.shutdown
        self.uuid = uuid.uuid4().hex  # this broker process: a restarted one is another
        self.children: dict[int, _Child] = {}
        self.parent_up = False
        self._parent_heard = 0.0
        self._ctx: zmq.Context[zmq.Socket[bytes]] | None = None
        self._router: zmq.Socket[bytes] | None = None
        self._dealer: zmq.Socket[bytes] | None = None
        self._zap: zmq.Socket[bytes] | None = None
        self._monitor: zmq.Socket[bytes] | None = None  # the router's connections
        self._dealer_monitor: zmq.Socket[bytes] | None = None  # the parent's connection
        self._handshake_logged = -REFUSAL_LOG_INTERVAL
        self._peers: dict[int, str | None] = {}  # a child connection's fd -> its peer
        self._refusing = False  # the router's last event was a failed handshake
        self._parent_connected = False  # the DEALER's handshake succeeded, not closed since
        self._parent_closed = False  # ... then closed, and ZeroMQ has not said it retries
        self._tag = 0
        self._pending: dict[int, _Pending] = {}
        self._served: dict[tuple[int, int], PeerRoute] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._check_scheduled = False
        self.refusals = RefusalLog(
            log, "its CURVE key is not this instance's", clock=time.monotonic
        )
        self.losses = RefusalLog(log, "", verb="lost", clock=time.monotonic)  # says why at start
        # bytes of the longest frame sent or taken (set before ``start``)
        self.limit = max(broker.max_request, MAX_SIZE) + OVERLAY_ROOM
        self._drops = 0  # oversize messages this window: the first DROPS_LOGGED logged
        self._drops_since = -REFUSAL_LOG_INTERVAL
        self._all_up = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        # a child's rank -> the child of this broker whose subtree holds it
        self._via: dict[int, int] = {}
        for rank in range(boot.rank + 1, boot.size):
            child = self._child_toward(rank)
            if child is not None:
                self._via[rank] = child

    # --- start and stop ---------------------------------------------------------------

    async def start(self) -> None:
        """Bind, connect, and say hello to the parent."""
        self._loop = loop = asyncio.get_running_loop()
        boot = self.boot
        ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        self._ctx = ctx
        self.losses.what = (
            f"it went away, or sent a message over the overlay's limit of {self.limit} bytes"
        )
        if boot.bind is not None:
            self._zap = ctx.socket(zmq.REP)
            self._zap.bind(ZAP_ENDPOINT)
            loop.add_reader(_fd(self._zap), self._zap_ready)
            router = ctx.socket(zmq.ROUTER)
            router.setsockopt(zmq.LINGER, 0)
            router.setsockopt(zmq.SNDHWM, 0)
            router.setsockopt(zmq.RCVHWM, 0)
            router.setsockopt(zmq.MAXMSGSIZE, self.limit)
            router.setsockopt(zmq.ROUTER_MANDATORY, 1)
            router.setsockopt(zmq.ROUTER_HANDOVER, 1)
            router.setsockopt(zmq.CURVE_SERVER, 1)
            router.setsockopt_string(zmq.CURVE_SECRETKEY, boot.cert.secret)
            router.setsockopt_string(zmq.ZAP_DOMAIN, "pflux")
            router.bind(boot.bind)
            self.endpoint = router.getsockopt_string(zmq.LAST_ENDPOINT)
            self._router = router
            loop.add_reader(_fd(router), self._readable, router)
            # read at each heartbeat (_tick): its descriptor does not wake a loop reliably
            self._monitor = router.get_monitor_socket(
                zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED | HANDSHAKE_FAILED
            )
        if boot.parent is not None:
            dealer = ctx.socket(zmq.DEALER)
            dealer.setsockopt(zmq.LINGER, 0)
            dealer.setsockopt(zmq.SNDHWM, 0)
            dealer.setsockopt(zmq.RCVHWM, 0)
            dealer.setsockopt(zmq.MAXMSGSIZE, self.limit)
            dealer.setsockopt(zmq.IDENTITY, str(boot.rank).encode())
            dealer.setsockopt_string(zmq.CURVE_SERVERKEY, boot.parent_key)
            dealer.setsockopt_string(zmq.CURVE_PUBLICKEY, boot.cert.public)
            dealer.setsockopt_string(zmq.CURVE_SECRETKEY, boot.cert.secret)
            dealer.setsockopt(zmq.RECONNECT_IVL, 100)
            dealer.setsockopt(zmq.RECONNECT_IVL_MAX, 1000)
            self._dealer_monitor = dealer.get_monitor_socket(
                zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_DISCONNECTED | zmq.EVENT_CONNECT_RETRIED
            )
            dealer.connect(boot.parent)
            self._dealer = dealer
            loop.add_reader(_fd(dealer), self._readable, dealer)
            self._hello_all()
        self.broker.overlay = self
        self._timer = loop.call_later(self.heartbeat, self._tick)
        if boot.size == 1:
            self._all_up.set()

    def shutdown_tree(self) -> None:
        """Tell every child to stop (and, through them, their subtrees)."""
        self.broker.ranks_stopping = True
        for rank in list(self.children):
            self._control(rank, "overlay.shutdown", {})

    async def stop(self) -> None:
        """Close the sockets; requests still in flight through them fail."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._fail_pending(None, "this broker is stopping")
        loop = asyncio.get_running_loop()
        for sock in (self._router, self._dealer, self._zap):
            if sock is not None:
                loop.remove_reader(_fd(sock))
        if self._router is not None:
            if self._monitor is not None:
                self._router.disable_monitor()
            self._router.close(linger=SHUTDOWN_LINGER_MS)
        if self._dealer is not None and self._dealer_monitor is not None:
            self._dealer.disable_monitor()
        for sock in (self._dealer, self._zap, self._monitor, self._dealer_monitor):
            if sock is not None:
                sock.close(linger=0)
        self._router = self._dealer = self._zap = self._monitor = self._dealer_monitor = None
        if self._ctx is not None:
            ctx, self._ctx = self._ctx, None
            await asyncio.to_thread(ctx.term)
        if self.broker.overlay is self:
            self.broker.overlay = None

    async def wait_all_up(self, timeout: float) -> list[int]:
        """At rank 0: wait until every rank has said hello or ``timeout`` passes (flux-core's
        quorum); the ranks still missing then."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._all_up.wait(), timeout)
        return [r for r in range(self.boot.size) if r not in self.broker.ranks]

    # --- routing ----------------------------------------------------------------------

    def _child_toward(self, rank: int) -> int | None:
        """The child of this broker whose subtree holds ``rank``; None if none does."""
        fanout = self.boot.fanout
        while rank > self.boot.rank:
            parent = (rank - 1) // fanout
            if parent == self.boot.rank:
                return rank
            rank = parent
        return None

    def _toward(self, msg: Message, route: Route) -> int | None:
        """The peer to send a request on to, or None (the requester is told why)."""
        nodeid = msg.nodeid
        if nodeid < 0:
            peer = PARENT
        elif nodeid >= self.boot.size:
            self._refuse(msg, route, f"no rank {nodeid} in this instance (size {self.boot.size})")
            return None
        else:
            peer = self._via.get(nodeid, PARENT)
        if peer == PARENT:
            if self.boot.parent_rank() is None:
                self._refuse(msg, route, f"rank {nodeid} is down")
                return None
            if not self.parent_up:
                state = "lost contact with" if self._parent_heard else "no word yet from"
                self._refuse(msg, route, f"{state} the parent (rank {self._parent()})")
                return None
        else:
            child = self.children.get(peer)
            if child is None or nodeid not in child.subtree:
                self._refuse(msg, route, f"rank {nodeid} is down")
                return None
        return peer

    def forward(self, msg: Message, route: Route) -> None:
        """Send a request toward rank ``msg.nodeid`` (NODEID_ANY: up)."""
        peer = self._toward(msg, route)
        if peer is None:
            return
        nodeid = msg.nodeid
        flags = msg.flags & ~FLAG_FROM_SERVICE
        if isinstance(route, LocalRoute) or getattr(route, "from_service", False):
            flags |= FLAG_FROM_SERVICE
        self._tag += 1
        tag = self._tag
        if not msg.flags & FLAG_NORESPONSE:

            def gone() -> None:
                if self._pending.pop(tag, None) is not None:
                    self._control(peer, "overlay.cancel", {"matchtag": tag})

            self._pending[tag] = _Pending(peer, msg, route, gone)
            route.add_disconnect(gone)
        forwarded = Message(
            REQUEST,
            msg.topic,
            tag,
            msg.payload,
            flags=flags,
            userid=msg.userid,
            rolemask=msg.rolemask,
            nodeid=nodeid,
        )
        try:
            self._send(peer, forwarded)
        except RPCError as exc:  # too long for the overlay, or not JSON
            pending = self._pending.pop(tag, None)
            if pending is not None:
                route.discard_disconnect(pending.gone)
                pending.answer(None, exc.errnum, exc.errstr)

    def _parent(self) -> int:
        parent = self.boot.parent_rank()
        return -1 if parent is None else parent

    @staticmethod
    def _refuse(msg: Message, route: Route, why: str) -> None:
        if not msg.flags & FLAG_NORESPONSE:
            route.deliver(
                Message(
                    RESPONSE,
                    msg.topic,
                    msg.matchtag,
                    errnum=errno.EHOSTUNREACH,
                    errstr=f"{msg.topic}: {why}",
                )
            )

    # --- sending ----------------------------------------------------------------------

    def _send(self, peer: int, msg: Message) -> bool:
        """Send ``msg`` to ``peer``; False if it cannot be sent (the peer is gone)."""
        payload = msg.payload
        raw = None
        if isinstance(payload, bytes | bytearray | memoryview):
            raw, msg.payload = payload, None
        try:
            body = encode_body(msg)
            size = len(body) + (0 if raw is None else len(raw))
            if size > self.limit:
                self._dropped(peer, msg, size)
                raise RPCError(
                    errno.EMSGSIZE,
                    f"{msg.topic}: message of {size} bytes exceeds the overlay's limit"
                    f" of {self.limit}",
                )
        except RPCError as exc:
            if msg.type != RESPONSE:
                raise
            msg.payload, raw = None, None
            msg.errnum, msg.errstr = exc.errnum, exc.errstr
            body = encode_body(msg)
        finally:
            if raw is not None:
                msg.payload = raw
        frames: list[Any] = [body] if raw is None else [body, raw]
        try:
            if peer == PARENT:
                if self._dealer is None:
                    return False
                self._dealer.send_multipart(frames, zmq.NOBLOCK)
            else:
                if self._router is None:
                    return False
                self._router.send_multipart([str(peer).encode(), *frames], zmq.NOBLOCK)
        except zmq.ZMQError as exc:
            if exc.errno in (errno.EHOSTUNREACH, errno.EAGAIN):
                return False
            raise
        self._recheck()
        return True

    def _dropped(self, peer: int, msg: Message, size: int) -> None:
        """Log an oversize message not sent: in full up to DROPS_LOGGED a window."""
        now = time.monotonic()
        if now - self._drops_since >= REFUSAL_LOG_INTERVAL:
            self._log_drops()
            self._drops_since = now
        self._drops += 1
        if self._drops <= DROPS_LOGGED:
            log.error(
                "overlay: %s to %s not sent: %d bytes, more than the limit of %d",
                msg.topic,
                self._name(peer),
                size,
                self.limit,
            )

    def _log_drops(self) -> None:
        """The count line of a window's drops past DROPS_LOGGED, once it has ended."""
        if self._drops > DROPS_LOGGED:
            log.error(
                "overlay: %d more messages over the limit of %d not sent in %.0f s",
                self._drops - DROPS_LOGGED,
                self.limit,
                REFUSAL_LOG_INTERVAL,
            )
        self._drops = 0

    def _control(self, peer: int, topic: str, payload: dict[str, Any]) -> None:
        msg = Message(
            REQUEST,
            topic,
            0,
            payload,
            flags=FLAG_NORESPONSE,
            userid=self.broker.owner,
            rolemask=ROLE_OWNER,
        )
        self._send(peer, msg)

    def _hello_all(self) -> None:
        """Say hello for this rank and every rank below it that is up."""
        hello = {"rank": self.boot.rank, "info": self.info, "uuid": self.uuid}
        self._control(PARENT, "overlay.hello", hello)
        self._hello_subtree()

    def _hello_subtree(self) -> None:
        for child in self.children.values():
            for rank, info in child.subtree.items():
                self._control(PARENT, "overlay.hello", {"rank": rank, "info": info})

    # --- receiving --------------------------------------------------------------------

    def _recheck(self) -> None:
        """A send may have consumed the edge of ZMQ_FD: look for input on the next turn."""
        if not self._check_scheduled and self._loop is not None:
            self._check_scheduled = True
            self._loop.call_soon(self._check_all)

    def _check_all(self) -> None:
        self._check_scheduled = False
        for sock in (self._router, self._dealer):
            if sock is not None:
                self._readable(sock)

    def _readable(self, sock: zmq.Socket[bytes]) -> None:
        while not sock.closed and _events(sock) & zmq.POLLIN:
            try:
                frames = sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            if sock is self._router:
                try:
                    peer = int(frames[0])
                except ValueError:
                    log.error("overlay: a message from an unknown identity %r dropped", frames[0])
                    continue
                frames = frames[1:]
            else:
                peer = PARENT
            if not frames:
                continue
            try:
                msg = decode_body(frames[0])
            except ProtocolError as exc:
                log.error("overlay: a malformed message from %s: %s", self._name(peer), exc)
                continue
            if len(frames) > 1:
                msg.payload = frames[1]
            self._received(peer, msg)

    def _name(self, peer: int) -> str:
        return f"rank {self._parent()}" if peer == PARENT else f"rank {peer}"

    def _received(self, peer: int, msg: Message) -> None:
        now = time.monotonic()
        if peer == PARENT:
            self._parent_heard = now
            if not self.parent_up:
                self.parent_up = True
                log.info("overlay: connected to the parent (rank %d)", self._parent())
                self._hello_subtree()  # those that said hello while the parent was away
        else:
            child = self.children.get(peer)
            if child is not None:
                child.heard = now
            elif not (msg.type == REQUEST and msg.topic == "overlay.hello"):
                if peer in self.boot.children():
                    self._control(peer, "overlay.rehello", {})
                return
        if msg.type == RESPONSE:
            self._response(msg)
        elif msg.topic.startswith("overlay."):
            self._overlay_message(peer, msg)
        elif msg.errnum:  # refused as it was decoded (too deep)
            self._refuse_decoded(peer, msg)
        else:
            route = PeerRoute(self, peer, msg)
            msg.flags &= ~FLAG_FROM_SERVICE
            if not msg.flags & FLAG_NORESPONSE:
                self._served[(peer, msg.matchtag)] = route
            self.broker.dispatch(msg, route)

    def _refuse_decoded(self, peer: int, msg: Message) -> None:
        if not msg.flags & FLAG_NORESPONSE:
            self._send(
                peer,
                Message(RESPONSE, msg.topic, msg.matchtag, errnum=msg.errnum, errstr=msg.errstr),
            )

    def _response(self, msg: Message) -> None:
        entry = self._pending.get(msg.matchtag)
        if entry is None:
            return
        if msg.errnum or not entry.streaming:
            del self._pending[msg.matchtag]
            entry.route.discard_disconnect(entry.gone)
        entry.answer(msg.payload, msg.errnum, msg.errstr)

    def _overlay_message(self, peer: int, msg: Message) -> None:
        topic = msg.topic
        payload = msg.payload if isinstance(msg.payload, dict) else {}
        if topic == "overlay.heartbeat":
            return
        if topic == "overlay.hello" and peer != PARENT:
            self._hello(peer, payload)
        elif topic == "overlay.lost" and peer != PARENT:
            self._lost_below(peer, payload.get("ranks"))
        elif topic == "overlay.cancel":
            route = self._served.pop((peer, payload.get("matchtag", -1)), None)
            if route is not None:
                route.gone()
        elif topic == "overlay.rehello" and peer == PARENT:
            self._hello_all()
        elif topic == "overlay.shutdown" and peer == PARENT:
            log.info("overlay: shutdown from the parent")
            self.shutdown_tree()
            if self.on_shutdown is not None:
                self.on_shutdown()
        else:
            log.error("overlay: unexpected %s from %s", topic, self._name(peer))

    def _hello(self, peer: int, payload: dict[str, Any]) -> None:
        rank, info = payload.get("rank"), payload.get("info")
        if type(rank) is not int or self._via.get(rank) != peer or not isinstance(info, dict):
            log.error("overlay: a malformed hello from rank %d dropped: %r", peer, payload)
            return
        child = self.children.get(peer)
        if rank == peer and child is not None and child.uuid != payload.get("uuid"):
            # the child restarted before its silence was noticed: what went through the
            # old one is lost, as flux-core passes such a child through "lost"
            self._child_lost(peer, "its broker restarted")
            child = None
        if child is None:
            child = self.children[peer] = _Child(time.monotonic(), payload.get("uuid"))
        child.subtree[rank] = info
        self._control(peer, "overlay.heartbeat", {})  # the child knows it is heard
        if self.boot.rank == 0:
            if self.broker.ranks.get(rank) == info:
                return  # said again (the child lost us for a while): nothing changed
            log.info("overlay: rank %d (%s) joined", rank, info.get("hostname", "?"))
            self.broker.rank_changed(rank, info)
            if len(self.broker.ranks) >= self.boot.size:
                self._all_up.set()
        elif self.parent_up:
            self._control(PARENT, "overlay.hello", {"rank": rank, "info": info})

    def _lost_below(self, peer: int, ranks: Any) -> None:
        child = self.children.get(peer)
        if child is None or not isinstance(ranks, list):
            return
        gone = [r for r in ranks if type(r) is int and child.subtree.pop(r, None) is not None]
        self._down(gone)

    def _down(self, ranks: list[int]) -> None:
        """``ranks`` below this broker went down: tell rank 0's services, or the parent."""
        if not ranks:
            return
        if self.boot.rank == 0:
            self._all_up.clear()
            for rank in sorted(ranks):
                self.broker.rank_changed(rank, None)
        elif self.parent_up:
            self._control(PARENT, "overlay.lost", {"ranks": sorted(ranks)})

    # --- heartbeats and loss ----------------------------------------------------------

    def _tick(self) -> None:
        assert self._loop is not None
        self._timer = self._loop.call_later(self.heartbeat, self._tick)
        self._children_connections()
        self._parent_connection()
        now = time.monotonic()
        if self._drops and now - self._drops_since >= REFUSAL_LOG_INTERVAL:
            self._log_drops()
        for rank, child in list(self.children.items()):
            if now - child.heard > self.timeout:
                self._child_lost(rank, f"no word for {now - child.heard:.1f}s")
            else:
                self._control(rank, "overlay.heartbeat", {})
        if self.boot.parent is None:
            return
        if self.parent_up and now - self._parent_heard > self.timeout:
            self.parent_up = False
            log.error(
                "overlay: lost contact with the parent (rank %d): no word for %.1fs;"
                " services go on, saying hello until it answers",
                self._parent(),
                now - self._parent_heard,
            )
            self._fail_pending(PARENT, f"lost contact with the parent (rank {self._parent()})")
        if self.parent_up:
            self._control(PARENT, "overlay.heartbeat", {})
        else:
            self._hello_all()

    def lost(self, rank: int, why: str) -> None:
        """Child ``rank`` is known to be gone (its process exited): lose it now rather
        than after ``timeout``."""
        if rank in self.children:
            self._child_lost(rank, why)

    def _child_lost(self, rank: int, why: str) -> None:
        child = self.children.pop(rank)
        ranks = sorted(child.subtree)
        host = child.subtree.get(rank, {}).get("hostname", "?")
        # once the tree was told to stop, a child that goes quiet is stopping, as asked
        (log.info if self.broker.ranks_stopping else log.error)(
            "overlay: lost contact with rank %d (%s): %s; down: %s",
            rank,
            host,
            why,
            ",".join(map(str, ranks)),
        )
        self._fail_pending(rank, f"lost contact with rank {rank} ({host})")
        self._down(ranks)

    def _fail_pending(self, peer: int | None, why: str) -> None:
        """Fail the requests in flight through ``peer`` (None: every peer); drop those it sent."""
        for tag, entry in list(self._pending.items()):
            if peer is None or entry.peer == peer:
                del self._pending[tag]
                entry.route.discard_disconnect(entry.gone)
                entry.answer(None, errno.EHOSTUNREACH, f"{entry.topic}: {why}")
        for key, route in list(self._served.items()):
            if peer is None or key[0] == peer:
                del self._served[key]
                route.gone()

    # --- what ZeroMQ says of the connections -----------------------------------------

    def _children_connections(self) -> None:
        """The ROUTER's connections, from its monitor. ZeroMQ names only this broker's
        endpoint, so each accepted connection's peer is noted while it is open
        (``_peer_of``). A connection closed once it was in is logged with its peer: the
        peer went away, or sent a frame over ``limit``. The close that ZeroMQ reports
        right after a failed handshake is that refusal's, not logged again. A peer whose
        CURVE handshake failed does not know this instance's server key (another
        instance's certificate), so it never reaches ZAP, and it retries every second:
        logged once a minute, unnamed."""
        failed = False
        for event, value in _monitor_events(self._monitor):
            if event == zmq.EVENT_ACCEPTED:
                if len(self._peers) < PEERS_KEPT:
                    self._peers[value] = _peer_of(value)
            elif event == zmq.EVENT_DISCONNECTED:
                peer = self._peers.pop(value, None)
                if not self._refusing and not self.broker.ranks_stopping:
                    address = peer or f"a child at {self.endpoint}"
                    self._lost(address.encode(), address)
            failed = failed or event == zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
            self._refusing = bool(event & HANDSHAKE_FAILED)
        now = time.monotonic()
        if failed and now - self._handshake_logged >= REFUSAL_LOG_INTERVAL:
            self._handshake_logged = now
            log.error(
                "overlay: refused a connection to %s: its CURVE handshake failed (a broker"
                " without this instance's certificate)",
                self.endpoint,
            )

    def _parent_connection(self) -> None:
        """The DEALER's connection, from its monitor: one lost once its handshake had
        succeeded is logged (the parent went away, or sent a frame over ``limit``).
        ZeroMQ connects again after the first, saying so right after the close
        (CONNECT_RETRIED), and never after the second, a protocol error: a close with
        no retry by the next look (a heartbeat later) is connected again here."""
        closed_before = self._parent_closed
        for event, _ in _monitor_events(self._dealer_monitor):
            if event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                self._parent_connected = True
            elif event == zmq.EVENT_CONNECT_RETRIED:
                self._parent_closed = closed_before = False
            elif event == zmq.EVENT_DISCONNECTED and self._parent_connected:
                self._parent_connected = False
                self._parent_closed = True
                if not self.broker.ranks_stopping:
                    name = f"the parent, rank {self._parent()} ({self.boot.parent})"
                    self._lost(b"parent", name)
        dealer, endpoint = self._dealer, self.boot.parent
        stopping = self.broker.ranks_stopping
        if closed_before and self._parent_closed and not stopping and dealer and endpoint:
            self._parent_closed = False
            log.info("overlay: connecting again to the parent, rank %d", self._parent())
            with contextlib.suppress(zmq.ZMQError):
                dealer.disconnect(endpoint)
            dealer.connect(endpoint)

    def _lost(self, key: bytes, address: str) -> None:
        self.losses.refused(key, address, self._loop.call_later if self._loop else None)

    # --- ZAP: who may connect ---------------------------------------------------------

    def _zap_ready(self) -> None:
        self._children_connections()  # the connections asking are open: their peers known
        sock = self._zap
        while sock is not None and not sock.closed and _events(sock) & zmq.POLLIN:
            try:
                frames = sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            sock.send_multipart(self._zap_answer(frames))

    def _zap_answer(self, frames: list[bytes]) -> list[bytes]:
        """ZAP (RFC 27 of ZeroMQ): allow a CURVE client whose key is in ``Boot.allowed``."""
        version, request_id = frames[0], frames[1] if len(frames) > 1 else b""
        address = frames[3].decode(errors="replace") if len(frames) > 3 else ""
        mechanism = frames[5] if len(frames) > 5 else b""
        key = frames[6] if len(frames) > 6 else b""
        allowed = (
            mechanism == b"CURVE"
            and len(key) == 32
            and z85.encode(key).decode() in self.boot.allowed
        )
        if allowed:
            return [version, request_id, b"200", b"OK", b"", b""]
        self.refusals.refused(
            key, address or self.endpoint, self._loop.call_later if self._loop else None
        )
        return [version, request_id, b"400", b"key not allowed", b"", b""]
