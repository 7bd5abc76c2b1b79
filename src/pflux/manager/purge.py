"""Retention: which inactive jobs to purge, and when (flux-core's ``job-manager/purge.c``).

An inactive job is eligible when it has been inactive longer than the age
limit, or while more inactive jobs than the number limit are kept (the oldest
first). With ``[job-manager] inactive-age-limit`` or ``inactive-num-limit``
set, eligible jobs are purged as jobs become inactive, at start (a restart
with a lower limit purges down to it) and when the oldest passes the age
limit; ``job-manager.purge`` and ``job-manager.purge-id`` (``pflux job purge``)
purge on request, with limits of their own.

Inactive jobs are kept in the order they became inactive (a deque), so the
jobs due are found at its front, never by a scan. A restart sorts them into
it only once something asks (a limit, a purge request): an instance without
limits never does, and a restart of a million jobs does not wait for it. A job purged by id stays in
the deque until it reaches the front, where it is skipped. What a purge does
(the KVS, the journal, the job manager's tables) is ``remove``; what the two
requests do, ``purge_request`` and ``purge_id_request``.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import math
import time
from collections import deque
from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Final

from pflux.broker.config import ConfigError
from pflux.errors import DurationError, RPCError
from pflux.manager import checkpoint
from pflux.spec import duration
from pflux.spec.kvs_keys import job_key

if TYPE_CHECKING:
    from pflux.broker.router import Request
    from pflux.manager.hosts import PurgeHost
    from pflux.manager.job import Ended
    from pflux.protocol.manager import PurgeIdRequest, PurgeRequest

log = logging.getLogger("pflux.job-manager")

TABLE: Final = "job-manager"
KEYS: Final = ("inactive-age-limit", "inactive-num-limit")
AUTO_BATCH: Final = 1000  # jobs purged per loop turn by the limits, the rest a turn later


def limits(config: dict[str, Any]) -> tuple[float | None, int | None]:
    """``[job-manager] inactive-age-limit`` (seconds) and ``inactive-num-limit``; None: no
    limit. ConfigError names the key and the rule."""
    table = config.get(TABLE, {})
    if not isinstance(table, dict):
        raise ConfigError(TABLE, None, f"must be a table, got {table!r}")
    age: float | None = None
    text = table.get("inactive-age-limit")
    if text is not None:
        if not isinstance(text, str):
            rule = f'must be a Flux standard duration, as "7d", got {text!r}'
            raise ConfigError(TABLE, "inactive-age-limit", rule)
        try:
            age = duration.parse(text)
        except DurationError as exc:
            raise ConfigError(TABLE, "inactive-age-limit", str(exc)) from None
        if math.isinf(age):
            age = None
    num = table.get("inactive-num-limit")
    if num is not None and (type(num) is not int or num < 0):
        raise ConfigError(TABLE, "inactive-num-limit", f"must be an integer >= 0, got {num!r}")
    return age, num


def eligible(age: float, age_limit: float | None, count: int, num_limit: int | None) -> bool:
    """Whether the oldest of ``count`` inactive jobs, inactive for ``age`` seconds, is due."""
    return (age_limit is not None and age > age_limit) or (
        num_limit is not None and count > num_limit
    )


class Retention:
    """Inactive jobs in the order they became inactive, and the limits that purge them."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        ended: dict[int, Ended],
        purge: Callable[[list[Ended]], None],
        config: dict[str, Any],
    ) -> None:
        self.loop = loop
        self.ended = ended  # the job manager's inactive jobs, by id
        self.purge = purge
        self.age_limit, self.num_limit = limits(config)
        self._order: deque[Ended] | None = deque()  # None: to be sorted from ``ended``
        self._soon: asyncio.Handle | None = None
        self._timer: asyncio.TimerHandle | None = None

    @property
    def limited(self) -> bool:
        return self.age_limit is not None or self.num_limit is not None

    @property
    def order(self) -> deque[Ended]:
        """The inactive jobs, oldest end first (sorted from ``ended`` the first time after
        a restart)."""
        if self._order is None:
            self._order = deque(sorted(self.ended.values(), key=_by_end))
        return self._order

    def rebuilt(self, ended: dict[int, Ended]) -> None:
        """The inactive jobs a restart found; purge what the limits say is due."""
        self.ended = ended
        self._order = None
        self._due()

    def add(self, job: Ended) -> None:
        """``job`` has become inactive (durably)."""
        if self._order is not None:  # else it is sorted in with the others when asked
            self._order.append(job)
        if self.num_limit is not None and len(self.ended) > self.num_limit:
            self._due()
        elif self.age_limit is not None and self._timer is None:
            self._arm()

    def count(self, age_limit: float | None, num_limit: int | None, now: float) -> int:
        """How many jobs ``take`` would purge with these limits, with no batch limit."""
        count = 0
        total = len(self.ended)
        for job in self.order:
            if self.ended.get(job.id) is not job:
                continue  # purged by id
            if not eligible(now - job.t_inactive, age_limit, total - count, num_limit):
                break
            count += 1
        return count

    def take(
        self, age_limit: float | None, num_limit: int | None, most: int, now: float
    ) -> list[Ended]:
        """The oldest eligible jobs, ``most`` at most, taken out of the order."""
        taken: list[Ended] = []
        order, ended = self.order, self.ended
        total = len(ended)
        while order and len(taken) < most:
            job = order[0]
            if ended.get(job.id) is not job:
                order.popleft()  # purged by id
                continue
            if not eligible(now - job.t_inactive, age_limit, total - len(taken), num_limit):
                break
            taken.append(order.popleft())
        return taken

    def stop(self) -> None:
        for handle in (self._soon, self._timer):
            if handle is not None:
                handle.cancel()
        self._soon = self._timer = None

    def _due(self) -> None:
        """Purge by the limits on the next turn (once, however many jobs ended meanwhile)."""
        if self.limited and self._soon is None:
            self._soon = self.loop.call_soon(self._purge)

    def _purge(self) -> None:
        self._soon = None
        jobs = self.take(self.age_limit, self.num_limit, AUTO_BATCH, time.time())
        if jobs:
            self.purge(jobs)
        if len(jobs) == AUTO_BATCH:
            self._due()  # more: a batch a turn, so nothing else waits long
        elif self.age_limit is not None:
            self._arm()

    def _arm(self) -> None:
        """Wake when the oldest inactive job passes the age limit."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        order, ended = self.order, self.ended
        while order and ended.get(order[0].id) is not order[0]:
            order.popleft()
        if not order or self.age_limit is None:
            return
        wait = order[0].t_inactive + self.age_limit - time.time()
        self._timer = self.loop.call_later(max(wait, 0.0) + 0.001, self._expired)

    def _expired(self) -> None:
        self._timer = None
        self._due()


_by_end = attrgetter("t_inactive", "id")


def remove(host: PurgeHost, jobs: list[Ended]) -> None:
    """Forget inactive ``jobs`` now; remove them from the KVS with this turn's events.

    Each job's directory (J, jobspec, R, eventlog, its guest namespace's keys
    and output) is one unlink, so a crash leaves a job whole or gone. The
    journal says ``purge`` for each once the removal is durable, and the
    largest job id issued is stored if it goes (checkpoint.py).
    """
    if not jobs:
        return
    ops: list[list[Any]] = []
    entries: list[dict[str, Any]] = []
    now = time.time()
    for job in jobs:
        del host.ended[job.id]
        host.waits.purged(job.id)
        host.history.remove(job.userid, job.id)
        ops.append(["unlink", job_key(job.id), None])
        entry = {"timestamp": now, "name": "purge", "context": {}}
        entries.append({"id": job.id, "seq": -1, "entry": entry})
        if job.id == host.max_jobid:
            mark = host.replay_mark.value
            ops.extend(checkpoint.ops(host.queues.stored(), host.max_jobid, mark))
    host.events.add_ops(ops)
    host.events.batch.entries.extend(entries)
    log.debug("purged %d inactive jobs", len(jobs))


def purge_request(
    host: PurgeHost, retention: Retention, req: Request, request: PurgeRequest
) -> None:
    """Purge (``force``) or count the oldest inactive jobs past the request's limits."""
    age = None if request.age_limit == -1 else request.age_limit
    num = None if request.num_limit == -1 else request.num_limit
    now = time.time()
    if not request.force:  # counted now, told once the purges before it are durable
        count, inactive = retention.count(age, num, now), len(host.ended)
        host.events.after_commit(lambda: req.respond({"count": count, "inactive": inactive}))
        return
    jobs = retention.take(age, num, request.batch, now)
    remove(host, jobs)
    inactive = len(host.ended)
    host.events.after_commit(lambda: req.respond({"count": len(jobs), "inactive": inactive}))


def purge_id_request(host: PurgeHost, req: Request, request: PurgeIdRequest) -> None:
    """Purge (``force``) or check one inactive job."""
    job = host.ended.get(request.id)
    if job is None:
        if request.id in host.jobs:
            raise RPCError(errno.EINVAL, "cannot purge active job")
        raise RPCError(errno.ENOENT, "id not found")
    if request.force:
        remove(host, [job])
    inactive = len(host.ended)
    host.events.after_commit(lambda: req.respond({"count": 1, "inactive": inactive}))
