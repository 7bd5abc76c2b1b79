"""The events journal: every committed job event, streamed to subscribers such as job-list.

Each entry is ``{id, seq, entry}`` where ``seq`` is the event's index in the
job's eventlog; ``submit`` entries carry the jobspec and ``alloc`` entries R.
A subscriber asking for ``full`` first gets every job's history read back from
the KVS, then ``{sentinel: true}``; live entries may arrive while the history is
read, and ``seq`` tells the subscriber which it already has. Annotations from
the scheduler are not events: they travel as entries named ``annotations``
with ``seq`` -1.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import orjson

from pflux.broker.message import RPCError
from pflux.broker.router import Request
from pflux.errors import EventlogError
from pflux.kvs.keys import job_id_from_key
from pflux.spec.eventlog import parse

if TYPE_CHECKING:
    from pflux.manager.job import Job
    from pflux.manager.service import JobManager

log = logging.getLogger("pflux.job-manager")

BACKLOG_BATCH = 1000
DELAY = 0.002  # seconds committed entries may wait to be sent together (see publish)
BATCH = 4096  # entries that are sent at once without waiting


class Journal:
    """Fans committed events out to the subscribed streams."""

    def __init__(self, manager: JobManager) -> None:
        self.manager = manager
        self.subscribers: dict[Request, None] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._pending: list[dict[str, Any]] = []  # entries waiting to be sent together
        self._timer: asyncio.TimerHandle | None = None
        self._sent = 0.0  # when the last message went (time.monotonic)

    def subscribe(self, req: Request) -> None:
        if not req.streaming:
            raise RPCError(errno.EPROTO, "events-journal must be a streaming request")
        self.subscribers[req] = None
        req.on_disconnect(lambda: self.subscribers.pop(req, None))
        payload = req.payload if isinstance(req.payload, dict) else {}
        if payload.get("full"):
            task = self.manager.broker.loop.create_task(self._backlog(req))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def publish(self, entries: list[dict[str, Any]], *, now: bool = False) -> None:
        """Send committed entries to every subscriber: at once, or with those that follow soon.

        A subscriber is another process (job-list): each message wakes it on the
        other core, which costs the broker more than encoding the message does
        (a fifth of a simulation's broker time). So entries that come within
        ``DELAY`` of the last message wait for the rest of that interval (or
        ``BATCH`` entries) and go together; an entry after a quiet spell goes at
        once, so job-list is never later than ``DELAY``, nor out of order. ``now``
        sends at once whatever waits: the commit answers a client, who may ask
        job-list next and must find it up to date.
        """
        if not entries or not self.subscribers:
            return
        pending = self._pending
        pending.extend(entries)
        if self._timer is not None:
            if now or len(pending) >= BATCH:
                self._send()
            return
        wait = self._sent + DELAY - time.monotonic()
        if wait <= 0 or now:
            self._send()
        else:
            self._timer = self.manager.broker.loop.call_later(wait, self._send)

    def _send(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        entries, self._pending = self._pending, []
        self._sent = time.monotonic()
        if entries:
            payload = {"events": entries}
            for req in list(self.subscribers):
                req.respond(payload)

    def annotations(self, job: Job, annotations: dict[str, Any]) -> None:
        """Publish the scheduler's annotations of a job (not an event: seq -1)."""
        entry = {"timestamp": time.time(), "name": "annotations", "context": annotations}
        self.publish([{"id": job.id, "seq": -1, "entry": entry}])

    async def _backlog(self, req: Request) -> None:
        """Send every job's history from the KVS, then the sentinel."""
        batch: list[dict[str, Any]] = []
        try:
            async for jobid, files in _job_files(self.manager):
                try:
                    events = parse(files.get("eventlog", ""))
                except EventlogError as exc:
                    log.error("journal: job %d: %s", jobid, exc)
                    continue
                for seq, event in enumerate(events):
                    entry: dict[str, Any] = {"id": jobid, "seq": seq, "entry": event.to_json()}
                    extra = {"submit": "jobspec", "alloc": "R"}.get(event.name)
                    if extra and extra in files:
                        entry[extra] = _loads(files[extra])
                    batch.append(entry)
                if len(batch) >= BACKLOG_BATCH:
                    req.respond({"events": batch})
                    batch = []
                    await req.drained()  # a slow subscriber must not make us buffer it all
        except RPCError as exc:
            log.error("journal backlog: %s", exc)
        if batch:
            req.respond({"events": batch})
        req.respond({"sentinel": True})


def _loads(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


async def _job_files(manager: JobManager) -> AsyncIterator[tuple[int, dict[str, str]]]:
    """(job id, {"eventlog": ..., "jobspec": ..., "R": ...}) for every job, in id order.

    Three ordered walks of the KVS are merged by job id, so memory stays one
    batch deep however many jobs there are.
    """
    names = ("eventlog", "jobspec", "R")
    streams = [_walk(manager, name) for name in names]
    heads: list[tuple[int, str] | None] = [await anext(s, None) for s in streams]
    while heads[0] is not None:
        jobid, eventlog = heads[0]
        files = {"eventlog": eventlog}
        for i in (1, 2):
            while heads[i] is not None and heads[i][0] < jobid:  # type: ignore[index]
                heads[i] = await anext(streams[i], None)
            head = heads[i]
            if head is not None and head[0] == jobid:
                files[names[i]] = head[1]
        yield jobid, files
        heads[0] = await anext(streams[0], None)


async def _walk(manager: JobManager, name: str) -> AsyncIterator[tuple[int, str]]:
    async for payload in manager.broker.stream("kvs.walk", {"key": "job", "suffix": name}):
        for key, value in payload.get("entries", []):
            jobid = job_id_from_key(key, name)
            if jobid is not None:
                yield jobid, value
