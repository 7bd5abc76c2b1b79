"""Overlay connections refused or lost, logged at a bounded rate.

Anyone who can reach the overlay's port can try keys as fast as ZeroMQ lets
them, and ZeroMQ retries a refused peer every second; a peer with the
instance's key can have its connection dropped (a message over the overlay's
limit) as often, and reconnect each time. Each window of
``interval`` seconds logs at most ``burst`` refusals in full, one per key (a
key retrying is not logged again within the window); the rest are counted
and logged as one line when the window ends, with the addresses they came
from (the first few). What is kept is bounded by ``burst`` keys and
``ADDRESSES`` addresses, so neither memory nor the log ring (``pflux dmesg``)
fills with refusals.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

ADDRESSES = 4  # addresses named in a window's count line

Schedule = Callable[[float, Callable[[], None]], object]  # (delay, callback), as call_later


class RefusalLog:
    """Logs refusals of one kind (``what``: why each was refused; ``verb``: what befell the
    connection) at a bounded rate."""

    def __init__(
        self,
        log: logging.Logger,
        what: str,
        *,
        verb: str = "refused",
        interval: float = 60.0,
        burst: int = 10,
        clock: Callable[[], float],
    ) -> None:
        self.log = log
        self.what = what
        self.verb = verb
        self.interval = interval
        self.burst = burst
        self.clock = clock
        self.logged: dict[bytes, None] = {}  # the keys logged in full this window
        self.more = 0  # refusals counted, not logged, this window
        self.addresses: dict[str, None] = {}  # where the counted ones came from (the first)
        self._start = -interval
        self._flush_due = False

    def refused(self, key: bytes, address: str, schedule: Schedule | None = None) -> None:
        """One refusal of ``key`` from ``address``; ``schedule`` sets the window's count
        line to be logged at its end (without one, the next refusal logs it)."""
        now = self.clock()
        if now - self._start >= self.interval:
            self.flush()
            self._start = now
        if key not in self.logged and len(self.logged) < self.burst:
            self.logged[key] = None
            self.log.error("overlay: %s a connection from %s: %s", self.verb, address, self.what)
            return
        self.more += 1
        if len(self.addresses) < ADDRESSES:
            self.addresses[address] = None
        if not self._flush_due and schedule is not None:
            self._flush_due = True
            schedule(self._start + self.interval - now, self.flush)

    def flush(self) -> None:
        """Log the window's count line, if any refusal was counted, and start afresh."""
        self._flush_due = False
        if self.more:
            names = ", ".join(self.addresses)
            self.log.error(
                "overlay: %d more connections %s from %s%s in %.0f s: %s",
                self.more,
                self.verb,
                names,
                " and others" if len(self.addresses) == ADDRESSES else "",
                min(self.interval, self.clock() - self._start),
                self.what,
            )
        self.logged.clear()
        self.addresses.clear()
        self.more = 0
        self._start = self.clock()
