"""The kvs service through a live broker: commits, batching, reads, watches, namespaces, errors."""

from __future__ import annotations

import asyncio
import errno
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from pflux.broker.config import ConfigError
from pflux.broker.router import Broker, Request, Service, method
from pflux.errors import RPCError
from pflux.kvs import service as kvs_service
from pflux.kvs.database import StoreError
from pflux.kvs.service import CHECKPOINT_COMMITS, WALK_BATCH, KVSService
from pflux.protocol.kvs import GetReply, GetRequest
from pflux.protocol.message import Message

Run = Callable[..., Any]
ENODATA = (errno.ENODATA, None)


def kvs(broker: Broker) -> KVSService:
    service = broker.services["kvs"]
    assert isinstance(service, KVSService)
    return service


def count_transactions(broker: Broker, events: list[str]) -> None:
    """Record each transaction's commit in ``events``, next to the responses the test records."""
    store = kvs(broker).store
    inner = store.transaction
    depth = [0]  # the store's own calls open transactions within the turn's

    @contextmanager
    def counted() -> Iterator[None]:
        depth[0] += 1
        try:
            with inner():
                yield
        finally:
            depth[0] -= 1
        if depth[0] == 0:
            events.append("transaction")

    store.transaction = counted  # type: ignore[method-assign]


async def error_of(client: Any, topic: str, payload: Any) -> tuple[int, str]:
    with pytest.raises(RPCError) as info:
        await client.call(topic, payload)
    return info.value.errnum, info.value.errstr


# --- commits -----------------------------------------------------------------------------------


def test_commit_then_read(run_kvs: Run) -> None:
    async def scenario(broker: Broker, client: Any) -> None:
        ops = [
            ["put", "a.b", "1"],
            ["append", "log", "x\n"],
            ["append", "log", "y\n"],
            ["put", "gone", "z"],
            ["unlink", "gone", None],
        ]
        assert await client.call("kvs.commit", {"ops": ops}) == {}
        assert await client.call("kvs.get", {"key": "log"}) == {"value": "x\ny\n"}
        assert await client.call("kvs.ls", {"key": "."}) == {"entries": {"a": "dir", "log": "val"}}
        assert await client.call("kvs.ls", {}) == {"entries": {"a": "dir", "log": "val"}}
        assert await error_of(client, "kvs.get", {"key": "gone"}) == (
            errno.ENOENT,
            'key "gone": not found',
        )
        assert (await error_of(client, "kvs.get", {"key": "a"}))[0] == errno.EISDIR
        assert (await error_of(client, "kvs.ls", {"key": "log"}))[0] == errno.ENOTDIR
        assert await client.call("kvs.commit", {"ops": []}) == {}

    run_kvs(scenario)


def test_a_service_in_the_process_gets_a_typed_value_and_a_client_its_object(
    run_kvs: Run,
) -> None:
    async def scenario(broker: Broker, client: Any) -> None:
        await client.call("kvs.commit", {"ops": [["put", "k", "v"], ["append", "o", "x"]]})
        assert await broker.call("kvs.get", GetRequest("k")) == GetReply("v")
        [piece] = [p async for p in broker.stream("kvs.get", GetRequest("o"))]
        assert piece == GetReply("x")
        assert await client.call("kvs.get", {"key": "k"}) == {"value": "v"}

    run_kvs(scenario)


def test_commits_in_one_turn_share_one_transaction_and_wait_for_it(run_kvs: Run) -> None:
    async def scenario(broker: Broker, client: Any) -> None:
        events: list[str] = []
        count_transactions(broker, events)
        original = client.deliver

        def deliver(msg: Message) -> None:
            events.append(f"response {msg.matchtag}")
            original(msg)

        client.deliver = deliver
        tags = [
            client.send("kvs.commit", {"ops": [["append", f"job.{i}.eventlog", "e\n"]]})
            for i in range(50)
        ]
        await client.wait(tags[-1])
        assert events == ["transaction"] + [f"response {t}" for t in tags]
        assert all(client.responses[t][0].payload == {} for t in tags)
        # a later turn is a later transaction
        await client.call("kvs.commit", {"ops": [["put", "x", "1"]]})
        assert events.count("transaction") == 2

    run_kvs(scenario)


