"""The job-list service: answers `pflux jobs` from an index fed only by the events journal.

At start it subscribes to ``job-manager.events-journal`` with ``full``, so it
gets every job's history and then each event as it is committed; it never
reads job data from the KVS. Inactive jobs it has in its cache (``cache.py``,
loaded by ``prepare``, which a module process runs while the broker is still
replaying: the snapshot's columns after a clean stop, ``snapshot.py``, else the
cache's rows) it asks for as a digest instead (none if the journal finds it holds
them all, ``held``), and it fetches the history of those its cache lacks with
``job-manager.journal-history``. Requests that
arrive before the history is in wait for it, as flux-core's job-list defers
them. ``list-id`` for a job it has not seen yet (a client that has just been
given the id by submit may ask first) waits briefly for it; a quick look for
the job's eventlog in the KVS tells an id that will never come from one still
on its way. The journal comes in batches a few milliseconds late, so ``list``
and ``list-id`` first ask ``job-manager.journal-sync`` (answered once all that
was committed before is sent), and so does stopping, for the cache.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
from collections import deque
from pathlib import Path
from typing import Any, Final

from pflux.broker.router import Broker, Request, Service, method
from pflux.broker.timedbatch import TimedBatch
from pflux.errors import RPCError
from pflux.joblist import snapshot
from pflux.joblist.attributes import ATTRS, select, to_json
from pflux.joblist.cache import CACHE_NAME, SummaryCache
from pflux.joblist.index import JobIndex
from pflux.joblist.snapshot import SNAPSHOT_NAME, Frozen
from pflux.joblist.summary import JobSummary
from pflux.protocol.decode import decode
from pflux.protocol.joblist import ListIdReply, ListIdRequest, ListReply, ListRequest, check_mask
from pflux.protocol.kvs import GetRequest
from pflux.protocol.manager import Empty, JournalHistoryRequest
from pflux.protocol.message import Message
from pflux.spec.fluid import JobID
from pflux.spec.resultcodes import RESULT_CANCELED, RESULT_COMPLETED, RESULT_FAILED, RESULT_TIMEOUT
from pflux.spec.states import State

log = logging.getLogger("pflux.job-list")

LIST_ID_WAIT: Final = 5.0  # seconds list-id waits for a job it has not seen
STOP_SYNC_WAIT: Final = 2.0  # seconds stopping waits for the journal's last entries
CACHE_DELAY: Final = 1.0  # seconds jobs become inactive wait to be written, in one batch
CACHE_BATCH: Final = 5000  # ... or fewer, when this many are waiting
HISTORY_BATCH: Final = 1000  # jobs per journal-history request (the job manager's most)
HISTORY_WINDOW: Final = 2  # journal-history requests in flight
_STATE_MASK: Final = int(State.NEW | State.ACTIVE | State.INACTIVE)
_WAITABLE: Final = int(State.ACTIVE | State.INACTIVE)  # states list-id may wait for
_RESULT_MASK: Final = RESULT_COMPLETED | RESULT_FAILED | RESULT_CANCELED | RESULT_TIMEOUT


class _Waiter:
    """A list-id request waiting for its job to arrive (or leave NEW, or reach a state)."""

    __slots__ = ("future", "seen", "state")

    def __init__(self, future: asyncio.Future[JobSummary], state: int) -> None:
        self.future = future
        self.state = state
        self.seen = False


class JobList(Service):
    """Lists jobs in flux-core's order, with flux-core's attributes."""

    name = "job-list"

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker)
        self.index = JobIndex()
        self.wait_timeout = LIST_ID_WAIT
        self.cache: SummaryCache | None = None
        self._snapshot = Path(SNAPSHOT_NAME)  # in the state directory, set by prepare
        self._prepared = False
        self._ready = asyncio.Event()
        self._waiters: dict[int, list[_Waiter]] = {}
        self._sentinel = False
        self._wanted: deque[int] = deque()  # inactive jobs whose history is to be asked for
        self._fetching = 0
        self._writes = TimedBatch(broker, self._write, delay=CACHE_DELAY, limit=CACHE_BATCH)

    async def prepare(self) -> None:
        """Load the cache of inactive jobs from the state directory (needs no other service).

        A module process calls this before it connects, while the broker replays.
        """
        if self._prepared:
            return
        self._prepared = True
        state_dir = self.broker.attrs.get("state-dir")
        if not state_dir:
            return
        self.cache = SummaryCache(Path(state_dir) / CACHE_NAME)
        self._snapshot = Path(state_dir) / SNAPSHOT_NAME
        self.index.ended = []
        frozen = self._thaw(self.cache)
        if frozen is not None:
            self.index.preload_frozen(frozen)
            log.info("job-list: %d inactive jobs from the snapshot", len(frozen))
            return
        cached = self.cache.load()
        self.index.preload(cached)
        log.info("job-list: %d inactive jobs from the cache", len(cached))

    def _thaw(self, cache: SummaryCache) -> Frozen | None:
        """The snapshot's jobs, if it is current with the cache (else None: the cache's rows
        are read)."""
        columns = snapshot.read(self._snapshot)
        if columns is None:
            return None
        if not cache.open_as_stamped(columns.stamp):
            log.info("job-list: %s is not current; reading the cache", self._snapshot)
            return None
        try:
            return Frozen(columns, cache.fetch)
        except snapshot.ColumnsError as exc:
            log.warning("job-list: %s: ignored: %s", self._snapshot, exc)
            return None

    async def start(self) -> None:
        await self.prepare()
        request: dict[str, Any] = {"full": True}
        if self.index.preloaded:
            request["digest"] = True
            request["held"] = self.index.cached_sum()
        self.broker.send("job-manager.events-journal", request, self._journal, streaming=True)

    async def stop(self) -> None:
        if self._ready.is_set():  # the last entries, for the cache
            with contextlib.suppress(RPCError, TimeoutError):
                await asyncio.wait_for(self._sync(), STOP_SYNC_WAIT)
        for waiters in self._waiters.values():
            for waiter in waiters:
                if not waiter.future.done():
                    waiter.future.cancel()
        self._waiters.clear()
        if self.cache is not None:
            self._to_cache()
            self.cache.close(self._write_snapshot if self.index.ready else None)
        self._writes.cancel()

    def _write_snapshot(self, stamp: bytes) -> None:
        """Write the inactive jobs for the next start, with the cache's stamp (unless the
        snapshot read at start is still all of them, with the same stamp)."""
        index = self.index
        base, rows = index.inactive_rows()
        if base is not None and base.stamp == stamp and not index.inactive.items:
            return
        snapshot.write(self._snapshot, snapshot.encode(stamp, rows, base))

    # --- the journal ------------------------------------------------------------------

    def _journal(self, msg: Message) -> None:
        if msg.errnum:
            if msg.errnum in (errno.ENODATA, errno.ECONNRESET):  # the instance is stopping
                log.info("job-list: the events journal ended")
            else:
                log.error("job-list: events journal: %s", msg.errstr)
            self._settle()  # serve what arrived rather than hold requests forever
            return
        payload = msg.payload
        if not isinstance(payload, dict):
            log.warning("job-list: ignoring a journal response that is not an object")
            return
        if payload.get("held") is True:
            self.index.take_cached()
            log.info("job-list: the journal's inactive jobs are those of the cache")
        if "digest" in payload:
            wanted = self.index.digest(payload["digest"])
            if wanted:
                log.info("job-list: asking for %d inactive jobs the cache lacks", len(wanted))
                self._wanted.extend(wanted)
                self._fetch()
        self._feed(payload.get("events"))
        if payload.get("sentinel"):
            self._sentinel = True
            self._settle_when_fetched()

    def _feed(self, events: Any) -> None:
        if isinstance(events, list):
            try:
                self.index.feed(events)
            except Exception:  # a bug must not stop the feed
                log.exception("job-list: applying journal entries failed")
            if self._waiters:
                self._check_waiters()
            if self.index.ended or self.index.purged:
                self._to_cache()

    def _fetch(self) -> None:
        """Ask for the histories of cached jobs that need them, a few requests at a time."""
        wanted = self._wanted
        while wanted and self._fetching < HISTORY_WINDOW:
            ids = [wanted.popleft() for _ in range(min(HISTORY_BATCH, len(wanted)))]
            self._fetching += 1
            request = JournalHistoryRequest(ids)
            self.broker.send("job-manager.journal-history", request, self._history)

    def _history(self, msg: Message) -> None:
        self._fetching -= 1
        if msg.errnum:
            log.error("job-list: journal-history: %s", msg.errstr)
        elif isinstance(msg.payload, dict):
            self._feed(msg.payload.get("events"))
        self._fetch()
        self._settle_when_fetched()

    def _settle_when_fetched(self) -> None:
        """Settle once the sentinel is in and every history asked for has come."""
        if self._sentinel and not self._wanted and not self._fetching:
            self._settle()

    def _settle(self) -> None:
        if not self.index.ready:
            self.index.settle()
            log.info("job-list: %d jobs from the journal", len(self.index))
            if self.cache is not None and self.index.dropped:
                self.cache.discard(self.index.dropped)
            self.index.dropped = []
            self._ready.set()
            if self._waiters:
                self._check_waiters()

    # --- the cache ----------------------------------------------------------------------

    def _to_cache(self) -> None:
        """Pass jobs that have become inactive, and purged jobs, to the cache; write them in
        a while."""
        ended, purged = self.index.ended, self.index.purged
        if self.cache is None:
            purged.clear()
            return
        if not ended and not purged:
            return
        if ended:
            self.cache.add(ended)
            ended.clear()
        if purged:
            self.cache.purge(purged)
            purged.clear()
        self._writes.grew(len(self.cache))

    def _write(self) -> None:
        if self.cache is not None:
            self.cache.flush()

    async def _current(self) -> None:
        """Wait for the history, then for every event committed before this request.

        The job manager sends the journal in batches, a few milliseconds late;
        ``journal-sync`` sends what waits and is answered after it, so a client
        that was told of a commit (its job's id, its end) finds it listed.
        """
        if not self._ready.is_set():
            await self._ready.wait()
        try:
            await self._sync()
        except RPCError as exc:  # the instance is stopping: answer with what is here
            log.debug("job-list: journal-sync: %s", exc.errstr)

    async def _sync(self) -> None:
        await self.broker.call("job-manager.journal-sync", Empty())

    # --- list -------------------------------------------------------------------------

    @method("list", guest=True)
    async def list_jobs(self, req: Request) -> None:
        request = decode(req.topic, _payload(req), ListRequest)
        selection = select(request.attrs)
        check_mask(req.topic, "states", request.states, _STATE_MASK)
        check_mask(req.topic, "results", request.results, _RESULT_MASK)
        queue = request.queue
        await self._current()
        jobs = self.index.list(
            selection,
            max_entries=request.max_entries,
            userid=request.userid,
            states=request.states,
            results=request.results,
            since=request.since,
            name=request.name,
            queues=None
            if queue is None
            else frozenset([queue] if isinstance(queue, str) else queue),
        )
        req.respond(ListReply(jobs))

    @method("list-attrs", guest=True)
    def list_attrs(self, req: Request) -> None:
        req.respond({"attrs": [*ATTRS, "all"]})

    @method("job-stats", guest=True)
    async def stats(self, req: Request) -> None:
        if _payload(req) != {}:
            raise RPCError(errno.EPROTO, f"{req.topic}: takes no fields, got {req.payload!r:.100}")
        if req.streaming:  # flux-core's answers again as the counts change: not built
            raise RPCError(errno.EPROTO, f"{req.topic}: streaming is not supported")
        await self._current()
        req.respond(self.index.job_counts.answer())

    # --- list-id ----------------------------------------------------------------------

    @method("list-id", guest=True)
    async def list_id(self, req: Request) -> None:
        request = decode(req.topic, _payload(req), ListIdRequest)
        jobid = request.id
        selection = select(request.attrs)
        state = request.state
        check_mask(req.topic, "state", state, _WAITABLE)
        await self._current()
        summary = self.index.get(jobid)
        if summary is None or not _arrived(summary, state):
            summary = await self._wait_for(jobid, state, known=summary is not None)
        req.respond(ListIdReply(to_json(summary, selection)))

    async def _wait_for(self, jobid: int, state: int, *, known: bool) -> JobSummary:
        waiter = _Waiter(self.broker.loop.create_future(), state)
        waiter.seen = known
        self._waiters.setdefault(jobid, []).append(waiter)
        if not known:
            self._probe(jobid, waiter)
        try:
            return await asyncio.wait_for(waiter.future, self.wait_timeout)
        except TimeoutError:
            raise _not_found(jobid) from None
        finally:
            waiters = self._waiters.get(jobid)
            if waiters is not None and waiter in waiters:
                waiters.remove(waiter)
                if not waiters:
                    del self._waiters[jobid]

    def _probe(self, jobid: int, waiter: _Waiter) -> None:
        """Ask the KVS whether the job exists at all; if not, stop waiting for it."""
        from pflux.spec.kvs_keys import job_key

        def answered(msg: Message) -> None:
            gone = msg.errnum == errno.ENOENT and self.index.get(jobid) is None
            if gone and not waiter.seen and not waiter.future.done():
                waiter.future.set_exception(_not_found(jobid))

        self.broker.send("kvs.get", GetRequest(job_key(jobid, "eventlog")), answered)

    def _check_waiters(self) -> None:
        for jobid, waiters in list(self._waiters.items()):
            summary = self.index.get(jobid)
            for waiter in waiters:
                if waiter.future.done():
                    continue
                if summary is None:
                    if waiter.seen:  # it was there and is gone: refused at submission
                        waiter.future.set_exception(_not_found(jobid))
                    continue
                waiter.seen = True
                if _arrived(summary, waiter.state):
                    waiter.future.set_result(summary)


def _arrived(summary: JobSummary, state: int) -> bool:
    """Whether list-id may answer: past NEW, and in or past ``state`` if one was asked for."""
    if summary.state is State.INACTIVE:
        return True  # it will never reach any other state
    if summary.state is State.NEW:
        return False
    return not state or bool(summary.states & state)


def _not_found(jobid: int) -> RPCError:
    return RPCError(errno.ENOENT, f"job {JobID(jobid)} not found")


def _payload(req: Request) -> Any:
    """The payload; none is an empty request (every field has a default)."""
    return {} if req.payload is None else req.payload
