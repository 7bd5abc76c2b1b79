"""``flux.job.JournalConsumer``: every job's events, from ``job-manager.events-journal``.

With ``full`` (the default) the jobs' past events come first, sorted by time,
then (with ``include_sentinel``) an empty event, then events as they are
committed. pflux's journal may send an event of the history again live; each
job's event is given once (by its index in the job's eventlog). ``stop()``
ends the stream on this side: pflux has no cancel request for the journal, so
its responses are ignored from then on and the consumer gives None.
"""

from __future__ import annotations

from collections import deque

from flux.abc.journal import JournalConsumerBase, JournalEventBase
from flux.constants import FLUX_RPC_STREAMING
from flux.job.JobID import JobID

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from flux.core.handle import Flux
    from flux.rpc import RPC


class JournalEvent(JournalEventBase):
    """An event of the journal: ``jobid``, ``name``, ``timestamp``, ``context``;
    ``jobspec`` on ``submit`` events, ``R`` on ``alloc`` events."""

    def __init__(self, jobid: int, event: dict[str, Any], jobspec: Any = None, R: Any = None):  # noqa: N803
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


class JournalConsumer(JournalConsumerBase):
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
        super().__init__(flux_handle)
        self.full = full
        self.since = since
        self.include_sentinel = include_sentinel
        self.processing_inactive = full
        self._seen: dict[int, int] = {}  # job id -> the highest eventlog index given
        # (job id, index) given before the sentinel: a live entry may come before the
        # history it follows, so only an entry given already is left out
        self._given: set[tuple[int, int]] = set()
        self._ended = False

    def _request(self) -> RPC:
        self._ended = False
        self.processing_inactive = self.full
        self._seen.clear()
        self._given.clear()
        return self.handle.rpc(
            "job-manager.events-journal", {"full": self.full}, 0, FLUX_RPC_STREAMING
        )

    def _holding(self) -> bool:
        # the history is sorted once it is all in
        return self.processing_inactive and not self._ended

    def _take(self, resp: dict[str, Any] | None) -> None:
        """Queue the events of one response (None: the end)."""
        if resp is None:
            self._ended = True
            self.backlog.append(None)
            return
        if resp.get("sentinel"):
            if self.processing_inactive:
                self.processing_inactive = False
                self._given.clear()
                self.backlog = deque(sorted(self.backlog, key=lambda e: e.timestamp))
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
            if self.processing_inactive:
                if (jobid, seq) in self._given:
                    continue  # sent live and with the history
                self._given.add((jobid, seq))
            elif seq <= self._seen.get(jobid, -1):
                continue  # sent with the history already
            self._seen[jobid] = max(seq, self._seen.get(jobid, -1))
            event = JournalEvent(jobid, item["entry"], item.get("jobspec"), item.get("R"))
            if event.timestamp > self.since:
                self.backlog.append(event)
