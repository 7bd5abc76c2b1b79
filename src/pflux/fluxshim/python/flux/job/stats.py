"""``flux.job.stats.JobStats``: job-list's job counts (``job-list.job-stats``) as attributes.

``update_sync()`` (or ``update()``, answered from the reactor) sets a count per
state (``depend`` ... ``inactive``, ``total``), per ending (``successful``,
``failed``, ``timeout``, ``canceled``), ``inactive_purged``, and the sums
``pending``, ``running`` and ``active``; every one is -1 until then. Given
``queue`` (a name or several), the counts are those queues' summed. As in
flux-core, ``failed`` counts every unsuccessful job, timed out and canceled too.
"""

from __future__ import annotations

from itertools import chain

from flux.rpc import RPC

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable

    from flux.core.handle import Flux


class JobStats:
    """Job counts, all jobs' or the named queues'."""

    states = ("depend", "priority", "sched", "run", "cleanup", "inactive", "total")
    stats = ("successful", "failed", "timeout", "canceled", "inactive_purged")
    derived_stats = ("pending", "running", "active")

    # the counts, set by name (-1 until an answer)
    depend: int
    priority: int
    sched: int
    run: int
    cleanup: int
    inactive: int
    total: int
    successful: int
    failed: int
    timeout: int
    canceled: int
    inactive_purged: int
    pending: int
    running: int
    active: int

    class QueueStats:
        """One set of counts from the answer (all jobs', or a queue's), which ``+=`` sums."""

        def __init__(self, stats: dict[str, Any] | None = None) -> None:
            self.queue_name = ""
            counts: dict[str, int] = dict.fromkeys(chain(JobStats.states, JobStats.stats), 0)
            if stats is not None:
                self.queue_name = stats.get("name", "all")
                counts.update((state, stats["job_states"][state]) for state in JobStats.states)
                counts.update((stat, stats[stat]) for stat in JobStats.stats)
            for name, count in counts.items():
                setattr(self, name, count)

        def __iadd__(self, other: JobStats.QueueStats) -> JobStats.QueueStats:
            self.queue_name += "," + other.queue_name
            for name in chain(JobStats.states, JobStats.stats):
                setattr(self, name, getattr(self, name) + getattr(other, name))
            return self

    def __init__(self, handle: Flux, queue: str | Iterable[str] | None = None) -> None:
        self.handle = handle
        self.queues: list[str] = []
        if queue is not None:
            self.queues.extend([queue] if isinstance(queue, str) else queue)
        self.callback: Callable[..., Any] | None = None
        self.cb_kwargs: dict[str, Any] = {}
        for name in chain(self.states, self.stats, self.derived_stats):
            setattr(self, name, -1)

    def _update_cb(self, rpc: RPC) -> None:
        answer = rpc.get()
        if self.queues:
            by_name = {entry["name"]: self.QueueStats(entry) for entry in answer["queues"]}
            counts = self.QueueStats()
            for name in self.queues:
                if name not in by_name:
                    raise ValueError(f"no stats available for queue {name}")
                counts += by_name[name]
        else:
            counts = self.QueueStats(answer)
        for name in chain(self.states, self.stats):
            setattr(self, name, getattr(counts, name))
        self.pending = self.depend + self.priority + self.sched
        self.running = self.run + self.cleanup
        self.active = self.total - self.inactive
        self.failed += self.timeout + self.canceled
        if self.callback is not None:
            self.callback(self, **self.cb_kwargs)

    def _query(self) -> RPC:
        return RPC(self.handle, "job-list.job-stats", {})

    def update(self, callback: Callable[..., Any] | None = None, **kwargs: Any) -> None:
        """Ask for the counts; they are set (and ``callback(self, **kwargs)`` called) when
        the answer comes, from the handle's reactor."""
        self.callback = callback
        self.cb_kwargs = kwargs
        self._query().then(self._update_cb)

    def update_sync(self) -> JobStats:
        """Ask for the counts and set them now."""
        self._update_cb(self._query())
        return self


class StatsInfo(JobStats):
    """``JobStats`` that prints as ``flux jobs --stats`` shows it: ``PD:1 R:2 CD:3 F:0``."""

    def __repr__(self) -> str:
        return f"PD:{self.pending} R:{self.running} CD:{self.successful} F:{self.failed}"

    def __format__(self, fmt: str) -> str:
        return str(self).__format__(fmt)
