"""The inactive jobs in one value, written at a clean stop, read at start in place of their records.

A restart reads each inactive job's record (``inactive.py``): a million of
them is a walk of a million keys. At a clean stop, once every event posted is
durable, the job manager stores instead what it holds of every inactive job
(its ``Ended`` record, and which are waitable) as one value, ``KEY``, in one
commit; a start reads it in one ``kvs.get`` and one decode.

It is used only when it is current, which the KVS's root version proves: the
value names the version read just before its commit (``rootseq``), and a start
that finds the version one past it knows that the snapshot's commit was the
last one stored (any other commit, before or after it, from any service, moves
the version further). After a crash, or a stop whose snapshot failed, or a
start that then committed anything, the snapshot is stale: it is left as it
is, and the records are walked. A snapshot that does not decode is logged and
ignored in the same way.

The value is JSON: ``{"version": 1, "rootseq": N, "count": jobs, "data":
base64}``, ``data`` the msgpack array ``[[Ended, ...], [waitable job id,
...]]``, each ``Ended`` the array of its fields, in their order: a change to
them is a new ``VERSION`` (an older snapshot is then ignored).
"""

from __future__ import annotations

import asyncio
import binascii
import errno
import logging
import os
import signal
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING, Final

import msgspec
import orjson

from pflux.errors import RPCError
from pflux.manager.job import Ended
from pflux.protocol.kvs import CommitRequest, GetRequest, GetrootRequest, value_of

if TYPE_CHECKING:
    from pflux.broker.router import Broker
    from pflux.manager.events import EventPoster

log = logging.getLogger("pflux.job-manager")

KEY: Final = "checkpoint.job-manager-inactive"
VERSION: Final = 1
SETTLE_TIMEOUT: Final = 10.0  # seconds a stop waits for the events posted to be durable
# for tests: the broker kills itself (SIGKILL) at this point of ``save``: "writing", the
# snapshot built and its commit about to be sent; "written", its commit answered
KILL_AT: Final = "PFLUX_TEST_KILL_AT_SNAPSHOT"


class SnapshotError(ValueError):
    """A stored snapshot that cannot be read back (the records are read instead)."""


class _Data(msgspec.Struct, array_like=True, gc=False):
    jobs: list[Ended]
    waitable: list[int]


_decoder = msgspec.msgpack.Decoder(_Data)


class InactiveSnapshot:
    """A decoded snapshot: the version before its commit, the inactive jobs (in the
    order the job manager held them) and the waitable ones among them."""

    __slots__ = ("ended", "rootseq", "waitable")

    def __init__(self, rootseq: int, ended: dict[int, Ended], waitable: set[int]) -> None:
        self.rootseq = rootseq
        self.ended = ended
        self.waitable = waitable


def encode(rootseq: int, ended: Collection[Ended], waitable: Iterable[int]) -> str:
    """The snapshot of ``ended`` (``waitable`` the waitable ones' ids), committed right
    after root version ``rootseq``."""
    data = msgspec.msgpack.encode(_Data(list(ended), sorted(waitable)))
    stored = {
        "version": VERSION,
        "rootseq": rootseq,
        "count": len(ended),
        "data": binascii.b2a_base64(data, newline=False).decode(),
    }
    return orjson.dumps(stored).decode()


def decode(text: str) -> InactiveSnapshot:
    """The snapshot ``text`` holds; SnapshotError says what is wrong."""
    try:
        stored = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise SnapshotError(f"not JSON: {exc}") from None
    if type(stored) is not dict or stored.get("version") != VERSION:
        raise SnapshotError(f"not a version {VERSION} snapshot")
    rootseq, count, data = stored.get("rootseq"), stored.get("count"), stored.get("data")
    if type(rootseq) is not int or rootseq < 0 or type(count) is not int:
        raise SnapshotError("rootseq and count must be integers")
    if type(data) is not str:
        raise SnapshotError("data must be a string")
    try:
        decoded = _decoder.decode(binascii.a2b_base64(data, strict_mode=True))
    except (binascii.Error, msgspec.DecodeError) as exc:
        raise SnapshotError(f"data: {exc}") from None
    ended = {job.id: job for job in decoded.jobs}
    if len(decoded.jobs) != count or len(ended) != count:
        raise SnapshotError(f"data: {len(ended)} distinct jobs, not the {count} counted")
    waitable = set(decoded.waitable)
    if not waitable <= ended.keys():
        raise SnapshotError("data: a waitable job that is not among the jobs")
    return InactiveSnapshot(rootseq, ended, waitable)


async def rootseq(broker: Broker) -> int:
    """The KVS root's version now."""
    reply = await broker.call("kvs.getroot", GetrootRequest())
    return int(reply["rootseq"])


async def load(broker: Broker) -> InactiveSnapshot | None:
    """The stored snapshot if it is current (the KVS's version one past its ``rootseq``);
    None if there is none, or it is stale or does not decode (logged)."""
    try:
        text = value_of(await broker.call("kvs.get", GetRequest(KEY)))
    except RPCError as exc:
        if exc.errnum != errno.ENOENT:
            log.error("restart: %s: %s; reading the records", KEY, exc.errstr)
        return None
    try:
        snapshot = decode(text)
    except SnapshotError as exc:
        log.error("restart: %s: %s; reading the records", KEY, exc)
        return None
    version = await rootseq(broker)
    if version != snapshot.rootseq + 1:
        log.info("restart: %s stale (root version %d, not %d)", KEY, version, snapshot.rootseq + 1)
        return None
    return snapshot


async def save(
    broker: Broker, events: EventPoster, ended: dict[int, Ended], waitable: set[int]
) -> None:
    """Store the snapshot of ``ended`` once every event posted is durable (within
    ``SETTLE_TIMEOUT``; else none is stored, and the next start reads the records)."""
    try:
        async with asyncio.timeout(SETTLE_TIMEOUT):
            settled = await events.settled()
    except TimeoutError:
        log.warning("stop: events not stored after %.0fs; no snapshot", SETTLE_TIMEOUT)
        return
    if not settled:  # a full disk (not sent again), a failed commit
        log.warning("stop: events not stored; no snapshot")
        return
    try:
        version = await rootseq(broker)
        if events.pending:  # posted meanwhile: a commit to come would make it stale
            log.warning("stop: events posted while stopping; no snapshot")
            return
        # built and sent in one go: nothing the job manager holds changes in between
        ops = [["put", KEY, encode(version, ended.values(), waitable)]]
        _kill_at("writing")
        await broker.call("kvs.commit", CommitRequest(ops))
        _kill_at("written")
        log.info("stop: %d inactive jobs stored in %s", len(ended), KEY)
    except RPCError as exc:
        log.error("stop: %s not stored: %s", KEY, exc.errstr)


def _kill_at(point: str) -> None:
    if os.environ.get(KILL_AT) == point:
        os.kill(os.getpid(), signal.SIGKILL)
