"""The broker's own requests with a payload (``broker.service-add``, ``log.dmesg``,
``log.append``), as types.

``broker.ping`` answers whatever it is sent (an object with the requester's
credentials added), and ``broker.attrs``,
``broker.shutdown`` and ``log.clear`` read no payload, so they have no type.
"""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta, Struct


class ServiceAddRequest(Struct, frozen=True):
    """``broker.service-add``: the sending process provides ``service`` (a name without dots)."""

    service: str


class DmesgRequest(Struct, frozen=True):
    """``log.dmesg``: the ring's backlog (unless ``nobacklog``), then new entries (``follow``)."""

    follow: bool = False
    nobacklog: bool = False


class LogEntry(Struct, frozen=True):
    """``log.append``: one entry a module process logged, as the ring keeps it."""

    timestamp: float
    name: str
    severity: Annotated[int, Meta(ge=0, le=7)]  # syslog's (RFC 5424)
    rank: int
    message: str


class EventPubRequest(Struct, frozen=True):
    """``event.pub``: publish ``topic`` (flux's flags: 0, or ``FLUX_MSGFLAG_PRIVATE``)."""

    topic: Annotated[str, Meta(min_length=1, max_length=255)]
    flags: Annotated[int, Meta(ge=0)] = 0
    payload: object = None


class EventDeliverRequest(Struct, frozen=True):
    """``event.deliver``: rank 0's broker passes an event it numbered ``seq`` to a
    broker of a rank above 0, for that broker's subscribers."""

    topic: Annotated[str, Meta(min_length=1, max_length=255)]
    seq: Annotated[int, Meta(ge=1)]
    flags: Annotated[int, Meta(ge=0)] = 0
    payload: object = None
    userid: int = -1
    rolemask: int = 0


class EventSubRequest(Struct, frozen=True):
    """``event.subscribe``/``event.unsubscribe``: events whose topic starts with ``topic``."""

    topic: Annotated[str, Meta(max_length=255)]


class ServiceRemoveRequest(Struct, frozen=True):
    """``broker.service-remove``: the sending process no longer provides ``service``."""

    service: str


class AttrSetRequest(Struct, frozen=True):
    """``attr.set``: set broker attribute ``name`` to ``value`` (text, as every attribute)."""

    name: str
    value: str
