"""The router serves a guest only the handlers marked for guests; the owner, every one."""

from __future__ import annotations

import asyncio
import errno

from pflux.broker.router import Broker, LocalRoute, Request, Service, method
from pflux.protocol.message import REQUEST, ROLE_OWNER, ROLE_USER, Message

OWNER, GUEST = 4242, 4343


class Desk(Service):
    name = "desk"

    @method("open", guest=True)
    def open(self, req: Request) -> None:
        req.respond({"userid": req.userid})

    @method("admin")
    def admin(self, req: Request) -> None:
        req.respond({"userid": req.userid})


def _answers(requests: list[tuple[str, int, int]], unregister: bool = False) -> list[Message]:
    async def body() -> list[Message]:
        broker = Broker(OWNER)
        broker.register(Desk(broker))
        if unregister:
            broker.unregister("desk")
            broker.add_method("desk.open", Desk(broker).open)  # re-added, unmarked
        replies: asyncio.Queue[Message] = asyncio.Queue()
        route = LocalRoute(broker.queue, replies.put_nowait)
        for tag, (topic, userid, rolemask) in enumerate(requests):
            broker.dispatch(
                Message(REQUEST, topic, tag, {}, userid=userid, rolemask=rolemask), route
            )
        return [await asyncio.wait_for(replies.get(), 10) for _ in requests]

    return asyncio.run(body())


def test_a_guest_reaches_the_guest_handlers_only_and_is_told_what_was_refused() -> None:
    answers = _answers(
        [
            ("desk.open", GUEST, ROLE_USER),
            ("desk.admin", GUEST, ROLE_USER),
            ("desk.admin", OWNER, ROLE_OWNER),
            ("desk.ping", GUEST, ROLE_USER),  # every service answers ping, to anyone
        ]
    )
    assert [(a.errnum, a.errstr, a.payload) for a in answers] == [
        (0, None, {"userid": GUEST}),
        (errno.EPERM, "desk.admin: only the instance owner may do this", None),
        (0, None, {"userid": OWNER}),
        (0, None, {"userid": GUEST, "rolemask": ROLE_USER, "rank": 0}),  # as flux-core's
    ]


def test_a_topic_unregistered_serves_guests_no_more() -> None:
    (answer,) = _answers([("desk.open", GUEST, ROLE_USER)], unregister=True)
    assert answer.errnum == errno.EPERM
