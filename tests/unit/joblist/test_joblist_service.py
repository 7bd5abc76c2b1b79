"""The job-list service in a broker, fed by a stand-in journal: requests, waiting and errors."""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from joblist_entries import Story

from pflux.broker.router import Broker, Request, Service, method
from pflux.errors import RPCError
from pflux.joblist import JobList
from pflux.joblist.attributes import ATTRS, select, to_json
from pflux.joblist.cache import CACHE_NAME, SummaryCache
from pflux.joblist.index import JobIndex
from pflux.protocol.manager import held_sum
from pflux.spec.states import State
from support.wire import as_sent

ALL = select(["all"])


class Journal(Service):
    """Serves ``job-manager.events-journal`` from entries the test hands it."""

    name = "job-manager"

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker)
        self.subscribers: list[Request] = []
        self.payloads: list[Any] = []
        self.histories: dict[int, list[dict[str, Any]]] = {}  # journal-history's answers
        self.asked: list[list[int]] = []

    @method("events-journal")
    def events_journal(self, req: Request) -> None:
        self.payloads.append(req.payload)
        self.subscribers.append(req)

    @method("journal-history")
    def journal_history(self, req: Request) -> None:
        ids = as_sent(req.payload)["ids"]
        self.asked.append(ids)
        req.respond({"events": [e for i in ids for e in self.histories.get(i, [])]})

    def digest(self, *stories: Story) -> None:
        """The digest of inactive jobs, as the job manager sends it."""
        pairs = [[story.jobid, len(story.entries)] for story in stories]
        for req in self.subscribers:
            req.respond({"digest": pairs})

    def send(self, *entries: dict[str, Any]) -> None:
        for req in self.subscribers:
            req.respond({"events": list(entries)})

    def sentinel(self) -> None:
        for req in self.subscribers:
            req.respond({"sentinel": True})


class KVS(Service):
    """``kvs.get`` that knows only the keys it is given."""

    name = "kvs"

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker)
        self.keys: set[str] = set()

    @method("get")
    def get(self, req: Request) -> None:
        key = as_sent(req.payload)["key"]
        if key not in self.keys:
            raise RPCError(errno.ENOENT, f"{key}: no such key")
        req.respond({"value": ""})


class Live:
    def __init__(self, broker: Broker, journal: Journal, joblist: JobList) -> None:
        self.broker = broker
        self.journal = journal
        self.joblist = joblist

    async def call(self, topic: str, payload: Any = None) -> Any:
        """The reply as a client reads it (a typed one made JSON's types)."""
        return as_sent(await asyncio.wait_for(self.broker.call(topic, payload), 5))

    async def error(self, topic: str, payload: Any) -> RPCError:
        with pytest.raises(RPCError) as info:
            await self.call(topic, payload)
        return info.value

    async def waiting(self, count: int = 1) -> None:
        """Let requests run until ``count`` list-id requests are waiting for their jobs."""
        for _ in range(100):
            if sum(len(w) for w in self.joblist._waiters.values()) >= count:
                return
            await asyncio.sleep(0)
        raise AssertionError("no list-id request is waiting")


def run(
    test: Callable[[Live], Awaitable[None]], *, kvs: KVS | None = None, state: Path | None = None
) -> None:
    async def main() -> None:
        broker = Broker(os.getuid(), attrs={"state-dir": str(state)} if state else None)
        journal = Journal(broker)
        joblist = JobList(broker)
        broker.register(journal)
        if kvs is not None:
            kvs.broker = broker
            broker.register(kvs)
        broker.register(joblist)
        await broker.start()
        for _ in range(10):  # the subscription is delivered on a later loop turn
            if journal.subscribers:
                break
            await asyncio.sleep(0)
        try:
            await test(Live(broker, journal, joblist))
        finally:
            await broker.stop()

    asyncio.run(main())


def test_subscribes_with_full_and_lists_after_the_sentinel() -> None:
    async def test(live: Live) -> None:
        assert live.journal.payloads == [{"full": True}]
        listing = asyncio.ensure_future(live.call("job-list.list", {"attrs": []}))
        live.journal.send(*Story(1).completed().entries, *Story(2).pending().entries)
        await asyncio.sleep(0)
        assert not listing.done()  # held until the backlog is complete
        live.journal.sentinel()
        assert await listing == {"jobs": [{"id": 2}, {"id": 1}]}
        live.journal.send(*Story(3).running().entries)
        reply = await live.call("job-list.list", {"states": int(State.RUNNING)})
        assert [job["id"] for job in reply["jobs"]] == [3]
        assert set(reply["jobs"][0]) == {"id", *ATTRS} - {
            "success", "exception_occurred", "exception_type", "exception_severity",
            "exception_note", "result", "t_cleanup", "t_inactive", "waitstatus",
            "annotations", "dependencies", "queue", "project", "bank",
        }  # fmt: skip

    run(test)