def test_a_commit_sent_at_the_end_of_the_turn_joins_the_transaction(run_kvs: Run) -> None:
    """Services send commits and answers from the end of a turn (job-exec's complete, then
    the job manager's finish): the flush waits one turn for what that brings, not longer."""

    async def scenario(broker: Broker, client: Any) -> None:
        events: list[str] = []
        count_transactions(broker, events)
        turns = iter(range(3))

        def chain() -> None:  # another service: a commit from the end of each of 3 turns
            n = next(turns, None)
            if n is not None:
                ops = [["put", f"chain.{n}", "x"]]
                broker.send("kvs.commit", {"ops": ops}, lambda msg: events.append(f"chain {n}"))
                broker.queue.at_next_end(chain)

        first = client.send("kvs.commit", {"ops": [["put", "a", "1"]]})
        broker.at_turn_end(chain)
        await client.wait(first)
        await broker.call("kvs.get", {"key": "chain.2"})
        assert events == [
            "transaction",  # a, and chain 0 from the end of a's turn
            "chain 0",
            "transaction",  # chain 1, which came too late for that one, and chain 2
            "chain 1",
            "chain 2",
        ]
        # a request to another service sent from the end of a turn holds nothing back
        events.clear()
        handled: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        class Elsewhere(Service):
            name = "elsewhere"

            @method("x")
            def x(self, req: Request) -> None:
                events.append("elsewhere")
                req.respond({})
                handled.set_result(None)

        broker.register(Elsewhere(broker))
        tag = client.send("kvs.commit", {"ops": [["put", "b", "1"]]})
        broker.at_turn_end(lambda: broker.send("elsewhere.x", {}))
        await client.wait(tag)
        await handled
        assert events == ["transaction", "elsewhere"]

    run_kvs(scenario)


def test_one_bad_commit_fails_alone_and_atomically(run_kvs: Run) -> None:
    async def scenario(broker: Broker, client: Any) -> None:
        await client.call("kvs.commit", {"ops": [["put", "d.x", "1"]]})
        events: list[str] = []
        count_transactions(broker, events)
        good1 = client.send("kvs.commit", {"ops": [["put", "a", "1"]]})
        bad = client.send("kvs.commit", {"ops": [["put", "b", "2"], ["append", "d", "x"]]})
        good2 = client.send("kvs.commit", {"ops": [["put", "c", "3"]]})
        await client.wait(good2)
        assert events == ["transaction"]
        assert client.responses[good1][0].payload == {}
        assert client.responses[good2][0].payload == {}
        (msg,) = client.responses[bad]
        assert msg.errnum == errno.EISDIR
        assert msg.errstr == 'kvs.commit: ops[1]: key "d": cannot append to a directory'
        listing = await client.call("kvs.ls", {"key": "."})
        assert listing == {"entries": {"a": "val", "c": "val", "d": "dir"}}

    run_kvs(scenario)


@pytest.mark.parametrize(
    ("topic", "payload", "errnum", "errstr"),
    [
        (
            "kvs.commit",
            ["put", "a", "b"],
            errno.EPROTO,
            "kvs.commit: payload: expected object, got array",
        ),
        ("kvs.commit", {}, errno.EPROTO, "kvs.commit: ops: required"),
        ("kvs.commit", {"ops": {}}, errno.EPROTO, "kvs.commit: ops: expected array"),
        (
            "kvs.commit",
            {"ops": [["put", "a", "1"], ["put", "b", "2"], ["frob", "c", "3"]]},
            errno.EINVAL,
            'kvs.commit: ops[2]: unknown op "frob" (expected put, append, unlink or mkdir)',
        ),
        (
            "kvs.commit",
            {"ops": [["put", "a..b", "1"]]},
            errno.EINVAL,
            'kvs.commit: ops[0]: key "a..b": empty path component',
        ),
        (
            "kvs.commit",
            {"ops": [["put", "a", {"x": 1}]]},
            errno.EINVAL,
            "kvs.commit: ops[0]: the value of put must be a string, got object",
        ),
        (
            "kvs.commit",
            {"ops": [["put", "a", "1"]], "namespace": 5},
            errno.EPROTO,
            "kvs.commit: namespace: expected str | null, got int",
        ),
        (
            "kvs.commit",
            {"ops": [["put", "a", "1"]], "namespace": "nope"},
            errno.ENOTSUP,
            'kvs.commit: namespace "nope": does not exist',
        ),
        ("kvs.get", {}, errno.EPROTO, "kvs.get: key: required"),
        ("kvs.get", {"key": None}, errno.EPROTO, "kvs.get: key: expected str, got null"),
        ("kvs.walk", {"suffix": 1}, errno.EPROTO, "kvs.walk: suffix: expected str | null"),
        ("kvs.get", {"key": "a b"}, errno.EINVAL, 'key "a b": path component "a b" contains'),
        ("kvs.ls", {"key": ""}, errno.EINVAL, 'key "": empty'),
        ("kvs.watch", {"key": "a"}, errno.EPROTO, "kvs.watch: must be a streaming request"),
        ("kvs.walk", {"key": "a"}, errno.EPROTO, "kvs.walk: must be a streaming request"),
        ("kvs.watch-cancel", {}, errno.EPROTO, "kvs.watch-cancel: matchtag: required"),
        (
            "kvs.namespace-remove",
            {"name": 3},
            errno.EPROTO,
            "kvs.namespace-remove: name: expected str, got int",
        ),
        (
            "kvs.namespace-create",
            {"name": "n", "owner": 1, "prefix": "a..b"},
            errno.EINVAL,
            'kvs.namespace-create: key "a..b": empty path component',
        ),
        *(
            (
                "kvs.namespace-create",
                {"name": "n", "owner": owner, "prefix": "p"},
                errnum,
                f"kvs.namespace-create: owner: expected int{rule}",
            )
            for owner, errnum, rule in (
                (2**64 - 1, errno.EINVAL, " <= 4294967295"),
                (2**32, errno.EINVAL, " <= 4294967295"),
                (-1, errno.EINVAL, " >= 0"),
                (True, errno.EPROTO, ", got bool"),
            )
        ),
        ("kvs.frob", {}, errno.ENOSYS, "no service provides 'kvs.frob'"),
    ],
)
def test_bad_input_is_answered_with_a_clear_error(
    run_kvs: Run, topic: str, payload: Any, errnum: int, errstr: str
) -> None:
    async def scenario(broker: Broker, client: Any) -> None:
        got = await error_of(client, topic, payload)
        assert got[0] == errnum
        assert got[1].startswith(errstr)
        # and the service carries on
        assert await client.call("kvs.commit", {"ops": [["put", "ok", "1"]]}) == {}

    run_kvs(scenario)


