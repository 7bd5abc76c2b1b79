"""Events (flux's RFC 3 event messages): published to the broker, passed to subscribers.

A client subscribes with ``event.subscribe {topic}``: from then on every event
whose topic starts with that string reaches its connection as a message of type
event (4), carrying the event's sequence number as its matchtag. ``event.pub``
publishes one and answers its sequence number once it is on its way to every
subscriber, so a publisher that waits for the answer (``flux event pub -s``)
knows each subscriber has been sent it. Numbers count from 1 in each run of
the instance, as flux-core's broker numbers its events.

Every broker serves subscriptions for its own clients. Rank 0's broker numbers each
event and passes it to every other rank up (``event.deliver``, over the overlay)
before it answers the publisher; a broker above rank 0 publishes through rank 0's
(its ``event.pub`` answered with rank 0's number) and passes what rank 0 delivers to
its own subscribers. An event published while a rank is down does not reach it.

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
from pflux.protocol.broker import EventDeliverRequest, EventPubRequest, EventSubRequest
from pflux.protocol.decode import decode
from pflux.protocol.message import EVENT, FLAG_PRIVATE, ROLE_OWNER, Message

MAX_SUBSCRIPTIONS = 1024  # distinct topics one connection may subscribe to


class EventService(Service):
    """``event.pub``, ``event.subscribe``, ``event.unsubscribe`` and, above rank 0,
    ``event.deliver``."""

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
        if self.broker.rank > 0:  # rank 0 numbers it and delivers it here
            self.broker.send("event.pub", req.payload, partial(_answer, req), nodeid=0)
            return
        self.seq += 1
        event = EventDeliverRequest(
            request.topic, self.seq, request.flags, request.payload, req.userid, req.rolemask
        )
        self._publish(event)
        deliver = {
            "topic": event.topic,
            "seq": event.seq,
            "flags": event.flags,
            "payload": event.payload,
            "userid": event.userid,
            "rolemask": event.rolemask,
        }
        for rank in sorted(self.broker.ranks):
            if rank > 0:
                self.broker.send("event.deliver", deliver, nodeid=rank)
        req.respond({"seq": self.seq})

    @method("deliver")
    def deliver(self, req: Request) -> None:
        """An event rank 0 numbered, for this broker's subscribers."""
        req.require_internal("rank 0's event service")
        if self.broker.rank == 0:
            raise RPCError(errno.EPROTO, "event.deliver: rank 0 numbers events itself")
        self._publish(decode(req.topic, req.payload, EventDeliverRequest))
        req.respond({})

    def _publish(self, event: EventDeliverRequest) -> None:
        """Send ``event`` to this broker's subscribers whose topics it matches."""
        private = bool(event.flags & FLAG_PRIVATE)
        for route, topics in list(self._subs.items()):
            if not any(event.topic.startswith(t) for t in topics):
                continue
            if private and not _may_see(route, event.userid):
                continue
            route.deliver(
                Message(
                    EVENT,
                    event.topic,
                    event.seq,
                    event.payload,
                    flags=event.flags,
                    userid=event.userid,
                    rolemask=event.rolemask,
                )
            )


def _answer(req: Request, msg: Message) -> None:
    """Rank 0's answer to an event published here, passed to the publisher."""
    if msg.errnum:
        req.error(msg.errnum, msg.errstr)
    else:
        req.respond(msg.payload)


def _may_see(route: Route, userid: int) -> bool:
    """A private event reaches the instance owner's connections and the publisher's user."""
    rolemask = getattr(route, "rolemask", ROLE_OWNER)  # a route within the broker: the owner's
    return bool(rolemask & ROLE_OWNER) or getattr(route, "userid", -1) == userid