def test_list_filters_and_limits() -> None:
    async def test(live: Live) -> None:
        live.journal.send(
            *Story(1).completed(userid=5).entries,
            *Story(2).completed(status=256, userid=6).entries,
            *Story(3).pending(userid=5).entries,
        )
        live.journal.sentinel()

        async def ids(**payload: Any) -> list[int]:
            reply = await live.call("job-list.list", {"attrs": [], **payload})
            return [job["id"] for job in reply["jobs"]]

        assert await ids() == [3, 2, 1]
        assert await ids(userid=5) == [3, 1]
        assert await ids(userid=4294967295, max_entries=1) == [3]
        assert await ids(results=2) == [2]
        assert await ids(states=int(State.PENDING), results=1) == [3, 1]
        assert await ids(name="true", queue=["none"]) == []
        assert await ids(since=2000.0) == [3]

    run(test)


def test_list_attrs() -> None:
    async def test(live: Live) -> None:
        reply = await live.call("job-list.list-attrs", {})
        assert reply == {"attrs": [*ATTRS, "all"]}

    run(test)


@pytest.mark.parametrize(
    ("topic", "payload", "errnum", "message"),
    [
        ("job-list.list", [], errno.EPROTO, "job-list.list: payload: expected object, got array"),
        (
            "job-list.list",
            {"max_entries": -1},
            errno.EINVAL,
            "job-list.list: max_entries: expected int >= 0",
        ),
        ("job-list.list", {"userid": "me"}, errno.EPROTO, "job-list.list: userid: expected int"),
        (
            "job-list.list",
            {"states": 1 << 9},
            errno.EINVAL,
            "job-list.list: states: expected a mask of the bits 0x7f",
        ),
        (
            "job-list.list",
            {"results": 16},
            errno.EINVAL,
            "job-list.list: results: expected a mask of the bits 0xf",
        ),
        ("job-list.list", {"results": True}, errno.EPROTO, "results: expected int, got bool"),
        ("job-list.list", {"since": -1}, errno.EINVAL, "job-list.list: since: expected float >= 0"),
        ("job-list.list", {"name": 3}, errno.EPROTO, "job-list.list: name: expected str | null"),
        ("job-list.list", {"queue": [1]}, errno.EPROTO, "job-list.list: queue[0]: expected str"),
        ("job-list.list", {"attrs": ["bogus"]}, errno.EINVAL, "bogus is not a valid attribute"),
        ("job-list.list", {"attrs": "all"}, errno.EPROTO, "job-list.list: attrs: expected array"),
        ("job-list.list-id", {}, errno.EPROTO, "job-list.list-id: id: required"),
        ("job-list.list-id", {"id": -1}, errno.EINVAL, "job-list.list-id: id: expected int >= 0"),
        (
            "job-list.list-id",
            {"id": 2**64},
            errno.EINVAL,
            "job-list.list-id: id: expected int <= 18446744073709551615",
        ),
        ("job-list.list-id", {"id": 1, "attrs": [None]}, errno.EPROTO, "attrs[0]: expected str"),
        (
            "job-list.list-id",
            {"id": 1, "state": 1},
            errno.EINVAL,
            "job-list.list-id: state: expected a mask of the",
        ),
    ],
)
def test_bad_requests(topic: str, payload: Any, errnum: int, message: str) -> None:
    async def test(live: Live) -> None:
        live.journal.sentinel()
        error = await live.error(topic, payload)
        assert error.errnum == errnum
        assert message in error.errstr
        assert await live.call("job-list.list", {}) == {"jobs": []}  # still serving

    run(test)


def test_list_id_answers_a_known_job_at_once() -> None:
    async def test(live: Live) -> None:
        live.journal.send(*Story(7).completed().entries)
        live.journal.sentinel()
        reply = await live.call("job-list.list-id", {"id": 7, "attrs": ["state", "result"]})
        assert reply == {"job": {"id": 7, "state": int(State.INACTIVE), "result": 1}}

    run(test)


