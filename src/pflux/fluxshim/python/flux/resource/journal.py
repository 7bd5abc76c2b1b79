"""``flux.resource.journal``: the resource eventlog as a stream of events.

pflux's scheduler keeps the resource eventlog in the KVS (``resource.eventlog``), so
the consumer watches that key: the events already there come first (then, with
``include_sentinel``, an empty event), then each event as it is posted. ``resource-define``
events carry R (the instance's, from ``sched.resource-status``) in ``R``.
"""

from __future__ import annotations

import json

from flux.abc.journal import JournalConsumerBase, JournalEventBase
from flux.constants import FLUX_RPC_STREAMING

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from flux.core.handle import Flux
    from flux.rpc import RPC

__all__ = ["ResourceJournalConsumer", "ResourceJournalEvent"]

_KEY = "resource.eventlog"


class ResourceJournalEvent(JournalEventBase):
    """One event of the resource eventlog: ``name``, ``timestamp``, ``context``; ``R`` on
    ``resource-define``."""

    def __init__(self, event: dict[str, Any], R: Any = None) -> None:  # noqa: N803
        super().__init__(event)
        self.R = R


class ResourceJournalConsumer(JournalConsumerBase):
    """Resource events: ``start()``, then ``poll(timeout)`` or ``set_callback(cb)`` and
    ``reactor_run()``; ``stop()``, after which None is given once all is taken. Events
    no later than ``since`` are skipped."""

    def __init__(
        self, flux_handle: Flux, since: float = 0.0, include_sentinel: bool = False
    ) -> None:
        super().__init__(flux_handle)
        self.since = since
        self.include_sentinel = include_sentinel
        self._partial = ""
        self._history = True
        self._last_ts = 0.0

    def _request(self) -> RPC:
        self._partial, self._history = "", True
        payload = {"key": _KEY, "append": True, "waitcreate": True}
        return self.handle.rpc("kvs.watch", payload, 0, FLUX_RPC_STREAMING)

    def _cancel(self, matchtag: int) -> None:
        self.handle.rpc("kvs.watch-cancel", {"matchtag": matchtag}, 0)

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
