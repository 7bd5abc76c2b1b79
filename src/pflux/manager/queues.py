"""The queues' state: enabled (submissions taken) and started (allocations asked for).

As flux-core's job manager (``queue.c``): with no ``[queues]`` table there is
one anonymous queue; with one, each named queue has its own state and a job
must name one of them (job-ingest has already filled in the default). A
request naming no queue acts on the anonymous one, or, with ``all``, on every
queue. The state is stored with the turn's events (``checkpoint.py``) as
flux-core's checkpoint has it: a list of ``{name?, enable, start,
disable_reason?, stop_reason?}``.
"""

from __future__ import annotations

import errno
from collections.abc import Iterable
from typing import Any

from pflux.errors import RPCError
from pflux.spec.jobspec import system_attributes


class JobQueue:
    """One queue's state; ``stored_start`` is the (start, reason) stored when a stop
    with ``nocheckpoint`` left it unstored."""

    __slots__ = ("disable_reason", "enable", "name", "start", "stop_reason", "stored_start")

    def __init__(self, name: str | None) -> None:
        self.name = name
        self.enable = True
        self.disable_reason = ""
        self.start = True
        self.stop_reason = ""
        self.stored_start: tuple[bool, str] | None = None

    def set_enable(self, enable: bool, reason: str) -> None:
        self.enable = enable
        self.disable_reason = "" if enable else reason

    def set_start(self, start: bool, reason: str, nocheckpoint: bool) -> None:
        stored = (self.start, self.stop_reason)
        self.start = start
        self.stop_reason = "" if start else reason
        if nocheckpoint and not start:
            if self.stored_start is None:
                self.stored_start = stored
        else:
            self.stored_start = None

    def status(self) -> dict[str, Any]:
        """``job-manager.queue-status``'s answer."""
        status: dict[str, Any] = {"enable": self.enable, "start": self.start}
        if not self.enable:
            status["disable_reason"] = self.disable_reason
        if not self.start and self.stop_reason:  # a stop may have no reason (flux-core's)
            status["stop_reason"] = self.stop_reason
        return status

    def stored(self) -> dict[str, Any]:
        """The state as stored: a stop that is not to be stored leaves it as it was."""
        status = self.status()
        if self.stored_start is not None:
            started, reason = self.stored_start
            status["start"] = started
            status.pop("stop_reason", None)
            if not started and reason:
                status["stop_reason"] = reason
        return {"name": self.name, **status} if self.name is not None else status

    def restore(self, entry: dict[str, Any]) -> None:
        self.set_enable(entry.get("enable") is not False, str(entry.get("disable_reason", "")))
        self.set_start(entry.get("start") is not False, str(entry.get("stop_reason", "")), False)


class Queues:
    """The anonymous queue, or the named ones."""

    def __init__(self, names: Iterable[str]) -> None:
        self.named: dict[str, JobQueue] = {name: JobQueue(name) for name in names}
        self.anon = JobQueue(None)

    def all(self) -> list[JobQueue]:
        return list(self.named.values()) if self.named else [self.anon]

    def lookup(self, name: str | None) -> JobQueue:
        """The queue a request names; EINVAL with flux-core's words if there is none such."""
        if name is None:
            if self.named:
                raise RPCError(errno.EINVAL, "a named queue is required")
            return self.anon
        queue = self.named.get(name)
        if queue is None:
            raise RPCError(errno.EINVAL, f"'{name}' is not a valid queue")
        return queue

    def targets(self, name: str | None, every: bool) -> list[JobQueue]:
        """The queues an enable or start request acts on (``every``: its ``all``)."""
        if name is None:
            if self.named and not every:
                raise RPCError(errno.EINVAL, "Use --all to apply this command to all queues")
            return self.all()
        return [self.lookup(name)]

    def submit_error(self, jobspec: dict[str, Any]) -> str | None:
        """Why a job with ``jobspec`` may not be submitted, or None (flux-core's words)."""
        name = system_attributes(jobspec).get("queue")
        try:
            queue = self.lookup(name if isinstance(name, str) or name is None else str(name))
        except RPCError as exc:
            return exc.errstr
        if not queue.enable:
            to = f" to {name}" if name is not None else ""
            return f"job submission{to} is disabled: {queue.disable_reason}".rstrip(": ")
        return None

    def started(self, jobspec: dict[str, Any] | None) -> bool:
        """Whether the queue of a job with ``jobspec`` is started."""
        if not self.named:
            return self.anon.start
        name = system_attributes(jobspec).get("queue")
        queue = self.named.get(name) if isinstance(name, str) else None
        return queue is not None and queue.start

    def stored(self) -> list[dict[str, Any]]:
        return [queue.stored() for queue in self.all()]

    def restore(self, entries: list[Any]) -> None:
        """Take back the stored state; entries of queues no longer configured are dropped."""
        for entry in entries:
            if not isinstance(entry, dict):
                continue
            name = entry.get("name")
            if name is None and not self.named:
                self.anon.restore(entry)
            elif isinstance(name, str) and name in self.named:
                self.named[name].restore(entry)
