"""Removing a job's directory from the store: its removed namespace goes with it, and
the file gives the space back (incremental auto-vacuum), also for an older database."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

import pytest

from pflux.kvs.database import RECLAIM_SLACK, RECLAIM_STEP, WAL_SIZE_LIMIT
from pflux.kvs.keys import KVSError
from pflux.kvs.store import UNLINK, Store


def _fill(store: Store, jobs: int, size: int = 3000) -> None:
    for first in range(0, jobs, 100):
        ops = [
            (op, f"job.{i}.{name}", "x" * size)
            for i in range(first, min(first + 100, jobs))
            for op, name in (("put", "J"), ("put", "jobspec"), ("append", "eventlog"))
        ]
        store.apply(ops)


def test_unlinking_a_job_forgets_its_removed_namespace_and_keeps_a_live_one(
    tmp_path: Path,
) -> None:
    with Store(tmp_path / "kvs.sqlite") as store:
        store.namespace_create("job-1", 1000, "job.1.guest")
        store.namespace_create("job-2", 1000, "job.2.guest")
        store.put("job.1.guest.output", "hi")
        store.put("job.2.eventlog", "e")
        store.put("job.2.guest.output", "hi")
        store.namespace_remove("job-1")
        store.namespace_remove("job-2")
        store.namespace_create("job-3", 1000, "job.3.guest")  # live, no keys
        store.put("job.3.eventlog", "e")
        store.apply([(UNLINK, "job.1", None), (UNLINK, "job.2", None), (UNLINK, "job.3", None)])
        for name in ("job-1", "job-2"):
            with pytest.raises(KVSError, match="does not exist") as info:
                store.namespace(name)
            assert info.value.errnum == errno.ENOTSUP
        assert store.namespace("job-3").prefix == "job.3.guest"
        with pytest.raises(KVSError):
            store.get("job.1.guest.output")


def test_purged_pages_are_given_back_in_bounded_steps(tmp_path: Path) -> None:
    path = tmp_path / "kvs.sqlite"
    with Store(path) as store:
        _fill(store, 2000)
        store.checkpoint()
        full = os.path.getsize(path)
        with store.transaction():
            store.apply([(UNLINK, f"job.{i}", None) for i in range(2000)])
            assert store.reclaim() == RECLAIM_STEP  # one step per transaction, no more
        steps = 1
        while True:
            with store.transaction():
                if not store.reclaim():
                    break
            steps += 1
        assert steps > 2
        conn = sqlite3.connect(path)
        assert conn.execute("PRAGMA freelist_count").fetchone()[0] <= RECLAIM_SLACK
        conn.close()
        store.checkpoint()
    assert os.path.getsize(path) < full / 2


def test_an_older_database_is_switched_to_incremental_auto_vacuum_once(tmp_path: Path) -> None:
    path = tmp_path / "kvs.sqlite"
    with Store(path) as store:
        store.put("job.1.eventlog", "e")
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA auto_vacuum = NONE")
    conn.execute("VACUUM")
    conn.execute("DROP INDEX namespace_prefix")
    assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 0
    conn.close()
    with Store(path) as store:
        assert store.get("job.1.eventlog") == "e"
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
    indexes = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert "namespace_prefix" in indexes
    conn.close()


def test_a_new_database_uses_incremental_auto_vacuum(tmp_path: Path) -> None:
    path = tmp_path / "kvs.sqlite"
    with Store(path):
        pass
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
    conn.close()
    with Store(tmp_path / "mem.sqlite", journal="memory", sync="off") as store:
        store.put("a", "b")
    conn = sqlite3.connect(tmp_path / "mem.sqlite")
    assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
    conn.close()


def test_a_long_wal_that_checkpoints_caught_up_with_is_cut_back(tmp_path: Path) -> None:
    path = tmp_path / "kvs.sqlite"
    wal = Path(f"{path}-wal")
    with Store(path) as store:
        _fill(store, 2000)  # about 18 MiB of values, all in the WAL
        assert wal.stat().st_size > WAL_SIZE_LIMIT
        assert store.checkpoint() == 0
        assert wal.stat().st_size < WAL_SIZE_LIMIT / 16
        store.put("job.1.eventlog", "more")
        assert store.get("job.1.eventlog") == "more"
