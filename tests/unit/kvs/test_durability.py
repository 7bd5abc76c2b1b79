"""A commit the kvs service has answered survives kill -9 of the broker (synchronous=NORMAL)."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pflux.client.handle import Handle
from pflux.kvs.store import Store
from support.kvs_broker import kvs_broker


@pytest.fixture
def state_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="pflux-kvs-"))  # short: it holds a Unix socket
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_answered_commits_survive_kill_9(state_dir: Path) -> None:
    with kvs_broker(state_dir) as (child, uri):
        with Handle(uri) as h:
            rpcs = [
                h.rpc(
                    "kvs.commit",
                    {"ops": [["append", f"job.{j}.eventlog", f"event {i}\n"] for j in range(100)]},
                )
                for i in range(10)
            ]
            for rpc in rpcs:
                assert rpc.get(timeout=30) == {}
            child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    # the commits were never checkpointed into the database file: they are in the WAL,
    # and those after the last commit of the transaction the service holds in the redo log
    wal, redo = state_dir / "kvs.sqlite-wal", state_dir / "kvs.sqlite-redo"
    assert wal.stat().st_size + redo.stat().st_size > 0
    with Store(state_dir / "kvs.sqlite") as store:
        expected = "".join(f"event {i}\n" for i in range(10))
        assert dict(store.walk("job", "eventlog")) == {
            f"job.{j}.eventlog": expected for j in range(100)
        }
    assert not os.path.exists(state_dir / "kvs.sqlite-wal")  # closing checkpointed it
