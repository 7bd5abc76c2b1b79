"""The broker's router: services register methods, requests find them, responses go home.

Every request, from a socket or from another service, is dispatched on a later
turn of the event loop, never inside the sender's call stack, so a service can
send a request in the middle of its own work without being re-entered.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterator, Mapping
from itertools import islice
from typing import Any, ClassVar, Protocol

from pflux.errors import PfluxError, RPCError
from pflux.protocol.message import (
    FLAG_NORESPONSE,
    FLAG_STREAMING,
    MAX_SIZE,
    NODEID_ANY,
    REQUEST,
    RESPONSE,
    ROLE_OWNER,
    Message,
)
from pflux.spec import jsontext

log = logging.getLogger("pflux.broker")

Handler = Callable[["Request"], Awaitable[None] | None]
Forward = Callable[[Message, "Route"], None]


class Route(Protocol):
    """Where a request's responses are delivered."""

    def deliver(self, msg: Message) -> None: ...

    def add_disconnect(self, callback: Callable[[], None]) -> None: ...

    def discard_disconnect(self, callback: Callable[[], None]) -> None: ...

    async def drain(self) -> None:
        """Return once responses may be sent again (the peer has read what was sent)."""


class Elsewhere(Protocol):
    """Where requests for other ranks go: the overlay (``pflux.broker.overlay``)."""

    def forward(self, msg: Message, route: Route) -> None:
        """Send ``msg`` toward rank ``msg.nodeid`` (NODEID_ANY: up, toward rank 0)."""


