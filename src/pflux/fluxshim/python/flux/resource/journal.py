"""``flux.resource.journal``: the resource eventlog as a stream of events.

pflux's scheduler keeps the resource eventlog in the KVS (``resource.eventlog``), so
the consumer watches that key: the events already there come first (then, with
``include_sentinel``, an empty event), then each event as it is posted. ``resource-define``
events carry R (the instance's, from ``sched.resource-status``) in ``R``.
"""

from __future__ import annotations

import errno
import json
from collections import deque

from flux.constants import FLUX_RPC_STREAMING
from flux.eventlog import EventLogEvent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

    from flux.core.handle import Flux
    from flux.rpc import RPC

__all__ = ["ResourceJournalConsumer", "ResourceJournalEvent"]

_KEY = "resource.eventlog"


class ResourceJournalEvent(EventLogEvent):
    """One event of the resource eventlog: ``name``, ``timestamp``, ``context``; ``R`` on
    ``resource-define``."""

    def __init__(self, event: dict[str, Any], R: Any = None) -> None:  # noqa: N803
        super().__init__(event)
        self.R = R

    def is_empty(self) -> bool:
        """Whether this is the sentinel between the history and live events."""
        return "name" not in self

    def __str__(self) -> str:
        if self.is_empty():
            return f"{self.timestamp:<0.5f} End of historical data stream"
        return " ".join([f"{self.timestamp:<0.5f}", self.name, self.context_string])


class ResourceJournalConsumer:
    """Resource events: ``start()``, then ``poll(timeout)`` or ``set_callback(cb)`` and
    ``reactor_run()``; ``stop()``, after which None is given once all is taken. Events
    no later than ``since`` are skipped."""

    def __init__(
        self, flux_handle: Flux, since: float = 0.0, include_sentinel: bool = False
    ) -> None:
        self.handle = flux_handle
        self.since = since
        self.include_sentinel = include_sentinel
        self.backlog: deque[ResourceJournalEvent | None] = deque()
        self.rpc: RPC | None = None
        self.cb: Callable[..., Any] | None = None
        self.cb_args: Any = ()
        self.cb_kwargs: Any = {}
        self._partial = ""
        self._history = True
        self._last_ts = 0.0

    def start(self) -> ResourceJournalConsumer:
        """Send the request (again: the stream restarts from the first event)."""
        self.stop()
        self._partial, self._history = "", True
        payload = {"key": _KEY, "append": True, "waitcreate": True}
        self.rpc = self.handle.rpc("kvs.watch", payload, 0, FLUX_RPC_STREAMING)
        if self.cb is not None:
            self.rpc.then(self._callback)
        return self

    def stop(self) -> None:
        """End the stream: events already received are still given, then None."""
        rpc = self.rpc
        if rpc is None or not rpc._more:
            return
        self.handle._rpcs.pop(rpc._matchtag, None)
        rpc._more = False
        rpc._fulfill_error(errno.ENODATA, None)
        self.handle.rpc("kvs.watch-cancel", {"matchtag": rpc._matchtag}, 0)

    def _take(self, resp: dict[str, Any] | None) -> None:
        """Queue the events of one response (None: the end)."""
        if resp is None:
            self.backlog.append(None)
            return
        lines = (self._partial + str(resp.get("value", ""))).split("\n")
        self._partial = lines.pop()
        for line in filter(None, lines):
            entry = json.loads(line)
            self._last_ts = float(entry.get("timestamp", self._last_ts))
            if self._last_ts <= self.since:
                continue
            R = None  # noqa: N806 - flux-core's name
            if entry.get("name") == "resource-define":
                R = self.handle.rpc("sched.resource-status", {}, 0).get().get("all")  # noqa: N806
            self.backlog.append(ResourceJournalEvent(entry, R))
        if self._history:
            self._history = False
            if self.include_sentinel:
                self.backlog.append(ResourceJournalEvent({"timestamp": self._last_ts}))

    def _next_response(self, timeout: float) -> None:
        assert self.rpc is not None
        try:
            resp = self.rpc.wait_for(timeout).get()
        except OSError as exc:
            if exc.errno != errno.ENODATA:
                raise
            resp = None
        else:
            self.rpc.reset()
        self._take(resp)

    def poll(self, timeout: float = -1.0) -> ResourceJournalEvent | None:
        """The next event (waiting ``timeout`` seconds at most, -1: no limit; then
        TimeoutError), or None once stopped and drained."""
        if self.rpc is None:
            raise RuntimeError("poll() called before start()")
        while not self.backlog:
            self._next_response(timeout)
        event = self.backlog[0]
        if event is not None:
            self.backlog.popleft()
        return event

    def _callback(self, future: RPC) -> None:
        try:
            resp = future.get()
        except OSError as exc:
            if exc.errno != errno.ENODATA:
                raise
            resp = None
        else:
            future.reset()
        self._take(resp)
        assert self.cb is not None
        while self.backlog:
            self.cb(self.backlog.popleft(), *self.cb_args, **self.cb_kwargs)

    def set_callback(
        self, event_cb: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> ResourceJournalConsumer:
        """Have ``event_cb(event, *args, **kwargs)`` called for each event (None at the end)."""
        self.cb = event_cb
        self.cb_args = args
        self.cb_kwargs = kwargs
        if self.rpc is not None and self.rpc._then_cb is None:
            self.rpc.then(self._callback)
        return self
