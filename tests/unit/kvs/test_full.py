"""A full disk: the KVS answers ENOSPC, refuses writes for a while, serves reads, and resumes."""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pflux.broker.router import Broker
from pflux.errors import RPCError
from pflux.kvs.database import StoreFull
from pflux.kvs.service import KVSService
from pflux.kvs.store import Store

Run = Callable[..., Any]


def test_a_full_disk_is_enospc_not_fatal_and_writes_resume(
    run_kvs: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    full = [True]
    apply = Store.apply

    def apply_or_fill(self: Store, *args: Any, **kwargs: Any) -> Any:
        changes = apply(self, *args, **kwargs)
        if full[0]:
            error = sqlite3.OperationalError("database or disk is full")
            error.sqlite_errorcode = sqlite3.SQLITE_FULL  # type: ignore[attr-defined]
            raise error
        return changes

    async def scenario(broker: Broker, client: Any) -> None:
        reasons: list[str] = []
        broker.on_fatal = reasons.append
        assert await client.call("kvs.commit", {"ops": [["put", "kept", "1"]]}) == {}
        monkeypatch.setattr(Store, "apply", apply_or_fill)
        tags = [client.send("kvs.commit", {"ops": [["put", f"k{i}", "v"]]}) for i in range(3)]
        for tag in tags:
            (msg,) = await client.wait(tag)
            assert msg.errnum == errno.ENOSPC
            assert "not stored" in msg.errstr
            assert "no space left on device" in msg.errstr
        # refused, untried, for a while: a writer's later commits fail as its first did
        with pytest.raises(RPCError) as refused:
            await client.call("kvs.commit", {"ops": [["put", "later", "v"]]})
        assert refused.value.errnum == errno.ENOSPC
        # reads go on, and the failed transaction stored nothing
        assert await client.call("kvs.get", {"key": "kept"}) == {"value": "1"}
        with pytest.raises(RPCError) as missing:
            await client.call("kvs.get", {"key": "k0"})
        assert missing.value.errnum == errno.ENOENT
        # once the pause is over and there is space, writes resume
        full[0] = False
        service = broker.services["kvs"]
        assert isinstance(service, KVSService)
        service._full_until = 0.0  # the pause is over
        assert await client.call("kvs.commit", {"ops": [["put", "k0", "v"]]}) == {}
        assert await client.call("kvs.commit", {"ops": [["put", "k1", "v"]]}) == {}
        assert reasons == []

    run_kvs(scenario)


class FullOnCommit:
    """A connection whose COMMIT finds the disk full, for as long as ``full`` says."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.full = True

    def execute(self, sql: str, *args: Any) -> Any:
        if self.full and sql == "COMMIT":
            error = sqlite3.OperationalError("database or disk is full")
            error.sqlite_errorcode = sqlite3.SQLITE_FULL  # type: ignore[attr-defined]
            raise error
        return self.conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)


def test_a_held_commit_that_finds_the_disk_full_keeps_its_turns_held(tmp_path: Path) -> None:
    path = tmp_path / "kvs.sqlite"
    with Store(path) as store:
        store.hold()
        store.put("a", "1")
        store.append("log", "x\n")
        real = store._conn
        store._conn = FullOnCommit(real)  # type: ignore[assignment]
        with pytest.raises(StoreFull, match="no space left on device"):
            store.release()
        # rolled back, and the logged turns applied again under a new hold
        assert real.in_transaction
        assert (store.get("a"), store.get("log")) == ("1", "x\n")
        assert Path(f"{path}-redo").stat().st_size > 0
        store._conn = real
        store.put("b", "2")
        store.release()
        assert Path(f"{path}-redo").stat().st_size == 0
    with Store(path) as store:
        assert (store.get("a"), store.get("log"), store.get("b")) == ("1", "x\n", "2")


def test_the_service_refuses_writes_while_its_held_commit_finds_the_disk_full(
    run_kvs: Run,
) -> None:
    async def scenario(broker: Broker, client: Any) -> None:
        reasons: list[str] = []
        broker.on_fatal = reasons.append
        service = broker.services["kvs"]
        assert isinstance(service, KVSService)
        assert await client.call("kvs.commit", {"ops": [["put", "kept", "1"]]}) == {}
        store = service.store
        real = store._conn
        store._conn = full = FullOnCommit(real)  # type: ignore[assignment]
        service._release()  # what the timer does
        assert reasons == []  # not fatal: the answered turn is in the redo log
        retry = service._held
        assert retry is not None  # the commit is tried again later
        retry.cancel()
        with pytest.raises(RPCError) as refused:
            await client.call("kvs.commit", {"ops": [["put", "later", "v"]]})
        assert refused.value.errnum == errno.ENOSPC
        assert await client.call("kvs.get", {"key": "kept"}) == {"value": "1"}
        full.full = False
        service._full_until = 0.0
        service._release()
        store._conn = real
        assert not real.in_transaction
        assert await client.call("kvs.commit", {"ops": [["put", "later", "v"]]}) == {}
        assert reasons == []

    run_kvs(scenario)
