"""The events journal: every committed job event, streamed to subscribers such as job-list.

Each entry is ``{id, seq, entry}`` where ``seq`` is the event's index in the
job's eventlog (a live event's ``entry`` is its eventlog line, an
``orjson.Fragment``, which is sent as it is: a subscriber inside the broker gets
it decoded); ``submit`` entries carry the jobspec and ``alloc`` entries R.
A subscriber asking for ``full`` first gets every job's history read back from
the KVS, then ``{sentinel: true}``; live entries may arrive while the history is
read, and ``seq`` tells the subscriber which it already has. Annotations from
the scheduler are not events: they travel as entries named ``annotations``
with ``seq`` -1.

A subscriber that keeps its own copy of inactive jobs (job-list's cache) asks
for ``full`` with ``digest``: then the jobs that are inactive when it
subscribes come as ``{digest: [[id, count], ...]}`` (``count``: the events in
the job's eventlog, final since an inactive job has no more), only the active
jobs' histories are read from the KVS, and ``history`` sends the events of
the inactive jobs whose copy the subscriber lacks or has with another count.
A subscriber that also says what it holds (``held``: the count and
``held_sum`` of its inactive jobs' ``[id, count]`` pairs) is answered
``{held: true}`` instead of the digest when they are those of the jobs inactive
as it subscribes: a restart after a clean stop then sends no pair at all.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import time
from collections.abc import AsyncIterator, Iterable
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Final

import orjson

from pflux.broker.router import LocalRoute, Request
from pflux.broker.timedbatch import TimedBatch
from pflux.errors import RPCError
from pflux.protocol.decode import decode
from pflux.protocol.kvs import GetRequest, WalkRequest, value_of
from pflux.protocol.manager import Empty, JournalHistoryRequest, JournalRequest, held_sum
from pflux.spec.kvs_keys import job_id_from_key, job_key
from pflux.spec.replay import events_of

if TYPE_CHECKING:
    from pflux.manager.hosts import JournalHost
    from pflux.manager.job import Ended, Job

log = logging.getLogger("pflux.job-manager")

BACKLOG_BATCH: Final = 1000  # entries per backlog response
DELAY: Final = 0.01  # seconds committed entries may wait to be sent together (see publish)
BATCH: Final = 4096  # entries that are sent at once without waiting
DIGEST_BATCH: Final = 10_000  # [id, count] pairs per digest response
_READ_CHUNK: Final = 64  # jobs whose files are read from the KVS at once
_FILES: Final = ("eventlog", "jobspec", "R")
_ID_AND_COUNT: Final = attrgetter("id", "nevents")  # an inactive job's digest pair
Files = AsyncIterator[tuple[int, dict[str, str]]]  # (job id, {file name: text}) per job


class Journal:
    """Fans committed events out to the subscribed streams."""

    def __init__(self, manager: JournalHost) -> None:
        self.manager = manager
        # each subscriber, and whether it is a service of this broker: a message to it is
        # never encoded, so it gets the entries' events as objects, not as JSON text
        self.subscribers: dict[Request, bool] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._pending: list[dict[str, Any]] = []  # entries waiting to be sent together
        self._batch = TimedBatch(
            manager.broker, self._send, delay=DELAY, limit=BATCH, after_quiet=True
        )

    def subscribe(self, req: Request) -> None:
        if not req.streaming:
            raise RPCError(errno.EPROTO, "events-journal must be a streaming request")
        request = decode("job-manager.events-journal", req.payload, JournalRequest)
        self.subscribers[req] = isinstance(req.sender, LocalRoute)
        req.on_disconnect(lambda: self._unsubscribe(req))
        if request.full:
            if request.digest:
                # which jobs are inactive is decided now, as the subscription starts: later
                # events reach the subscriber live
                ended = list(self.manager.ended.values())
                active = list(self.manager.jobs)
                if request.held is not None and _holds(request.held, ended):
                    backlog = self._held_backlog(req, active)
                else:
                    backlog = self._digest_backlog(req, ended, active)
            else:
                backlog = self._backlog(req)
            task = self.manager.broker.loop.create_task(backlog)
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _unsubscribe(self, req: Request) -> None:
        self.subscribers.pop(req, None)

    def publish(self, entries: list[dict[str, Any]]) -> None:
        """Send committed entries to every subscriber: at once, or with those that follow soon.

        A subscriber is another process (job-list): each message wakes it on the
        other core, which costs the broker more than encoding the message does
        (a tenth of its time with real jobs). So entries that come within
        ``DELAY`` of the last message wait for the rest of that interval (or
        ``BATCH`` entries) and go together; an entry after a quiet spell goes at
        once, so job-list is never later than ``DELAY``, nor out of order. A
        client that must find job-list up to date with what it has been told
        gets it by ``sync``: job-list asks before it answers.
        """
        if not entries or not self.subscribers:
            return
        self._pending.extend(entries)
        self._batch.grew(len(self._pending))

    def sync(self, req: Request) -> None:
        """Send what waits, then answer: the answer reaches a subscriber after the entries.

        Everything committed before the request is sent: a client told of a
        commit (a job id, a job's end) that then asks job-list, which asks this
        first, finds it there.
        """
        decode("job-manager.journal-sync", req.payload, Empty)
        if not req.owner:
            raise RPCError(errno.EPERM, "journal-sync: only the instance owner")
        self._batch.flush()
        req.respond({})

    def _send(self) -> None:
        entries, self._pending = self._pending, []
        if entries:
            payload = {"events": entries}
            decoded = None
            for req, local in list(self.subscribers.items()):
                if local:  # the events' JSON text read back, once for all such subscribers
                    decoded = decoded or orjson.loads(orjson.dumps(payload))
                req.respond(decoded if local else payload)

    def annotations(self, job: Job, annotations: dict[str, Any]) -> None:
        """Publish the scheduler's annotations of a job (not an event: seq -1)."""
        entry = {"timestamp": time.time(), "name": "annotations", "context": annotations}
        self.publish([{"id": job.id, "seq": -1, "entry": entry}])

    async def history(self, req: Request) -> None:
        """Every event of the jobs ``ids`` names, as the backlog sends them; unknown ids
        are left out."""
        if not req.owner:
            raise RPCError(errno.EPERM, "journal-history: only the instance owner")
        ids = decode("job-manager.journal-history", req.payload, JournalHistoryRequest).ids
        known = [jobid for jobid in ids if self.manager.lookup(jobid) is not None]
        entries: list[dict[str, Any]] = []
        async for jobid, files in _read(self.manager, known):
            entries.extend(_entries(jobid, files))
        req.respond({"events": entries})

    async def _backlog(self, req: Request) -> None:
        """Send every job's history from the KVS, then the sentinel."""
        try:
            await _send(req, _walk_files(self.manager))
        except RPCError as exc:
            log.error("journal backlog: %s", exc)
        req.respond({"sentinel": True})

    async def _digest_backlog(self, req: Request, ended: list[Ended], active: list[int]) -> None:
        """The digest of the inactive jobs, the active jobs' histories, then the sentinel."""
        try:
            for i in range(0, len(ended), DIGEST_BATCH):
                pairs = [[job.id, job.nevents] for job in ended[i : i + DIGEST_BATCH]]
                req.respond({"digest": pairs})
                await req.drained()
            await _send(req, _read(self.manager, active))
        except RPCError as exc:
            log.error("journal backlog: %s", exc)
        req.respond({"sentinel": True})

    async def _held_backlog(self, req: Request, active: list[int]) -> None:
        """``held``, the active jobs' histories, then the sentinel."""
        req.respond({"held": True})
        try:
            await _send(req, _read(self.manager, active))
        except RPCError as exc:
            log.error("journal backlog: %s", exc)
        req.respond({"sentinel": True})


def _holds(held: list[int], ended: list[Ended]) -> bool:
    """Whether ``held`` (a count and a ``held_sum``) is that of the jobs ``ended``."""
    count, checksum = held
    return count == len(ended) and checksum == held_sum(map(_ID_AND_COUNT, ended))


async def _send(req: Request, jobs: Files) -> None:
    """Each job's entries, in responses of about BACKLOG_BATCH entries."""
    batch: list[dict[str, Any]] = []
    async for jobid, files in jobs:
        batch.extend(_entries(jobid, files))
        if len(batch) >= BACKLOG_BATCH:
            req.respond({"events": batch})
            batch = []
            await req.drained()  # a slow subscriber must not make us buffer it all
    if batch:
        req.respond({"events": batch})


def _entries(jobid: int, files: dict[str, str]) -> list[dict[str, Any]]:
    """A job's journal entries, from its eventlog as the job manager replays it."""
    entries = []
    for seq, event in enumerate(events_of(jobid, files.get("eventlog", ""), log.error)):
        entry: dict[str, Any] = {"id": jobid, "seq": seq, "entry": event.to_json()}
        extra = "jobspec" if event.name == "submit" else "R" if event.name == "alloc" else None
        if extra is not None and extra in files:
            entry[extra] = _loads(files[extra])
        entries.append(entry)
    return entries


def _loads(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


async def _read(manager: JournalHost, ids: Iterable[int]) -> Files:
    """(job id, {"eventlog": ..., "jobspec": ..., "R": ...}) for each of ``ids`` that has
    an eventlog, read with one ``kvs.get`` per file, a chunk of jobs at a time."""
    ids = list(ids)
    for i in range(0, len(ids), _READ_CHUNK):
        chunk = ids[i : i + _READ_CHUNK]
        replies = await asyncio.gather(
            *(_get(manager, job_key(jobid, name)) for jobid in chunk for name in _FILES)
        )
        n = len(_FILES)
        for j, jobid in enumerate(chunk):
            files = {
                name: text
                for name, text in zip(_FILES, replies[j * n : j * n + n], strict=True)
                if text is not None
            }
            if "eventlog" in files:
                yield jobid, files


async def _get(manager: JournalHost, key: str) -> str | None:
    """A value from the KVS, None if it is not there."""
    try:
        return value_of(await manager.broker.call("kvs.get", GetRequest(key)))
    except RPCError as exc:
        if exc.errnum != errno.ENOENT:
            log.error("journal: %s: %s", key, exc)
        return None


async def _walk_files(manager: JournalHost) -> Files:
    """(job id, {"eventlog": ..., "jobspec": ..., "R": ...}) for every job, in id order.

    Three ordered walks of the KVS are merged by job id, so memory stays one
    batch deep however many jobs there are.
    """
    streams = [_walk(manager, name) for name in _FILES]
    heads: list[tuple[int, str] | None] = [await anext(s, None) for s in streams]
    while heads[0] is not None:
        jobid, eventlog = heads[0]
        files = {"eventlog": eventlog}
        for i in (1, 2):
            while heads[i] is not None and heads[i][0] < jobid:  # type: ignore[index]
                heads[i] = await anext(streams[i], None)
            head = heads[i]
            if head is not None and head[0] == jobid:
                files[_FILES[i]] = head[1]
        yield jobid, files
        heads[0] = await anext(streams[0], None)


async def _walk(manager: JournalHost, name: str) -> AsyncIterator[tuple[int, str]]:
    async for payload in manager.broker.stream("kvs.walk", WalkRequest("job", suffix=name)):
        for key, value in payload.get("entries", []):
            jobid = job_id_from_key(key, name)
            if jobid is not None:
                yield jobid, value