def test_a_failed_transaction_is_fatal_and_never_acknowledged(run_kvs: Run) -> None:
    async def scenario(broker: Broker, client: Any) -> None:
        reasons: list[str] = []
        broker.on_fatal = reasons.append
        store = kvs(broker).store

        @contextmanager
        def failing() -> Iterator[None]:
            yield
            raise StoreError("kvs.sqlite: transaction failed: disk I/O error")

        store.transaction = failing  # type: ignore[method-assign]
        tags = [client.send("kvs.commit", {"ops": [["put", f"k{i}", "v"]]}) for i in range(3)]
        for tag in tags:
            (msg,) = await client.wait(tag)
            assert msg.errnum == errno.EIO
            assert "not stored: kvs.sqlite: transaction failed: disk I/O error" in msg.errstr
        assert reasons == ["kvs: kvs.sqlite: transaction failed: disk I/O error"]
        errnum, errstr = await error_of(client, "kvs.get", {"key": "k0"})
        assert errnum == errno.EIO
        assert errstr.startswith("kvs: unavailable after a failed commit")

    run_kvs(scenario)


def test_a_bug_while_applying_is_a_failed_transaction_not_a_hang(run_kvs: Run) -> None:
    async def scenario(broker: Broker, client: Any) -> None:
        reasons: list[str] = []
        broker.on_fatal = reasons.append
        store = kvs(broker).store

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise NameError("a bug")

        store.apply = broken  # type: ignore[method-assign]
        tag = client.send("kvs.commit", {"ops": [["put", "k", "v"]]})
        (msg,) = await client.wait(tag)
        assert msg.errnum == errno.EIO
        assert "internal error: NameError('a bug')" in msg.errstr
        assert reasons == ["kvs: internal error: NameError('a bug')"]

    run_kvs(scenario)


def test_config_sync_full_and_bad_config(run_kvs: Run) -> None:
    async def scenario(broker: Broker, client: Any) -> None:
        conn = kvs(broker).store._conn
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2

    run_kvs(scenario, config={"kvs": {"sync": "full"}})
    with pytest.raises(ConfigError, match=r"\[kvs\] sync: must be one of off, normal, full"):
        run_kvs(scenario, config={"kvs": {"sync": "sometimes"}})
    with pytest.raises(ConfigError, match=r"\[kvs\] journal_mode: must be one of wal, memory"):
        run_kvs(scenario, config={"kvs": {"journal_mode": 1}})


def _modes(broker: Broker) -> tuple[str, int]:
    conn = kvs(broker).store._conn
    return conn.execute("PRAGMA journal_mode").fetchone()[0], conn.execute(
        "PRAGMA synchronous"
    ).fetchone()[0]


def test_a_temporary_state_dir_gets_the_fast_journal(run_kvs: Run) -> None:
    async def modes(broker: Broker, client: Any) -> tuple[str, int]:
        await client.call("kvs.commit", {"ops": [["put", "k", "v"]]})
        assert await client.call("kvs.get", {"key": "k"}) == {"value": "v"}
        return _modes(broker)

    assert run_kvs(modes) == ("wal", 1)  # kept: crash-safe, synchronous=NORMAL
    assert run_kvs(modes, temporary=True) == ("memory", 0)  # removed at exit: OFF
    assert run_kvs(modes, temporary=True, config={"kvs": {"journal_mode": "WAL"}}) == ("wal", 1)
    assert run_kvs(modes, config={"kvs": {"journal_mode": "memory"}}) == ("memory", 0)


def test_a_store_commits_many_commits_at_once_a_while_later(run_kvs: Run) -> None:
    async def scenario(broker: Broker, client: Any) -> list[tuple[bool, int]]:
        service = kvs(broker)
        conn = service.store._conn
        redo = Path(f"{service.store.path}-redo")

        def logged() -> int:
            return redo.stat().st_size if redo.exists() else 0

        seen = []
        for key in ("a", "b"):
            await client.call("kvs.commit", {"ops": [["put", key, "v"]]})
            seen.append((conn.in_transaction, logged()))  # answered, and held open for more
        timer = service._held
        assert timer is not None
        assert 0 < timer.when() - broker.loop.time() <= kvs_service.HOLD_SECONDS
        service._release()  # what the timer does
        timer.cancel()
        seen.append((conn.in_transaction, logged()))
        assert await client.call("kvs.get", {"key": "b"}) == {"value": "v"}
        return seen

    assert run_kvs(scenario, temporary=True) == [(True, 0), (True, 0), (False, 0)]
    # a kept state's answered turns are in the redo log until the commit holds them
    [(held_a, one), (held_b, two), (held, after)] = run_kvs(scenario)
    assert held_a
    assert held_b
    assert not held
    assert 0 < one < two
    assert after == 0


