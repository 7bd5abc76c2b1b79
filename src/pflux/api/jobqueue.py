"""The job manager's queues and its waits for quiet: the request methods both clients
share (``pflux.api.exchange``)."""

from __future__ import annotations

from pflux.api.exchange import Exchange, ask

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from pflux.api.replies import AllocCounts, QueueStatus


def alloc_query() -> Exchange[AllocCounts]:
    """The job manager's allocation counts: requests queued, pending, jobs running."""
    reply = yield from ask("job-manager.alloc-query", {})
    from pflux.api.replies import AllocCounts  # with the first answer, not with the API

    return AllocCounts.from_reply(reply)


def queues() -> Exchange[list[str]]:
    """The configured queues' names (none: the one anonymous queue)."""
    names: list[str] = (yield from ask("job-manager.queue-list", {}))["queues"]
    return names


def queue_status(*, queue: str | None = None) -> Exchange[QueueStatus]:
    """Whether submission is enabled and scheduling started, and why not: of the named
    ``queue`` (required when queues are configured) or the anonymous one."""
    reply = yield from ask("job-manager.queue-status", _named({}, queue))
    from pflux.api.replies import QueueStatus

    return QueueStatus.from_reply(reply)


def queue_enable(
    enable: bool, reason: str = "", *, queue: str | None = None, all: bool = False
) -> Exchange[None]:
    """Accept (or, with a reason, refuse) new submissions to ``queue``, or ``all``."""
    payload = _named({"enable": enable, "reason": reason}, queue, all)
    yield from ask("job-manager.queue-enable", payload)


def queue_start(
    start: bool,
    reason: str = "",
    *,
    checkpoint: bool = True,
    queue: str | None = None,
    all: bool = False,
) -> Exchange[None]:
    """Start (or, with a reason, stop) allocating resources to ``queue``'s (or ``all``
    queues') pending jobs.

    ``checkpoint=False`` stops only until the next restart (flux's ``--nocheckpoint``).
    """
    payload = _named({"start": start, "reason": reason, "nocheckpoint": not checkpoint}, queue, all)
    yield from ask("job-manager.queue-start", payload)


def drain(timeout: float | None = None) -> Exchange[None]:
    """Wait until no job is active (RPCTimeout after ``timeout`` seconds)."""
    yield from ask("job-manager.drain", {}, wait=True, timeout=timeout)


def idle(timeout: float | None = None) -> Exchange[int]:
    """Wait until no job is running; return how many are still pending."""
    return int((yield from ask("job-manager.idle", {}, wait=True, timeout=timeout))["pending"])


def _named(payload: dict[str, Any], queue: str | None, every: bool = False) -> dict[str, Any]:
    """A queue request's payload, naming ``queue`` if given, or every queue (``all``)."""
    if queue is not None:
        payload["name"] = queue
    if every:
        payload["all"] = True
    return payload