class Request:
    """A request as a handler sees it, with the means to answer it."""

    __slots__ = (
        "_done",
        "_route",
        "matchtag",
        "payload",
        "rolemask",
        "sender",
        "streaming",
        "topic",
        "userid",
    )

    def __init__(self, msg: Message, route: Route) -> None:
        self.sender = route  # who sent it (a connection, or a service): matches cancels
        self.topic = msg.topic
        self.payload = msg.payload
        self.userid = msg.userid
        self.rolemask = msg.rolemask
        self.matchtag = msg.matchtag
        self.streaming = bool(msg.flags & FLAG_STREAMING)
        self._route: Route | None = None if msg.flags & FLAG_NORESPONSE else route
        self._done = False

    @property
    def owner(self) -> bool:
        """The requester is the instance owner (or root)."""
        return bool(self.rolemask & ROLE_OWNER)

    @property
    def done(self) -> bool:
        return self._done

    def require_internal(self, sender: str) -> None:
        """EPERM unless another service of the broker (``sender`` names it) sent this: such
        requests act on state (committed jobs, granted resources) that only that service
        keeps consistent with the KVS, so none may come from a connection. A service of
        another rank's broker counts as one of this broker's (the overlay says which
        requests a service sent: ``from_service``)."""
        internal = isinstance(self.sender, LocalRoute) or getattr(
            self.sender, "from_service", False
        )
        if not self.owner or not internal:
            raise RPCError(errno.EPERM, f"{self.topic}: only {sender} may send this request")

    def respond(self, payload: Any = None) -> None:
        """Send a response; for a non-streaming request this is its only one."""
        if self._done:
            return
        if not self.streaming:
            self._done = True
        if self._route is not None:
            self._route.deliver(Message(RESPONSE, self.topic, self.matchtag, payload))

    def error(self, errnum: int, errstr: str | None = None) -> None:
        """Send an error response, which ends the request (and a stream)."""
        if self._done:
            return
        self._done = True
        if self._route is not None:
            self._route.deliver(
                Message(RESPONSE, self.topic, self.matchtag, None, errnum=errnum, errstr=errstr)
            )

    def fail(self, exc: Exception) -> None:
        """Answer a handler's exception as an error response; a bug is logged, not fatal."""
        if isinstance(exc, RPCError):
            self.error(exc.errnum, exc.errstr)
        elif isinstance(exc, PfluxError):
            self.error(errno.EINVAL, str(exc))
        else:
            log.exception("%s handler failed", self.topic)
            self.error(errno.EINVAL, f"internal error in {self.topic}: {exc!r}")

    def end(self) -> None:
        """End a stream normally (ENODATA, as Flux does)."""
        self.error(errno.ENODATA)

    def on_disconnect(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` if the requester goes away before the request is done."""
        if self._route is not None:
            self._route.add_disconnect(callback)

    def forget_disconnect(self, callback: Callable[[], None]) -> None:
        if self._route is not None:
            self._route.discard_disconnect(callback)

    async def drained(self) -> None:
        """Wait until the requester has read what was sent: a long stream's flow control."""
        if self._route is not None:
            await self._route.drain()

    @property
    def paused(self) -> bool:
        """The requester is not reading what was sent: a stream waits (``drained``) rather
        than send more. Only a connection (or a route following one) pauses."""
        return bool(getattr(self._route, "paused", False))


def method(name: str, *, guest: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a Service method as the handler for ``<service>.<name>``.

    Only the instance owner's requests reach it unless ``guest``, as flux-core's
    message handlers serve the owner role alone unless they allow the user role:
    a guest's request for any other is refused (EPERM) before its handler runs.
    A guest handler checks for itself what the guest may see and change (its
    own jobs, its own namespaces)."""

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.__pflux_method__ = name  # type: ignore[attr-defined]
        fn.__pflux_guest__ = guest  # type: ignore[attr-defined]
        return fn

    return mark


class Service:
    """A broker service: a name and the methods marked with @method."""

    name: str = ""
    # the configuration tables and keys it reads (``pflux.broker.config``): table -> keys
    config_keys: ClassVar[Mapping[str, Collection[str]]] = {}

    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    def methods(self) -> Iterator[tuple[str, Handler]]:
        for attr in dir(type(self)):
            fn = getattr(type(self), attr)
            name = getattr(fn, "__pflux_method__", None)
            if name is not None:
                yield name, getattr(self, attr)

    @classmethod
    def guest_methods(cls) -> Iterator[str]:
        """The names of the methods that serve guests too."""
        for attr in dir(cls):
            fn = getattr(cls, attr)
            if getattr(fn, "__pflux_guest__", False):
                yield fn.__pflux_method__

    async def start(self) -> None:
        """Called once every service is registered, in registration order."""

    async def stop(self) -> None:
        """Called at shutdown, in reverse registration order."""


class RunQueue:
    """Work for a later turn of the loop, run in order, with one loop callback per turn.

    asyncio's ``call_soon`` costs about 2 µs a call (a handle and a context copy
    each); services exchange several messages per job, so the broker queues its
    own work here and the loop runs it in one go. Work queued while a turn runs
    waits for the next turn, so nothing runs inside its sender's call stack and
    I/O is never starved.

    A service that batches what a turn brings (the KVS's transaction, the job
    manager's commit, the scheduler's pass) asks for ``at_end``: its flush runs
    once the turn's work is done, in the same loop callback, rather than on a
    later loop iteration of its own. A request a flush sends is delivered on
    the next turn as any other, so a commit round trip costs two turns, not four.
    """

    __slots__ = ("_ends", "_items", "_loop", "_running", "_scheduled")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._items: deque[tuple[Callable[..., None], tuple[Any, ...]]] = deque()
        self._ends: list[Callable[[], None]] = []
        self._scheduled = False
        self._running = False

    def push(self, fn: Callable[..., None], *args: Any) -> None:
        self._items.append((fn, args))
        if not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self._run)

    def at_end(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` at the end of this turn (or of the next, outside one); callers ask once."""
        self._ends.append(fn)
        if not self._running and not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self._run)

    def requests_waiting(self, prefix: str, look: int = 32) -> bool:
        """Whether one of the first ``look`` items queued for the next turn is a request
        whose topic starts with ``prefix`` (the first few: a busy turn queues thousands)."""
        for _, args in islice(self._items, look):
            msg = args[0] if args else None
            if type(msg) is Message and msg.type == REQUEST and msg.topic.startswith(prefix):
                return True
        return False

    def at_next_end(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` at the end of the next turn."""
        self.push(self.at_end, fn)

    def _run(self) -> None:
        self._scheduled = False
        self._running = True
        try:
            items = self._items
            for _ in range(len(items)):
                fn, args = items.popleft()
                try:
                    fn(*args)
                except Exception:
                    log.exception("broker: %r failed", fn)
                del fn, args  # a message handled is let go before the turn's ends run
            while self._ends:
                ends, self._ends = self._ends, []
                for end in ends:
                    try:
                        end()
                    except Exception:
                        log.exception("broker: %r failed", end)
        finally:
            self._running = False


class LocalRoute:
    """Delivers responses to a callback inside the broker, on a later loop turn.

    ``cancel`` is the in-broker equivalent of a client hanging up: the
    responder's disconnect callbacks run (a watch is dropped, say) and no more
    responses are delivered.
    """

    __slots__ = ("_callback", "_disconnect", "_follows", "_queue", "matchtag")

    def __init__(self, queue: RunQueue, callback: Callable[[Message], None], matchtag: int = 0):
        self._queue = queue
        self.matchtag = matchtag  # the request's (what ``kvs.watch-cancel`` names)
        self._callback: Callable[[Message], None] | None = callback
        self._disconnect: dict[Callable[[], None], None] = {}
        self._follows: Request | None = None

    def follow(self, req: Request) -> None:
        """The responses are passed on to ``req``'s requester: pause while it does."""
        self._follows = req

    @property
    def paused(self) -> bool:
        return self._follows is not None and self._follows.paused

    def deliver(self, msg: Message) -> None:
        if self._callback is not None:
            self._queue.push(self._deliver, msg)

    def _deliver(self, msg: Message) -> None:
        if self._callback is not None:
            self._callback(msg)

    def add_disconnect(self, callback: Callable[[], None]) -> None:
        if self._callback is None:
            callback()
        else:
            self._disconnect[callback] = None

    def discard_disconnect(self, callback: Callable[[], None]) -> None:
        self._disconnect.pop(callback, None)

    async def drain(self) -> None:
        """Responses inside the broker are never held up, but those passed on wait for
        the requester they are passed to (``follow``)."""
        if self._follows is not None:
            await self._follows.drained()

    def cancel(self) -> None:
        """Stop delivery and tell the responder the requester has gone."""
        self._callback = None
        callbacks, self._disconnect = self._disconnect, {}
        for callback in callbacks:
            callback()


class Broker:
    """Owns the service table and routes requests between services and connections."""

    def pong(self, req: Request) -> Any:
        """A ping's answer, as flux-core's: the payload sent, with the requester's
        ``userid`` and ``rolemask`` as this broker sees them and its ``rank`` (a
        client learns from its first ping whether it is the instance owner)."""
        payload = req.payload
        if type(payload) is not dict:
            return payload
        return {**payload, "userid": req.userid, "rolemask": req.rolemask, "rank": self.rank}

    def __init__(
        self,
        owner: int,
        *,
        attrs: dict[str, str] | None = None,
        config: dict[str, Any] | None = None,
    ) -> None:
        jsontext.use_orjson()  # a broker's services encode and decode thousands a second
        self.owner = owner
        self.attrs: dict[str, str] = attrs or {}
        self.config: dict[str, Any] = config or {}
        self.services: dict[str, Service] = {}
        self._handlers: dict[str, Handler] = {}
        self._guest_topics: set[str] = set()  # the handlers that serve guests too
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: RunQueue | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._tag = 0
        self.on_fatal: Callable[[str], None] | None = None
        # services in other processes, by name: how to pass them a request
        self.remote: dict[str, Forward] = {}
        # in a module process: where requests for services not here go (the main broker)
        self.fallback: Forward | None = None
        self.rank = 0  # this broker's place in its instance (pflux.broker.boot)
        self.size = 1
        # with ranks: the overlay, for requests addressed to another rank and, at a rank
        # above 0, for those no service here provides
        self.overlay: Elsewhere | None = None
        self._rank_watchers: list[Callable[[int, dict[str, Any] | None], None]] = []
        self.ranks: dict[int, dict[str, Any]] = {}  # on rank 0: the ranks up, by their hellos
        # on rank 0: each rank's last change, (up or lost, when); none yet: offline
        self.rank_states: dict[int, tuple[str, float]] = {}
        # the tree was told to stop: a rank lost from now on is stopping, as asked
        self.ranks_stopping = False
        # the longest message a client's connection may send (job-ingest's jobspec limit
        # and room for the request around it); a peer providing a service may send MAX_SIZE
        self.max_request = MAX_SIZE

    def fatal(self, reason: str) -> None:
        """Something the instance cannot go on without has failed: stop it, loudly."""
        log.critical("fatal: %s", reason)
        if self.on_fatal is not None:
            self.on_fatal(reason)

    def watch_ranks(self, fn: Callable[[int, dict[str, Any] | None], None]) -> None:
        """Call ``fn(rank, hello)`` for every rank up now, then on every change (None:
        the rank went down). Services at rank 0 learn of nodes only this way."""
        self._rank_watchers.append(fn)
        for rank, info in sorted(self.ranks.items()):
            fn(rank, info)

    def rank_changed(self, rank: int, info: dict[str, Any] | None) -> None:
        """Rank ``rank`` said hello (``info``, what it offers) or was lost (None)."""
        if info is None:
            if self.ranks.pop(rank, None) is None:
                return
            self.rank_states[rank] = ("lost", time.time())
        else:
            if rank not in self.ranks:
                self.rank_states[rank] = ("up", time.time())
            self.ranks[rank] = info
        for fn in list(self._rank_watchers):
            fn(rank, info)

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    @property
    def queue(self) -> RunQueue:
        """The broker's own queue of work for the next turn."""
        if self._queue is None:
            self._queue = RunQueue(self.loop)
        return self._queue

    def at_turn_end(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` once this turn's messages are handled (see ``RunQueue.at_end``)."""
        self.queue.at_end(fn)

    def register(self, service: Service) -> None:
        """Add a service; its methods become reachable as ``<name>.<method>``."""
        if service.name in self.services:
            raise PfluxError(f"service {service.name!r} is already registered")
        self.services[service.name] = service
        for name, handler in service.methods():
            self._handlers[f"{service.name}.{name}"] = handler
        self._guest_topics.update(f"{service.name}.{name}" for name in service.guest_methods())

    def unregister(self, name: str) -> None:
        self.services.pop(name, None)
        prefix = name + "."
        for topic in [t for t in self._handlers if t.startswith(prefix)]:
            del self._handlers[topic]
            self._guest_topics.discard(topic)

    def add_method(self, topic: str, handler: Handler) -> None:
        """Register one extra topic (a service named by its client, as exec-hello does)."""
        self._handlers[topic] = handler

    def remove_method(self, topic: str) -> None:
        self._handlers.pop(topic, None)

    def topics(self) -> Collection[str]:
        """The topics this broker's handlers serve."""
        return self._handlers.keys()

    async def start(self) -> None:
        for service in list(self.services.values()):
            await service.start()

    async def stop(self) -> None:
        for service in reversed(list(self.services.values())):
            try:
                await service.stop()
            except Exception:
                log.exception("stopping %s", service.name)

    # --- dispatch -----------------------------------------------------------------

    def dispatch(self, msg: Message, route: Route) -> None:
        """Route a request to its handler on a later loop turn."""
        self.queue.push(self._handle, msg, route)

    def _handle(self, msg: Message, route: Route) -> None:
        nodeid = msg.nodeid
        if nodeid >= 0 and nodeid != self.rank:
            self._elsewhere(msg, route)
            return
        handler = self._handlers.get(msg.topic)
        if handler is None:
            service, _, method = msg.topic.partition(".")
            if method == "ping" and service in self.services:
                # every service answers ping, as each of flux-core's modules does
                req = Request(msg, route)
                req.respond(self.pong(req))
                return
            forward = self.remote.get(service) or self.fallback
            if forward is not None:
                forward(msg, route)
            elif self.overlay is not None and self.rank > 0 and nodeid < 0:
                self.overlay.forward(msg, route)  # up: a service of rank 0's
            else:
                Request(msg, route).error(errno.ENOSYS, f"no service provides {msg.topic!r}")
            return
        req = Request(msg, route)
        if not req.owner and msg.topic not in self._guest_topics:
            req.error(errno.EPERM, f"{msg.topic}: only the instance owner may do this")
            return
        try:
            result = handler(req)
        except Exception as exc:
            req.fail(exc)
            return
        if result is not None:  # an async handler's coroutine
            task = self.loop.create_task(self._finish(req, result))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _elsewhere(self, msg: Message, route: Route) -> None:
        """A request for another rank: to the overlay (from a module process, to its broker)."""
        if self.fallback is not None:
            self.fallback(msg, route)
        elif self.overlay is not None:
            self.overlay.forward(msg, route)
        else:
            Request(msg, route).error(
                errno.EHOSTUNREACH,
                f"{msg.topic}: no rank {msg.nodeid} in this instance (size {self.size})",
            )

    async def _finish(self, req: Request, result: Awaitable[None]) -> None:
        try:
            await result
        except Exception as exc:
            req.fail(exc)

    # --- requests from inside the broker -----------------------------------------------

    def send(
        self,
        topic: str,
        payload: Any = None,
        callback: Callable[[Message], None] | None = None,
        *,
        streaming: bool = False,
        nodeid: int = NODEID_ANY,
    ) -> LocalRoute:
        """Send a request as the instance owner; responses go to ``callback``.

        ``nodeid`` addresses one rank's service (default: whichever provides it).
        The returned route's ``cancel`` withdraws the request (ends a stream).
        """
        flags = FLAG_STREAMING if streaming else 0
        if callback is None:
            flags |= FLAG_NORESPONSE
        self._tag += 1
        msg = Message(
            REQUEST,
            topic,
            self._tag,
            payload,
            flags=flags,
            userid=self.owner,
            rolemask=ROLE_OWNER,
            nodeid=nodeid,
        )
        route = LocalRoute(self.queue, callback or _ignore, self._tag)
        self.dispatch(msg, route)
        return route

    async def stream(self, topic: str, payload: Any = None) -> AsyncIterator[Any]:
        """Send a streaming request; yield each response's payload until the stream ends."""
        queue: asyncio.Queue[Message] = asyncio.Queue()
        route = self.send(topic, payload, queue.put_nowait, streaming=True)
        try:
            while True:
                msg = await queue.get()
                if msg.errnum == errno.ENODATA:
                    return
                yield msg.raise_for_error()
        finally:
            route.cancel()

    async def call(self, topic: str, payload: Any = None, *, nodeid: int = NODEID_ANY) -> Any:
        """Send a request and wait for its one response; an error raises RPCError."""
        future: asyncio.Future[Message] = self.loop.create_future()

        def done(msg: Message) -> None:
            if not future.done():
                future.set_result(msg)

        self.send(topic, payload, done, nodeid=nodeid)
        return (await future).raise_for_error()


def _ignore(msg: Message) -> None:
    """A response nobody asked for."""