# --- walk ----------------------------------------------------------------------------------------


def test_walk_streams_batches_in_key_order(run_kvs: Run) -> None:
    async def scenario(broker: Broker, client: Any) -> None:
        n = WALK_BATCH * 2 + 5
        ops = [["append", f"job.{i:05d}.eventlog", f"e{i}\n"] for i in range(n)]
        ops += [["put", f"job.{i:05d}.jobspec", "{}"] for i in range(n)]
        await client.call("kvs.commit", {"ops": ops})
        tag = client.send("kvs.walk", {"key": "job", "suffix": "eventlog"}, streaming=True)
        msgs = await client.wait(tag, 4)
        assert [len(m.payload["entries"]) for m in msgs[:3]] == [WALK_BATCH, WALK_BATCH, 5]
        assert msgs[3].errnum == errno.ENODATA
        entries = [tuple(e) for m in msgs[:3] for e in m.payload["entries"]]
        assert entries == [(f"job.{i:05d}.eventlog", f"e{i}\n") for i in range(n)]
        # nothing there: just the end
        tag = client.send("kvs.walk", {"key": "nothing"}, streaming=True)
        assert [m.errnum for m in await client.wait(tag)] == [errno.ENODATA]

    run_kvs(scenario)


def test_walk_after_a_key_starts_past_it_and_never_before_the_key_walked(run_kvs: Run) -> None:
    async def scenario(broker: Broker, client: Any) -> None:
        ops = [["append", f"job.{i:05d}.eventlog", f"e{i}\n"] for i in range(6)]
        await client.call("kvs.commit", {"ops": [*ops, ["put", "a.eventlog", "x"]]})

        async def walk(after: str) -> list[str]:
            payload = {"key": "job", "suffix": "eventlog", "after": after}
            msgs = await client.wait(client.send("kvs.walk", payload, streaming=True))
            return [e[0] for m in msgs if not m.errnum for e in m.payload["entries"]]

        assert await walk("job.00003.eventlog") == ["job.00004.eventlog", "job.00005.eventlog"]
        assert await walk("a") == [f"job.{i:05d}.eventlog" for i in range(6)]
        assert await walk("zzz") == []
        msgs = await client.wait(client.send("kvs.walk", {"after": "a..b"}, streaming=True))
        error = (errno.EINVAL, 'key "a..b": empty path component')
        assert (msgs[0].errnum, msgs[0].errstr) == error

    run_kvs(scenario)


def test_a_long_value_comes_in_pieces_to_a_streaming_get_and_an_append_watch(
    run_kvs: Run,
) -> None:
    async def scenario(broker: Broker, client: Any) -> None:
        piece = "x" * 99_999 + "\n"
        for _ in range(25):  # 2.5 MB
            await client.call("kvs.commit", {"ops": [["append", "out", piece]]})
        tag = client.send("kvs.get", {"key": "out"}, streaming=True)
        msgs = await client.wait(tag, 4)
        assert [len(m.payload["value"]) for m in msgs[:3]] == [1_100_000, 1_100_000, 300_000]
        assert msgs[3].errnum == errno.ENODATA
        tag = client.send("kvs.watch", {"key": "out", "append": True}, streaming=True)
        got = await client.wait(tag, 3)
        assert "".join(m.payload["value"] for m in got) == piece * 25
        tag = client.send("kvs.get", {"key": "nothing"}, streaming=True)
        [msg] = await client.wait(tag)
        assert msg.errnum == errno.ENOENT

    run_kvs(scenario)


# --- watches --------------------------------------------------------------------------------------


def test_watch_append_sees_every_append_once_in_order(run_kvs: Run) -> None:
    async def scenario(broker: Broker, client: Any) -> None:
        await client.call("kvs.commit", {"ops": [["append", "log", "1\n"]]})
        tag = client.send("kvs.watch", {"key": "log", "append": True}, streaming=True)
        await client.wait(tag)
        # several in one commit, several commits in one turn, then later turns
        client.send("kvs.commit", {"ops": [["append", "log", "2\n"], ["append", "log", "3\n"]]})
        client.send("kvs.commit", {"ops": [["append", "other", "x"], ["append", "log", "4\n"]]})
        client.send("kvs.commit", {"ops": [["append", "log", ""]]})
        await client.call("kvs.commit", {"ops": [["append", "log", "5\n"]]})
        await client.call("kvs.commit", {"ops": [["append", "log", "6\n"]]})
        assert client.values(tag) == ["1\n", "2\n", "3\n", "4\n", "5\n", "6\n"]
        assert await client.call("kvs.get", {"key": "log"}) == {"value": "1\n2\n3\n4\n5\n6\n"}

    run_kvs(scenario)


