"""``flux.job.JournalConsumer``: every job's events, from ``job-manager.events-journal``.

With ``full`` (the default) the jobs' past events come first, sorted by time,
then (with ``include_sentinel``) an empty event, then events as they are
committed. pflux's journal may send an event of the history again live; each
job's event is given once (by its index in the job's eventlog). ``stop()``
ends the stream on this side: pflux has no cancel request for the journal, so
its responses are ignored from then on and the consumer gives None.
"""

from __future__ import annotations

import errno
import time
from collections import deque

from flux.constants import FLUX_RPC_STREAMING
from flux.eventlog import EventLogEvent
from flux.job.JobID import JobID

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

    from flux.core.handle import Flux
    from flux.rpc import RPC


class JournalEvent(EventLogEvent):
    """An event of the journal: ``jobid``, ``name``, ``timestamp``, ``context``;
    ``jobspec`` on ``submit`` events, ``R`` on ``alloc`` events."""

    def __init__(self, jobid: int, event: dict[str, Any], jobspec: Any = None, R: Any = None):  # noqa: N803
        if "timestamp" not in event:
            event = dict(event, timestamp=time.time())
        super().__init__(event)
        self.jobid = JobID(jobid)
        self.jobspec = jobspec if self.get("name") == "submit" else None
        self.R = R if self.get("name") == "alloc" else None

    def is_empty(self) -> bool:
        """Whether this is the sentinel between the history and live events."""
        return bool(self.jobid == -1)

    def __str__(self) -> str:
        if self.is_empty():
            return "-1: End of historical data stream"
        parts = [f"{self.jobid.f58}:", f"{self.timestamp:<0.5f}", self.name, self.context_string]
        if self.jobspec:
            parts.append(f"jobspec={self.jobspec}")
        if self.R:
            parts.append(f"R={self.R}")
        return " ".join(p for p in parts if p)


SENTINEL_EVENT = JournalEvent(-1, {})


class JournalConsumer:
    """Job events for all jobs: ``start()``, then ``poll(timeout)`` or ``set_callback(cb)``
    and ``reactor_run()``; ``stop()``, after which None is given once all is taken."""

    SENTINEL_EVENT = SENTINEL_EVENT

    def __init__(
        self,
        flux_handle: Flux,
        full: bool = True,
        since: float = 0.0,
        include_sentinel: bool = False,
    ) -> None:
        self.handle = flux_handle
        self.full = full
        self.since = since
        self.include_sentinel = include_sentinel
        self.backlog: deque[JournalEvent | None] = deque()
        self.processing_inactive = full
        self.rpc: RPC | None = None
        self.cb: Callable[..., Any] | None = None
        self.cb_args: Any = ()
        self.cb_kwargs: Any = {}
        self._seen: dict[int, int] = {}  # job id -> the highest eventlog index given
        self._ended = False

    def start(self) -> JournalConsumer:
        """Send the request (again: the stream restarts with the same options)."""
        self.stop()
        self._ended = False
        self.processing_inactive = self.full
        self._seen.clear()
        self.rpc = self.handle.rpc(
            "job-manager.events-journal", {"full": self.full}, 0, FLUX_RPC_STREAMING
        )
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

    def _take(self, resp: dict[str, Any] | None) -> None:
        """Queue the events of one response (None: the end)."""
        if resp is None:
            self._ended = True
            self.backlog.append(None)
            return
        if resp.get("sentinel"):
            if self.processing_inactive:
                self.processing_inactive = False
                self.backlog = deque(sorted(self.backlog, key=lambda e: e.timestamp))  # type: ignore[union-attr]
                if self.include_sentinel:
                    self.backlog.append(self.SENTINEL_EVENT)
            return
        for item in resp.get("events", ()):
            seq = item.get("seq", -1)
            if seq < 0:  # the scheduler's annotations, or a purge: not events
                if item.get("entry", {}).get("name") == "purge":
                    self._seen.pop(item.get("id"), None)  # the job is gone for good
                continue
            jobid = item["id"]
            if seq <= self._seen.get(jobid, -1):
                continue  # sent with the history already
            self._seen[jobid] = seq
            event = JournalEvent(jobid, item["entry"], item.get("jobspec"), item.get("R"))
            if event.timestamp > self.since:
                self.backlog.append(event)

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

    def poll(self, timeout: float = -1.0) -> JournalEvent | None:
        """The next event (waiting ``timeout`` seconds at most, -1: no limit; then
        TimeoutError), or None once stopped and drained."""
        if self.rpc is None:
            raise RuntimeError("poll() called before start()")
        while self.processing_inactive and not self._ended:
            self._next_response(timeout)
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
        if self.processing_inactive and not self._ended:
            return  # the history is sorted once it is all in
        assert self.cb is not None
        while self.backlog:
            self.cb(self.backlog.popleft(), *self.cb_args, **self.cb_kwargs)

    def set_callback(
        self, event_cb: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> JournalConsumer:
        """Have ``event_cb(event, *args, **kwargs)`` called for each event (None at the end)."""
        self.cb = event_cb
        self.cb_args = args
        self.cb_kwargs = kwargs
        if self.rpc is not None and self.rpc._then_cb is None:
            self.rpc.then(self._callback)
        return self
