"""A full disk: the KVS answers ENOSPC, refuses writes for a while, serves reads, and resumes."""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Callable
from typing import Any

import pytest

from pflux.broker.router import Broker
from pflux.errors import RPCError
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