def test_list_id_waits_for_a_job_on_its_way() -> None:
    async def test(live: Live) -> None:
        live.journal.sentinel()
        story = Story(8).submit()
        lookup = asyncio.ensure_future(live.call("job-list.list-id", {"id": 8, "attrs": []}))
        await live.waiting()
        live.journal.send(*story.entries)
        await asyncio.sleep(0)
        assert not lookup.done()  # NEW: it may yet be refused
        live.journal.send(*story.event("validate").entries[1:])
        assert await lookup == {"job": {"id": 8}}

    run(test)


def test_list_id_waits_for_a_state() -> None:
    async def test(live: Live) -> None:
        story = Story(9).pending()
        live.journal.send(*story.entries)
        live.journal.sentinel()
        payload = {"id": 9, "attrs": ["state"], "state": int(State.RUN)}
        lookup = asyncio.ensure_future(live.call("job-list.list-id", payload))
        await live.waiting()
        live.journal.send(*story.event("alloc").entries[4:])
        assert await lookup == {"job": {"id": 9, "state": int(State.RUN)}}
        # a job that ends without reaching the state is answered as it is
        canceled = Story(10).pending().exception("cancel").event("clean")
        live.journal.send(*canceled.entries)
        reply = await live.call("job-list.list-id", {**payload, "id": 10})
        assert reply == {"job": {"id": 10, "state": int(State.INACTIVE)}}

    run(test)


def test_list_id_gives_up_on_a_job_that_never_comes() -> None:
    async def test(live: Live) -> None:
        live.joblist.wait_timeout = 0.01
        live.journal.sentinel()
        error = await live.error("job-list.list-id", {"id": 1})
        assert (error.errnum, error.errstr) == (errno.ENOENT, "job ƒ2 not found")
        assert live.joblist._waiters == {}

    run(test)


def test_list_id_asks_the_kvs_whether_the_job_exists() -> None:
    async def test(live: Live) -> None:
        live.journal.sentinel()
        error = await live.error("job-list.list-id", {"id": 1})  # the default 5 s wait is cut
        assert (error.errnum, error.errstr) == (errno.ENOENT, "job ƒ2 not found")
        kvs.keys.add("job.0000.0000.0000.0002.eventlog")
        lookup = asyncio.ensure_future(live.call("job-list.list-id", {"id": 2, "attrs": []}))
        await live.waiting()
        await asyncio.sleep(0)
        assert not lookup.done()
        live.journal.send(*Story(2).pending().entries)
        assert await lookup == {"job": {"id": 2}}

    kvs = KVS(None)  # type: ignore[arg-type]
    run(test, kvs=kvs)


def test_list_id_of_a_refused_job_fails_at_once() -> None:
    async def test(live: Live) -> None:
        story = Story(11).submit()
        live.journal.send(*story.entries)
        live.journal.sentinel()
        lookup = asyncio.ensure_future(live.call("job-list.list-id", {"id": 11}))
        await live.waiting()
        live.journal.send(*story.event("invalidate").entries[1:])
        with pytest.raises(RPCError, match="not found"):
            await lookup

    run(test)