def test_plain_watch_sees_whole_values(run_kvs: Run) -> None:
    async def scenario(broker: Broker, client: Any) -> None:
        await client.call("kvs.commit", {"ops": [["put", "k", "a"]]})
        tag = client.send("kvs.watch", {"key": "k"}, streaming=True)
        await client.call("kvs.commit", {"ops": [["append", "k", "b"], ["put", "k", "c"]]})
        await client.call("kvs.commit", {"ops": [["append", "k", "d"]]})
        await client.call("kvs.commit", {"ops": [["unlink", "k", None]]})
        assert client.values(tag) == [
            "a",
            "ab",
            "c",
            "cd",
            (errno.ENOENT, 'key "k": removed'),
        ]

    run_kvs(scenario)


def test_waitcreate_waits_without_polling(run_kvs: Run) -> None:
    async def scenario(broker: Broker, client: Any) -> None:
        events: list[str] = []
        count_transactions(broker, events)
        tag = client.send(
            "kvs.watch",
            {"key": "job.1.eventlog", "append": True, "waitcreate": True},
            streaming=True,
        )
        missing = client.send("kvs.watch", {"key": "job.1.eventlog"}, streaming=True)
        assert (await client.wait(missing))[0].errnum == errno.ENOENT
        assert client.values(tag) == []
        assert events == []  # waiting costs no transactions, and nothing polls
        await client.call("kvs.commit", {"ops": [["append", "job.1.eventlog", "submit\n"]]})
        await client.call("kvs.commit", {"ops": [["append", "job.1.eventlog", "alloc\n"]]})
        assert client.values(tag) == ["submit\n", "alloc\n"]

    run_kvs(scenario)


def test_unlink_of_a_directory_above_ends_the_watch(run_kvs: Run) -> None:
    async def scenario(broker: Broker, client: Any) -> None:
        await client.call("kvs.commit", {"ops": [["put", "job.1.eventlog", "e\n"]]})
        tag = client.send("kvs.watch", {"key": "job.1.eventlog", "append": True}, streaming=True)
        await client.call("kvs.commit", {"ops": [["unlink", "job.1", None]]})
        assert client.values(tag) == ["e\n", (errno.ENOENT, 'key "job.1.eventlog": removed')]
        assert client.watching == 0

    run_kvs(scenario)


def test_put_over_an_append_watch_ends_it(run_kvs: Run) -> None:
    async def scenario(broker: Broker, client: Any) -> None:
        await client.call("kvs.commit", {"ops": [["put", "k", "a"]]})
        tag = client.send("kvs.watch", {"key": "k", "append": True}, streaming=True)
        await client.call("kvs.commit", {"ops": [["put", "k", "b"]]})
        assert client.values(tag) == [
            "a",
            (errno.EINVAL, 'key "k": value of key watched with append overwritten'),
        ]

    run_kvs(scenario)


def test_watch_cancel_and_disconnect_drop_the_watch(run_kvs: Run) -> None:
    async def scenario(broker: Broker, client: Any) -> None:
        await client.call("kvs.commit", {"ops": [["put", "k", "a"]]})
        first = client.send("kvs.watch", {"key": "k", "append": True}, streaming=True)
        second = client.send("kvs.watch", {"key": "k", "append": True}, streaming=True)
        await client.wait(second)
        assert client.watching == 2
        assert await client.call("kvs.watch-cancel", {"matchtag": first}) == {}
        assert client.values(first) == ["a", ENODATA]
        assert await client.call("kvs.watch-cancel", {"matchtag": first}) == {}
        # another client cannot cancel this client's watch
        other = type(client)(broker)
        await other.call("kvs.watch-cancel", {"matchtag": second})
        client.hang_up()
        assert kvs(broker)._watches == {}
        await client.call("kvs.commit", {"ops": [["append", "k", "b"]]})
        assert client.values(second) == ["a"]

    run_kvs(scenario)


def test_in_broker_watch_is_dropped_by_route_cancel(run_kvs: Run) -> None:
    async def scenario(broker: Broker, client: Any) -> None:
        got: list[Message] = []
        route = broker.send(
            "kvs.watch", {"key": "k", "waitcreate": True}, got.append, streaming=True
        )
        await client.call("kvs.commit", {"ops": [["put", "k", "a"]]})
        await asyncio.sleep(0)  # one loop turn: local responses are delivered on the next
        assert [m.payload for m in got] == [{"value": "a"}]
        route.cancel()
        assert kvs(broker)._watches == {}

    run_kvs(scenario)


# --- namespaces -------------------------------------------------------------------------


