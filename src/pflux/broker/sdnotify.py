"""Telling systemd how the instance is doing (sd_notify(3)), for a unit of ``Type=notify``.

systemd names a datagram socket in ``NOTIFY_SOCKET`` (a path, or ``@name`` in the
abstract namespace); the instance sends ``READY=1`` once clients may connect,
``STOPPING=1`` when it starts shutting down, and ``STATUS=`` lines that
``systemctl status`` shows. Without ``NOTIFY_SOCKET`` nothing is sent.
"""

from __future__ import annotations

import logging
import os
import socket

log = logging.getLogger("pflux.broker")

ENV = "NOTIFY_SOCKET"


class Notifier:
    """The socket ``NOTIFY_SOCKET`` named, taken out of the environment (as sd_notify's
    ``unset_environment``), so that no process the instance starts talks for it."""

    def __init__(self, address: str | None) -> None:
        self.address = address

    @classmethod
    def from_environ(cls) -> Notifier:
        address = os.environ.pop(ENV, None) or None
        if address is not None and not address.startswith(("/", "@")):
            log.warning("%s=%s: not a socket path nor @name; systemd is not told", ENV, address)
            address = None
        return cls(address)

    def send(self, *assignments: str) -> None:
        """Send ``VAR=value`` lines (a value's newlines as spaces: a reason is one value);
        a failure is logged (systemd may have gone)."""
        if self.address is None:
            return
        address = "\0" + self.address[1:] if self.address[0] == "@" else self.address
        message = "\n".join(line.replace("\n", " ") for line in assignments).encode()
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.setblocking(False)  # never wait for a full queue: the instance serves
            try:
                sock.sendto(message, address)
            except OSError as exc:
                log.warning("%s=%s: %s", ENV, self.address, exc.strerror or exc)