def test_without_a_journal_it_serves_what_it_has(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        broker = Broker(os.getuid())
        broker.register(JobList(broker))
        await broker.start()
        reply = as_sent(await asyncio.wait_for(broker.call("job-list.list", {}), 5))
        assert reply == {"jobs": []}
        await broker.stop()

    asyncio.run(main())
    assert "events journal" in caplog.text


def test_a_broken_journal_response_is_survived(caplog: pytest.LogCaptureFixture) -> None:
    async def test(live: Live) -> None:
        for req in live.journal.subscribers:
            req.respond(["not", "an", "object"])
            req.respond({"events": [{"id": 1, "seq": 0, "entry": "nonsense"}]})
        live.journal.send(*Story(2).completed().entries)
        live.journal.sentinel()
        reply = await live.call("job-list.list", {"attrs": []})
        assert reply == {"jobs": [{"id": 2}]}

    run(test)
    assert "not an object" in caplog.text


def cache_of(state: Path, *stories: Story) -> None:
    """A cache file in ``state`` holding these jobs, as job-list would have written it."""
    index = JobIndex()
    for story in stories:
        index.feed(story.entries)
    cache = SummaryCache(state / CACHE_NAME)
    cache.load()
    cache.add(list(index.jobs.values()))
    cache.close()


def test_cached_jobs_are_confirmed_by_the_digest(tmp_path: Path) -> None:
    done, failed, gone = Story(1).completed(), Story(2).completed(status=256), Story(3).completed()
    # the cache's job 4 is not the eventlog's (its event count differs): asked for again
    other = Story(4).pending().exception("cancel").event("clean")
    cache_of(tmp_path, done, failed, gone, other)
    truth = Story(4, t0=2000.0).completed()
    missing = Story(5, t0=3000.0).pending().exception("cancel", note="x").event("clean")
    held = Story(6, t0=4000.0).pending()
    replayed = JobIndex()  # what a job-list without a cache lists
    for story in (done, failed, truth, missing, held):
        replayed.feed(story.entries)
    replayed.settle()

    async def test(live: Live) -> None:
        assert live.journal.payloads == [
            {"full": True, "digest": True, "held": held_of(done, failed, gone, other)}
        ]
        live.journal.histories = {4: truth.entries, 5: missing.entries}
        listing = asyncio.ensure_future(live.call("job-list.list", {}))
        live.journal.digest(done, failed, truth, missing)
        live.journal.send(*held.entries)
        live.journal.sentinel()
        assert await listing == {"jobs": replayed.list(select(["all"]))}
        assert live.journal.asked == [[4, 5]]

    run(test, state=tmp_path)
    # the jobs built from their histories were written, the one no digest named removed
    cached = SummaryCache(tmp_path / CACHE_NAME).load()
    assert sorted(cached) == [1, 2, 4, 5]
    assert to_json(cached[4], ALL) == to_json(replayed.jobs[4], ALL)


def held_of(*stories: Story) -> tuple[int, int]:
    """The ``held`` job-list sends for a cache of these jobs."""
    return len(stories), held_sum((story.jobid, len(story.entries)) for story in stories)


def test_a_journal_that_holds_the_same_jobs_sends_no_digest(tmp_path: Path) -> None:
    done, failed = Story(1).completed(), Story(2, t0=2000.0).completed(status=256)
    gone = Story(3, t0=3000.0).completed()  # purged while the instance starts
    cache_of(tmp_path, done, failed, gone)
    held = Story(4, t0=4000.0).pending()
    replayed = JobIndex()
    for story in (done, failed, held):
        replayed.feed(story.entries)
    replayed.settle()

    async def test(live: Live) -> None:
        assert live.journal.payloads == [
            {"full": True, "digest": True, "held": held_of(done, failed, gone)}
        ]
        listing = asyncio.ensure_future(live.call("job-list.list", {}))
        stats = asyncio.ensure_future(live.call("job-list.job-stats", {}))
        for req in live.journal.subscribers:
            req.respond({"held": True})
        purge = {"id": 3, "seq": -1, "entry": {"timestamp": 5000.0, "name": "purge", "context": {}}}
        live.journal.send(*held.entries, purge)
        live.journal.sentinel()
        assert await listing == {"jobs": replayed.list(select(["all"]))}
        counts = await stats
        assert counts["job_states"]["inactive"] == 2
        assert (counts["successful"], counts["failed"], counts["inactive_purged"]) == (1, 1, 1)
        assert live.journal.asked == []

    run(test, state=tmp_path)
    assert sorted(SummaryCache(tmp_path / CACHE_NAME).load()) == [1, 2]


def test_listing_waits_for_the_histories_asked_for(tmp_path: Path) -> None:
    cache_of(tmp_path, Story(1).completed())
    missing = Story(2).completed()

    async def test(live: Live) -> None:
        live.journal.histories = {2: missing.entries}
        gate = asyncio.Event()
        answer = live.journal.journal_history

        async def later(req: Request) -> None:
            await gate.wait()
            answer(req)

        live.broker.add_method("job-manager.journal-history", later)
        listing = asyncio.ensure_future(live.call("job-list.list", {"attrs": []}))
        live.journal.digest(Story(1).completed(), missing)
        live.journal.sentinel()
        for _ in range(5):
            await asyncio.sleep(0)
        assert not listing.done()
        gate.set()
        assert await listing == {"jobs": [{"id": 2}, {"id": 1}]}

    run(test, state=tmp_path)


def test_without_a_cache_the_full_backlog_fills_one(tmp_path: Path) -> None:
    async def test(live: Live) -> None:
        assert live.journal.payloads == [{"full": True}]
        live.journal.send(*Story(1).completed().entries, *Story(2).pending().entries)
        live.journal.sentinel()
        assert len((await live.call("job-list.list", {}))["jobs"]) == 2

    run(test, state=tmp_path)
    assert sorted(SummaryCache(tmp_path / CACHE_NAME).load()) == [1]