def test_a_namespace_removed_ends_its_own_watches_alone(run_kvs: Run) -> None:
    async def scenario(broker: Broker, client: Any) -> None:
        watches = {}
        for n in (1, 2):
            ns = {"name": f"job-{n}", "owner": 5000, "prefix": f"job.000{n}.guest"}
            assert await client.call("kvs.namespace-create", ns) == {}
            commit = {"ops": [["append", "log", "a\n"]], "namespace": f"job-{n}"}
            assert await client.call("kvs.commit", commit) == {}
            payload = {"key": "log", "namespace": f"job-{n}", "append": True}
            watches[n] = client.send("kvs.watch", payload, streaming=True)
            await client.wait(watches[n])
        assert await client.call("kvs.commit", {"ops": [["append", "main", "a\n"]]}) == {}
        main = client.send("kvs.watch", {"key": "main", "append": True}, streaming=True)
        await client.wait(main)

        assert await client.call("kvs.namespace-remove", {"name": "job-1"}) == {}
        assert client.values(watches[1]) == ["a\n", (errno.ENOTSUP, 'namespace "job-1": removed')]
        for ns in ("job-2", None):  # the others' watches go on
            commit = {"ops": [["append", "log" if ns else "main", "b\n"]], "namespace": ns}
            assert await client.call("kvs.commit", {k: v for k, v in commit.items() if v}) == {}
        await client.wait(watches[2], 2)
        await client.wait(main, 2)
        assert client.values(watches[2]) == ["a\n", "b\n"]
        assert client.values(main) == ["a\n", "b\n"]
        assert await client.call("kvs.namespace-remove", {"name": "job-2"}) == {}
        assert client.values(watches[2])[-1] == (errno.ENOTSUP, 'namespace "job-2": removed')
        assert client.values(main) == ["a\n", "b\n"]

    run_kvs(scenario)


def test_guest_namespace_lifecycle(run_kvs: Run) -> None:
    async def scenario(broker: Broker, client: Any) -> None:
        ns = {"name": "job-42", "owner": 5000, "prefix": "job.0000.0000.0000.002a.guest"}
        assert await client.call("kvs.namespace-create", ns) == {}
        assert (await error_of(client, "kvs.namespace-create", ns))[0] == errno.EEXIST
        listed = await client.call("kvs.namespace-list", {})
        assert listed["namespaces"][1:] == [ns]
        assert listed["namespaces"][0]["name"] == "primary"

        guest = type(client)(broker, userid=5000, owner=False)
        stranger = type(client)(broker, userid=5001, owner=False)
        commit = {"ops": [["append", "application.log", "hello\n"]], "namespace": "job-42"}
        assert await guest.call("kvs.commit", commit) == {}
        assert await guest.call("kvs.get", {"key": "application.log", "namespace": "job-42"}) == {
            "value": "hello\n"
        }
        assert await guest.call("kvs.ls", {"key": ".", "namespace": "job-42"}) == {
            "entries": {"application": "dir"}
        }
        tag = guest.send("kvs.walk", {"key": ".", "namespace": "job-42"}, streaming=True)
        (batch, end) = await guest.wait(tag, 2)
        assert batch.payload == {"entries": [["application.log", "hello\n"]]}
        assert end.errnum == errno.ENODATA
        # the primary namespace sees the same key under the prefix (RFC 16's link)
        assert await client.call("kvs.get", {"key": f"{ns['prefix']}.application.log"}) == {
            "value": "hello\n"
        }
        assert (await error_of(stranger, "kvs.commit", commit))[0] == errno.EPERM
        assert (await error_of(guest, "kvs.get", {"key": "x"}))[0] == errno.EPERM
        errnum, errstr = await error_of(
            guest, "kvs.commit", {**commit, "ops": [["unlink", ".", None]]}
        )
        assert (errnum, errstr) == (
            errno.EINVAL,
            'kvs.commit: ops[0]: key ".": the root directory is not allowed here',
        )
        assert (await error_of(guest, "kvs.namespace-remove", {"name": "job-42"}))[0] == errno.EPERM

        watch = guest.send(
            "kvs.watch",
            {"key": "application.log", "namespace": "job-42", "append": True},
            streaming=True,
        )
        await guest.wait(watch)
        assert await client.call("kvs.namespace-remove", {"name": "job-42"}) == {}
        assert await client.call("kvs.namespace-remove", {"name": "job-42"}) == {}
        assert guest.values(watch) == [
            "hello\n",
            (errno.ENOTSUP, 'namespace "job-42": removed'),
        ]
        errnum, errstr = await error_of(guest, "kvs.commit", commit)
        assert errnum == errno.ENOTSUP
        assert errstr == 'kvs.commit: namespace "job-42": was removed (its keys are read-only now)'
        # the final snapshot stays readable through the primary namespace
        assert await client.call("kvs.get", {"key": f"{ns['prefix']}.application.log"}) == {
            "value": "hello\n"
        }

    run_kvs(scenario)


