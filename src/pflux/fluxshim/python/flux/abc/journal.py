"""``flux.abc.journal``: what a consumer of a journal-style stream does whatever its
events: one streaming request, a backlog of events given by ``poll()`` or to a
callback in ``reactor_run()``, and None once the stream has ended.

A subclass written for flux-core's base names the service's ``topic`` and says how
a response becomes events (``process_response``, ``create_event``, and
``is_empty_response`` for the sentinel that ends the history, which is sorted by time
before any of it is given). pflux's own consumers instead say which request starts
the stream (``_request``), how a response becomes events (``_take``, None for the
end), and whether the backlog must wait for more (``_holding``).
"""

from __future__ import annotations

import errno
import time
from collections import deque

from flux.constants import FLUX_RPC_NORESPONSE, FLUX_RPC_STREAMING
from flux.eventlog import EventLogEvent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, TypeVar

    from flux.core.handle import Flux
    from flux.future import Future
    from flux.rpc import RPC

    _Consumer = TypeVar("_Consumer", bound="JournalConsumerBase")


class JournalEventBase(EventLogEvent):
    """An event of a journal: ``name``, ``timestamp`` (now, if the event has none) and
    ``context``; an event with no name is the sentinel between history and live events."""

    def __init__(self, event: dict[str, Any]) -> None:
        if "timestamp" not in event:
            event = dict(event, timestamp=time.time())
        super().__init__(event)

    def is_empty(self) -> bool:
        """Whether this is the sentinel between the history and live events."""
        return "name" not in self

    def __str__(self) -> str:
        if self.is_empty():
            return f"{self.timestamp:<0.5f} End of historical data stream"
        return " ".join([f"{self.timestamp:<0.5f}", self.name, self.context_string])


class JournalConsumerBase:
    """Events of one stream: ``start()``, then ``poll(timeout)`` or ``set_callback(cb)``
    and ``reactor_run()``; ``stop()``, after which None is given once all is taken."""

    SENTINEL_EVENT = JournalEventBase({})

    def __init__(
        self,
        flux_handle: Flux,
        topic: str | None = None,
        cancel_topic: str | None = None,
        full: bool = True,
        since: float = 0.0,
        include_sentinel: bool = False,
    ) -> None:
        self.handle = flux_handle
        self.backlog: deque[Any] = deque()
        self.rpc: RPC | None = None
        self.cb: Callable[..., Any] | None = None
        self.cb_args: Any = ()
        self.cb_kwargs: Any = {}
        self.topic = topic
        self.cancel_topic = f"{topic}-cancel" if topic and cancel_topic is None else cancel_topic
        self.full = full
        self.since = since
        self.include_sentinel = include_sentinel
        self.processing_inactive = full

    # --- flux-core's hooks, for a subclass that names its service's topic --------------

    def process_response(self, resp: dict[str, Any]) -> dict[str, Any]:
        """The keyword arguments ``create_event`` gets for each event of ``resp``."""
        return {}

    def create_event(self, entry: dict[str, Any], **kwargs: Any) -> JournalEventBase:
        """An event of a response's ``events``."""
        return JournalEventBase(entry)

    def is_empty_response(self, resp: dict[str, Any]) -> bool:
        """Whether ``resp`` is the sentinel that ends the history (it has no events)."""
        return not resp.get("events")

    @property
    def request_payload(self) -> dict[str, Any]:
        """The payload of the journal request."""
        return {}

    # --- what the base does with them, and what pflux's own consumers replace ----------

    def _request(self) -> RPC:
        """Begin the stream afresh: its own state reset, the streaming request whose
        responses ``_take`` reads sent."""
        if self.topic is None:
            raise NotImplementedError("a journal consumer needs a topic")
        self.processing_inactive = self.full
        return self.handle.rpc(self.topic, self.request_payload, 0, FLUX_RPC_STREAMING)

    def _take(self, resp: dict[str, Any] | None) -> None:
        """Queue the events of one response (None: the end)."""
        if resp is None:
            self.processing_inactive = False
            self.backlog.append(None)
            return
        if self.processing_inactive and self.is_empty_response(resp):
            self.processing_inactive = False
            self.backlog = deque(sorted(self.backlog, key=lambda e: e.timestamp))
            if self.include_sentinel:
                self.backlog.append(self.SENTINEL_EVENT)
            return
        kwargs = self.process_response(resp)
        for entry in resp.get("events", ()):
            event = self.create_event(entry, **kwargs)
            if event.timestamp > self.since:
                self.backlog.append(event)

    def _cancel(self, matchtag: int) -> None:
        """Tell the service the stream ``matchtag`` is no longer read (if it can be told)."""
        if self.cancel_topic:
            self.handle.rpc(self.cancel_topic, {"matchtag": matchtag}, 0, FLUX_RPC_NORESPONSE)

    def _holding(self) -> bool:
        """Whether the backlog waits for more responses before any of it is given."""
        return self.topic is not None and self.processing_inactive

    def start(self: _Consumer) -> _Consumer:
        """Send the request (again: the stream restarts from its beginning)."""
        self.stop()
        self.rpc = self._request()
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
        self._cancel(rpc._matchtag)

    @staticmethod
    def _response(future: Future) -> dict[str, Any] | None:
        """A ready response of the stream, the future reset for the next; None: the end."""
        try:
            resp: dict[str, Any] = future.get()
        except OSError as exc:
            if exc.errno != errno.ENODATA:
                raise
            return None
        future.reset()
        return resp

    def _next_response(self, timeout: float) -> None:
        assert self.rpc is not None
        self._take(self._response(self.rpc.wait_for(timeout)))

    def poll(self, timeout: float = -1.0) -> Any:
        """The next event (waiting ``timeout`` seconds at most, -1: no limit; then
        TimeoutError), or None once stopped and drained."""
        if self.rpc is None:
            raise RuntimeError("poll() called before start()")
        while self._holding() or not self.backlog:
            self._next_response(timeout)
        event = self.backlog[0]
        if event is not None:
            self.backlog.popleft()
        return event

    def _callback(self, future: RPC) -> None:
        self._take(self._response(future))
        if self._holding():
            return
        assert self.cb is not None
        while self.backlog:
            self.cb(self.backlog.popleft(), *self.cb_args, **self.cb_kwargs)

    def set_callback(
        self: _Consumer, event_cb: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> _Consumer:
        """Have ``event_cb(event, *args, **kwargs)`` called for each event (None at the end)."""
        self.cb = event_cb
        self.cb_args = args
        self.cb_kwargs = kwargs
        if self.rpc is not None and self.rpc._then_cb is None:
            self.rpc.then(self._callback)
        return self
