"""The broker's own requests with a payload (``broker.service-add``, ``log.dmesg``,
``log.append``), as types.

``broker.ping`` echoes whatever it is sent, and ``broker.attrs``,
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
