"""The queue's state, kept in the KVS so that a restart finds it as it was.

flux-core's job manager keeps the queues' state (enabled or not, started or
not, and why) in its checkpoint, ``checkpoint.job-manager``, as a list with an
entry per queue (``queues.py``); pflux keeps it there too, written with the
change (in the same commit as the turn's events) rather than only at shutdown,
so a crash loses none of it.
Beside it, as flux-core's, the largest job id ever issued (``max_jobid``): once
that job is purged, the KVS no longer shows it, and job-ingest must never
issue an id below it again.
And ``replay_from``, the smallest job id whose eventlog a restart replays:
every job below it is inactive, with its record (``inactive.py``), or purged.
It is the smallest active job's id (or the largest issued, plus one), stored
now and then as jobs end (``ReplayMark``), and by a restart that stored the
records of the inactive jobs it replayed (a state directory older than them); kept
low, never too high: a job's id is issued above every id the job manager has
been given (job-ingest's one FLUID generator, and its jobs handed over in the
order of their ids), and an inactive job never becomes active again. Absent
(a state directory older than the records, or a checkpoint that does not
read): every eventlog is replayed.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final

import orjson

from pflux.errors import RPCError
from pflux.protocol.kvs import GetRequest, value_of

if TYPE_CHECKING:
    from pflux.broker.router import Broker

log = logging.getLogger("pflux.job-manager")

KEY: Final = "checkpoint.job-manager"
VERSION: Final = 1


def ops(queues: list[dict[str, Any]], max_jobid: int, replay_from: int) -> list[list[Any]]:
    """The KVS operations that store ``queues`` (``Queues.stored``), the largest job id
    issued and the smallest job id a restart replays (0: every one)."""
    stored: dict[str, Any] = {"version": VERSION, "queues": queues, "max_jobid": max_jobid}
    if replay_from > 0:
        stored["replay_from"] = replay_from
    return [["put", KEY, orjson.dumps(stored).decode()]]


async def load(broker: Broker) -> tuple[list[Any], int, int]:
    """The queues' stored state (``[{name?, enable, start, disable_reason?, stop_reason?}]``,
    or []), the largest job id stored (0 if none) and the smallest job id to replay (0:
    every one)."""
    try:
        text = value_of(await broker.call("kvs.get", GetRequest(KEY)))
    except RPCError as exc:
        if exc.errnum != errno.ENOENT:
            log.error("restart: %s: %s", KEY, exc.errstr)
        return [], 0, 0
    try:
        stored = orjson.loads(text)
        if not isinstance(stored, dict) or stored.get("version") != VERSION:
            raise ValueError(f"not a version {VERSION} checkpoint")
    except (orjson.JSONDecodeError, ValueError) as exc:
        log.error("restart: %s: %s; the queues start enabled and started", KEY, exc)
        return [], 0, 0
    max_jobid = _positive(stored.get("max_jobid"))
    replay_from = _positive(stored.get("replay_from"))
    queues = stored.get("queues")
    if queues is None and isinstance(stored.get("queue"), dict):
        queues = [stored["queue"]]  # pflux before named queues: the one anonymous queue's
    if not isinstance(queues, list):
        log.error("restart: %s: no queues; the queues start enabled and started", KEY)
        return [], max_jobid, replay_from
    return queues, max_jobid, replay_from


def _positive(value: Any) -> int:
    return value if type(value) is int and value > 0 else 0


class ReplayMark:
    """``replay_from``, as stored, and when to store it again.

    Finding the smallest active job id costs a pass over the active jobs, so it
    is done once for every ``max(STEP, active jobs)`` jobs that end: a restart
    replays at most that many inactive jobs' eventlogs more than it must.
    """

    STEP: Final = 1024

    def __init__(self) -> None:
        self.value = 0  # stored; 0: none (replay every eventlog)
        self._ended = 0  # jobs ended since it was computed

    def due(self, active: int) -> bool:
        """A job has ended: whether to compute and store the mark again."""
        self._ended += 1
        if self._ended < max(self.STEP, active):
            return False
        self._ended = 0
        return True

    @staticmethod
    def of(active: Iterable[int], max_jobid: int) -> int:
        """The mark for these active job ids, ``max_jobid`` the largest id issued."""
        return min(active, default=max_jobid + 1)