def test_the_execution_services_keys_are_not_written_through_a_guest_namespace(
    run_kvs: Run,
) -> None:
    async def scenario(broker: Broker, client: Any) -> None:
        ns = {"name": "job-43", "owner": 5000, "prefix": "job.0000.0000.0000.002b.guest"}
        assert await client.call("kvs.namespace-create", ns) == {}
        guest = type(client)(broker, userid=5000, owner=False)
        mine = [["put", "application.x", "1"], ["put", "tools.gdb.port", "7"], ["put", "y", "2"]]
        assert await guest.call("kvs.commit", {"ops": mine, "namespace": "job-43"}) == {}
        for who in (guest, client):  # the instance owner too, through the namespace
            for op in (
                ["append", "exec.eventlog", "x"],
                ["put", "output", "x"],
                ["unlink", "input", None],
                ["put", "exec", "x"],
            ):
                ops = [["put", "application.z", "1"], op]
                errnum, errstr = await error_of(
                    who, "kvs.commit", {"ops": ops, "namespace": "job-43"}
                )
                assert errnum == errno.EPERM
                assert errstr == (
                    f'kvs.commit: ops[1]: key "{op[1]}" in namespace "job-43": permission denied:'
                    " exec, output and input are written by the execution service only"
                    " (use application or tools.<name>)"
                )
        # nothing of a refused commit is applied; the primary namespace may write them
        assert (await error_of(guest, "kvs.get", {"key": "application.z", "namespace": "job-43"}))[
            0
        ] == errno.ENOENT
        assert (
            await client.call("kvs.commit", {"ops": [["put", f"{ns['prefix']}.output", "o"]]}) == {}
        )
        assert await guest.call("kvs.get", {"key": "output", "namespace": "job-43"}) == {
            "value": "o"
        }

    run_kvs(scenario)


def test_namespace_created_and_used_in_one_turn(run_kvs: Run) -> None:
    async def scenario(broker: Broker, client: Any) -> None:
        create = client.send("kvs.namespace-create", {"name": "n", "owner": 1, "prefix": "p"})
        commit = client.send("kvs.commit", {"ops": [["put", "k", "v"]], "namespace": "n"})
        remove = client.send("kvs.namespace-remove", {"name": "n"})
        late = client.send("kvs.commit", {"ops": [["put", "k2", "v"]], "namespace": "n"})
        await client.wait(late)
        assert [client.responses[t][0].errnum for t in (create, commit, remove, late)] == [
            0,
            0,
            0,
            errno.ENOTSUP,
        ]
        assert await client.call("kvs.get", {"key": "p.k"}) == {"value": "v"}

    run_kvs(scenario)


def test_data_and_namespaces_survive_a_restart(run_kvs: Run) -> None:
    async def first(broker: Broker, client: Any) -> None:
        await client.call("kvs.namespace-create", {"name": "n", "owner": 1, "prefix": "p"})
        await client.call("kvs.commit", {"ops": [["put", "k", "v"]], "namespace": "n"})

    async def second(broker: Broker, client: Any) -> None:
        assert await client.call("kvs.get", {"key": "k", "namespace": "n"}) == {"value": "v"}

    run_kvs(first)
    run_kvs(second)


def test_watch_refuses_a_directory_and_a_missing_key(run_kvs: Run) -> None:
    async def scenario(broker: Broker, client: Any) -> None:
        await client.call("kvs.commit", {"ops": [["put", "d.x", "1"]]})
        tag = client.send("kvs.watch", {"key": "d"}, streaming=True)
        (msg,) = await client.wait(tag)
        assert (msg.errnum, msg.errstr) == (errno.EISDIR, 'key "d": is a directory')
        tag = client.send("kvs.watch", {"key": "nope", "append": "yes"}, streaming=True)
        (msg,) = await client.wait(tag)
        assert (msg.errnum, msg.errstr) == (
            errno.EPROTO,
            "kvs.watch: append: expected bool, got str",
        )
        assert client.watching == 0

    run_kvs(scenario)


def test_requests_after_stop_are_refused(run_kvs: Run) -> None:
    async def scenario(broker: Broker, client: Any) -> None:
        await kvs(broker).stop()
        errnum, errstr = await error_of(client, "kvs.commit", {"ops": [["put", "a", "1"]]})
        assert (errnum, errstr) == (errno.ENOSYS, "kvs: not running")

    run_kvs(scenario)


def test_checkpoints_run_off_the_loop_once_enough_is_committed(run_kvs: Run) -> None:
    """After CHECKPOINT_COMMITS commits of the held transaction the WAL is copied, by a
    thread of the service, and not before (within the second that also makes one due)."""

    async def scenario(broker: Broker, client: Any) -> None:
        service = kvs(broker)
        store = service.store
        threads: list[str] = []
        inner = store.checkpoint

        def spied() -> int:
            threads.append(threading.current_thread().name)
            return inner()

        store.checkpoint = spied  # type: ignore[method-assign]

        async def commit(key: str) -> None:
            await client.call("kvs.commit", {"ops": [["put", key, "v"]]})
            timer = service._held
            assert timer is not None
            timer.cancel()
            service._release()  # what the timer does

        service._checkpointed = time.monotonic()
        for i in range(CHECKPOINT_COMMITS - 1):
            await commit(f"k.{i}")
        assert threads == []
        await commit("last")
        pending = service._checkpointing
        assert pending is not None
        await pending
        assert threads == ["kvs-checkpoint_0"]
        assert inner() == 0  # nothing was left uncopied

    run_kvs(scenario)


