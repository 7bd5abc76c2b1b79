"""The queue's state, kept in the KVS so that a restart finds it as it was.

flux-core's job manager keeps the queues' state (enabled or not, started or
not, and why) in its checkpoint, ``checkpoint.job-manager``, as a list with an
entry per queue (``queues.py``); pflux keeps it there too, written with the
change (in the same commit as the turn's events) rather than only at shutdown,
so a crash loses none of it.
Beside it, as flux-core's, the largest job id ever issued (``max_jobid``): once
that job is purged, the KVS no longer shows it, and job-ingest must never
issue an id below it again.
"""

from __future__ import annotations

import errno
import logging
from typing import TYPE_CHECKING, Any, Final

import orjson

from pflux.errors import RPCError
from pflux.protocol.kvs import GetRequest, value_of

if TYPE_CHECKING:
    from pflux.broker.router import Broker

log = logging.getLogger("pflux.job-manager")

KEY: Final = "checkpoint.job-manager"
VERSION: Final = 1


def ops(queues: list[dict[str, Any]], max_jobid: int) -> list[list[Any]]:
    """The KVS operations that store ``queues`` (``Queues.stored``) and the largest job
    id issued."""
    value = orjson.dumps({"version": VERSION, "queues": queues, "max_jobid": max_jobid}).decode()
    return [["put", KEY, value]]


async def load(broker: Broker) -> tuple[list[Any], int]:
    """The queues' stored state (``[{name?, enable, start, disable_reason?, stop_reason?}]``,
    or []) and the largest job id stored (0 if none)."""
    try:
        text = value_of(await broker.call("kvs.get", GetRequest(KEY)))
    except RPCError as exc:
        if exc.errnum != errno.ENOENT:
            log.error("restart: %s: %s", KEY, exc.errstr)
        return [], 0
    try:
        stored = orjson.loads(text)
        if not isinstance(stored, dict) or stored.get("version") != VERSION:
            raise ValueError(f"not a version {VERSION} checkpoint")
    except (orjson.JSONDecodeError, ValueError) as exc:
        log.error("restart: %s: %s; the queues start enabled and started", KEY, exc)
        return [], 0
    max_jobid = stored.get("max_jobid", 0)
    max_jobid = max_jobid if type(max_jobid) is int and max_jobid > 0 else 0
    queues = stored.get("queues")
    if queues is None and isinstance(stored.get("queue"), dict):
        queues = [stored["queue"]]  # pflux before named queues: the one anonymous queue's
    if not isinstance(queues, list):
        log.error("restart: %s: no queues; the queues start enabled and started", KEY)
        return [], max_jobid
    return queues, max_jobid
