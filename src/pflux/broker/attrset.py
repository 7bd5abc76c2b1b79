"""``attr.set``: the broker attributes flux-core lets a running instance change.

Three are changeable here, all of the log: ``log-stderr-level`` (the syslog
severity down to which the broker writes its log to stderr), ``log-level`` (down
to which the ring keeps entries for ``dmesg``) and ``log-ring-size`` (the entries
it keeps). Any other attribute is fixed at start (EPERM), and a name that is no
attribute is ENOENT.
"""

from __future__ import annotations

import errno
import logging
import sys

from pflux.broker.logbuf import LogRing
from pflux.broker.router import Broker, Request, Service, method
from pflux.errors import RPCError
from pflux.protocol.broker import AttrSetRequest
from pflux.protocol.decode import decode

MAX_RING_SIZE = 65536  # entries: the ring is the broker's memory

# syslog severities (0 emerg ... 7 debug) -> the Python level a handler passes
_LEVELS = (50, 50, 50, 40, 30, 20, 20, 10)


def stderr_handlers() -> list[logging.Handler]:
    """The root logger's handlers that write to stderr (not the ring)."""
    return [
        h
        for h in logging.getLogger().handlers
        if isinstance(h, logging.StreamHandler) and getattr(h, "stream", None) is sys.stderr
    ]


def stderr_level() -> int:
    """The syslog severity the broker's stderr now shows down to."""
    return _severity(min((h.level for h in stderr_handlers()), default=logging.WARNING))


def _severity(level: int) -> int:
    """The syslog severity of the Python level ``level`` (the most it passes)."""
    if level > logging.CRITICAL:
        return 0
    return max(severity for severity, passed in enumerate(_LEVELS) if passed >= level)


class AttrService(Service):
    """``attr.set {name, value}`` for the attributes above."""

    name = "attr"

    def __init__(self, broker: Broker, ring: LogRing) -> None:
        super().__init__(broker)
        self.ring = ring
        broker.attrs["log-stderr-level"] = str(stderr_level())
        broker.attrs["log-ring-size"] = str(ring.size)
        # the ring keeps what passes the root logger and its own level
        kept = max(ring.level, logging.getLogger().level)
        broker.attrs["log-level"] = str(_severity(kept))

    @method("set")
    def set(self, req: Request) -> None:
        request = decode(req.topic, req.payload, AttrSetRequest)
        name, value = request.name, request.value
        if not req.owner:
            raise RPCError(errno.EPERM, "attr.set: only the instance owner")
        if name == "log-stderr-level":
            level = _number(name, value, 0, 7)
            for handler in stderr_handlers():
                handler.setLevel(_LEVELS[level])
            root = logging.getLogger()
            root.setLevel(min(root.level, _LEVELS[level]))
        elif name == "log-level":
            level = _number(name, value, 0, 7)
            self.ring.setLevel(_LEVELS[level])
            root = logging.getLogger()
            root.setLevel(min(root.level, _LEVELS[level]))
        elif name == "log-ring-size":
            self.ring.resize(_number(name, value, 1, MAX_RING_SIZE))
        elif name in self.broker.attrs:
            raise RPCError(
                errno.EPERM, f"attr.set: {name} cannot be changed while the instance runs"
            )
        else:
            raise RPCError(errno.ENOENT, f"attr.set: no attribute {name!r}")
        self.broker.attrs[name] = value.strip()
        req.respond({})


def _number(name: str, value: str, low: int, high: int) -> int:
    text = value.strip()
    if not (text.isascii() and text.isdigit()) or not low <= int(text) <= high:
        raise RPCError(
            errno.EINVAL, f"attr.set: {name}: must be an integer {low}-{high}, got {value!r}"
        )
    return int(text)