def test_mkdir_dropcache_and_a_namespace_with_the_default_prefix(run_kvs: Run) -> None:
    async def scenario(broker: Broker, client: Any) -> None:
        ns = {"name": "my.ns", "owner": 5000}
        assert await client.call("kvs.namespace-create", ns) == {}
        listed = await client.call("kvs.namespace-list", {})
        assert {"name": "my.ns", "owner": 5000, "prefix": "ns.my%2Ens"} in listed["namespaces"]
        guest = type(client)(broker, userid=5000, owner=False)
        mkdir = {"ops": [["mkdir", "application.d", None]], "namespace": "my.ns"}
        assert await guest.call("kvs.commit", mkdir) == {}
        assert await guest.call("kvs.ls", {"key": "application.d", "namespace": "my.ns"}) == {
            "entries": {}
        }
        assert await client.call("kvs.ls", {"key": "ns.my%2Ens.application"}) == {
            "entries": {"d": "dir"}
        }
        exec_mkdir = {"ops": [["mkdir", "exec", None]], "namespace": "my.ns"}
        assert (await error_of(guest, "kvs.commit", exec_mkdir))[0] == errno.EPERM
        assert (await error_of(guest, "kvs.dropcache", {}))[0] == errno.EPERM
        assert (await error_of(guest, "kvs.namespace-create", {"name": "g", "owner": 5000}))[
            0
        ] == errno.EPERM
        assert await client.call("kvs.dropcache", {}) == {}
        bad = {"name": "two words", "owner": 1}
        assert await error_of(client, "kvs.namespace-create", bad) == (
            errno.EINVAL,
            'namespace "two words": a name must be non-empty text without whitespace',
        )

    run_kvs(scenario)


def test_symlinks_are_followed_on_reads_and_writes_and_never_out_of_a_guests_namespace(
    run_kvs: Run,
) -> None:
    async def scenario(broker: Broker, client: Any) -> None:
        def link(key: str, target: str, **more: str) -> dict[str, Any]:
            return {"ops": [["symlink", key, {"target": target, **more}]]}

        await client.call("kvs.commit", {"ops": [["put", "s.t.x", "1"]]})
        assert await client.call("kvs.commit", link("s.l", "s.t")) == {}
        assert await client.call("kvs.get", {"key": "s.l.x"}) == {"value": "1"}
        assert await client.call("kvs.ls", {"key": "s"}) == {"entries": {"l": "link", "t": "dir"}}
        assert await client.call("kvs.ls", {"key": "s.l"}) == {"entries": {"x": "val"}}
        assert await client.call("kvs.readlink", {"key": "s.l"}) == {"target": "s.t"}
        assert await client.call("kvs.commit", {"ops": [["put", "s.l.y", "2"]]}) == {}
        assert await client.call("kvs.get", {"key": "s.t.y"}) == {"value": "2"}
        assert (await error_of(client, "kvs.readlink", {"key": "s.t"}))[0] == errno.EINVAL
        bad = {"ops": [["symlink", "s.m", "s.t"]]}
        assert await error_of(client, "kvs.commit", bad) == (
            errno.EINVAL,
            "kvs.commit: ops[0]: the value of symlink must be {target, namespace?}",
        )

        ns = {"name": "job-44", "owner": 5000, "prefix": "job.0000.0000.0000.002c.guest"}
        assert await client.call("kvs.commit", {"ops": [["put", "secret", "s"]]}) == {}
        assert await client.call("kvs.namespace-create", ns) == {}
        guest = type(client)(broker, userid=5000, owner=False)
        mine = {"namespace": "job-44"}
        assert await guest.call("kvs.commit", {**link("a", "b"), **mine}) == {}
        assert await guest.call("kvs.commit", {"ops": [["put", "a.v", "in b"]], **mine}) == {}
        assert await guest.call("kvs.get", {"key": "b.v", **mine}) == {"value": "in b"}
        assert await guest.call("kvs.readlink", {"key": "a", **mine}) == {"target": "b"}
        # a link to a primary key: refused to a guest when made, and when followed
        assert (
            await error_of(
                guest, "kvs.commit", {**link("p", "secret", namespace="primary"), **mine}
            )
        )[0] == errno.EPERM
        await client.call(
            "kvs.commit", {**link("esc", "secret", namespace="primary"), "namespace": "job-44"}
        )
        errnum, errstr = await error_of(guest, "kvs.get", {"key": "esc", **mine})
        assert errnum == errno.EPERM
        assert "leads out of the namespace" in errstr
        assert await client.call("kvs.get", {"key": "esc", **mine}) == {"value": "s"}
        # nor onto the execution service's keys
        assert await guest.call("kvs.commit", {**link("x", "exec"), **mine}) == {}
        errnum, errstr = await error_of(
            guest, "kvs.commit", {"ops": [["put", "x.eventlog", "forged"]], **mine}
        )
        assert errnum == errno.EPERM
        assert "execution service" in errstr

    run_kvs(scenario)
