"""Events (flux's RFC 3 event messages): published to the broker, passed to subscribers.

A client subscribes with ``event.subscribe {topic}``: from then on every event
whose topic starts with that string reaches its connection as a message of type
event (4), carrying the event's sequence number as its matchtag. ``event.pub``
publishes one and answers its sequence number once it is on its way to every
subscriber, so a publisher that waits for the answer (``flux event pub -s``)
knows each subscriber has been sent it. Numbers count from 1 in each run of
the instance, as flux-core's broker numbers its events.

A private event (``FLUX_MSGFLAG_PRIVATE``) reaches only the instance owner's
connections and the publisher's userid. Subscriptions end with their connection.
What an event costs a subscriber that does not read is the connection's output
bound (``pflux.broker.connector``): it is disconnected past it.
"""

from __future__ import annotations

import errno
from collections import Counter
from functools import partial

from pflux.broker.connector import Connection
from pflux.broker.router import Broker, LocalRoute, Request, Route, Service, method
from pflux.errors import RPCError
from pflux.protocol.broker import EventPubRequest, EventSubRequest
from pflux.protocol.decode import decode
from pflux.protocol.message import EVENT, FLAG_PRIVATE, ROLE_OWNER, Message

MAX_SUBSCRIPTIONS = 1024  # distinct topics one connection may subscribe to


class EventService(Service):
    """``event.pub``, ``event.subscribe`` and ``event.unsubscribe``."""

    name = "event"

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker)
        self.seq = 0
        self._subs: dict[Route, Counter[str]] = {}

    @method("subscribe", guest=True)
    def subscribe(self, req: Request) -> None:
        topic = decode(req.topic, req.payload, EventSubRequest).topic
        route = req.sender
        if not isinstance(route, (Connection, LocalRoute)):
            raise RPCError(
                errno.EHOSTUNREACH,
                f"event.subscribe: events reach the clients of rank {self.broker.rank}'s"
                " broker only (connect to its socket)",
            )
        topics = self._subs.get(route)
        if topics is None:
            topics = self._subs[route] = Counter()
            route.add_disconnect(partial(self._drop, route))
        if topic not in topics and len(topics) >= MAX_SUBSCRIPTIONS:
            raise RPCError(
                errno.ENOSPC,
                f"event.subscribe: a connection may subscribe to {MAX_SUBSCRIPTIONS} topics",
            )
        topics[topic] += 1
        req.respond({})

    def _drop(self, route: Route) -> None:
        """The subscriber is gone: its subscriptions with it."""
        self._subs.pop(route, None)

    @method("unsubscribe", guest=True)
    def unsubscribe(self, req: Request) -> None:
        topic = decode(req.topic, req.payload, EventSubRequest).topic
        topics = self._subs.get(req.sender)
        if topics is None or topic not in topics:
            raise RPCError(errno.ENOENT, f"event.unsubscribe: not subscribed to {topic!r}")
        topics[topic] -= 1
        if topics[topic] <= 0:
            del topics[topic]
        req.respond({})

    @method("pub")
    def pub(self, req: Request) -> None:
        request = decode(req.topic, req.payload, EventPubRequest)
        if request.flags & ~FLAG_PRIVATE:
            raise RPCError(
                errno.EINVAL,
                f"event.pub: flags: only FLUX_MSGFLAG_PRIVATE ({FLAG_PRIVATE}) is defined,"
                f" got {request.flags}",
            )
        self.seq += 1
        private = bool(request.flags & FLAG_PRIVATE)
        for route, topics in list(self._subs.items()):
            if not any(request.topic.startswith(t) for t in topics):
                continue
            if private and not _may_see(route, req.userid):
                continue
            route.deliver(
                Message(
                    EVENT,
                    request.topic,
                    self.seq,
                    request.payload,
                    flags=request.flags,
                    userid=req.userid,
                    rolemask=req.rolemask,
                )
            )
        req.respond({"seq": self.seq})


def _may_see(route: Route, userid: int) -> bool:
    """A private event reaches the instance owner's connections and the publisher's user."""
    rolemask = getattr(route, "rolemask", ROLE_OWNER)  # a route within the broker: the owner's
    return bool(rolemask & ROLE_OWNER) or getattr(route, "userid", -1) == userid
