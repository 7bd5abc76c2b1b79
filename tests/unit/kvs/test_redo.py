"""The KVS's redo log: its records, and a durable store's held writes kept across kill -9."""

from __future__ import annotations

import logging
import os
import signal
import stat
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pflux.kvs import redo
from pflux.kvs.database import LARGE_VALUE, StoreError
from pflux.kvs.store import Store

entries = st.lists(
    st.one_of(
        st.tuples(
            st.just("a"),
            st.lists(st.tuples(st.sampled_from(["put", "append"]), st.text(), st.text())),
        ),
        st.tuples(st.just("v"), st.integers(0, 1 << 40)),
    ).map(list),
    max_size=4,
)
records = st.lists(entries, max_size=6).map(lambda e: list(enumerate(e, start=1)))


def record(lsn: int, entries: list[Any]) -> bytes:
    """A whole record, as the log holds it."""
    return b"".join(redo.encode(lsn, entries))


def as_json(records: list[tuple[int, list[Any]]]) -> list[tuple[int, list[Any]]]:
    """``records`` as the log reads them back (JSON arrays for tuples)."""
    return [
        (lsn, [[e[0], [list(op) for op in e[1]]] if e[0] == "a" else e for e in ents])
        for lsn, ents in records
    ]


@given(records)
def test_records_read_back_as_written(recs: list[tuple[int, list[Any]]]) -> None:
    data = b"".join(record(lsn, ents) for lsn, ents in recs)
    assert redo.decode(data) == (as_json(recs), len(data))


@given(records, st.data())
def test_a_log_cut_anywhere_reads_as_its_whole_records(
    recs: list[tuple[int, list[Any]]], data: st.DataObject
) -> None:
    pieces = [record(lsn, ents) for lsn, ents in recs]
    whole = b"".join(pieces)
    cut = data.draw(st.integers(0, len(whole)))
    read, used = redo.decode(whole[:cut])
    ends = [sum(map(len, pieces[: i + 1])) for i in range(len(pieces))]
    kept = sum(1 for end in ends if end <= cut)
    assert read == as_json(recs)[:kept]
    assert used == (ends[kept - 1] if kept else 0)


@given(records.filter(lambda r: len(r) >= 2), st.data())
def test_a_damaged_byte_before_the_last_record_is_refused(
    recs: list[tuple[int, list[Any]]], data: st.DataObject
) -> None:
    pieces = [record(lsn, ents) for lsn, ents in recs]
    whole = bytearray(b"".join(pieces))
    at = data.draw(st.integers(0, len(whole) - len(pieces[-1]) - 1))
    whole[at] ^= 1 << data.draw(st.integers(0, 7))
    with pytest.raises(redo.RedoError, match="byte"):
        redo.decode(bytes(whole))


def test_a_last_body_that_fails_its_check_is_a_torn_write() -> None:
    first, last = record(1, [["v", 1]]), bytearray(record(2, [["v", 2]]))
    last[-1] ^= 0xFF
    assert redo.decode(first + bytes(last)) == ([(1, [["v", 1]])], len(first))


def test_a_body_that_is_not_a_record_is_refused() -> None:
    body = b'{"lsn": 1}'
    size = redo.LENGTH.pack(len(body))
    data = redo.HEADER.pack(len(body), zlib.crc32(size), zlib.crc32(body)) + body
    with pytest.raises(redo.RedoError, match=r"not \[lsn, entries\]"):
        redo.decode(data + record(2, []))


# --- a durable store across kill -9 --------------------------------------------------------


def crash_after(path: Path, body: str, sync: str = "normal") -> None:
    """Run ``body`` in a child with ``store`` open and held on ``path``, then kill it -9."""
    script = (
        textwrap.dedent(
            f"""
        import os, signal, sys
        from pathlib import Path
        from pflux.kvs.store import Store
        store = Store({str(path)!r}, sync={sync!r})
        store.hold()
        """
        )
        + textwrap.dedent(body)
        + "\nos.kill(os.getpid(), signal.SIGKILL)\n"
    )
    child = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True
    )
    assert child.returncode == -signal.SIGKILL, child.stderr


@pytest.mark.parametrize("sync", ["normal", "full"])
def test_held_writes_answered_before_a_kill_9_are_there_after(tmp_path: Path, sync: str) -> None:
    path = tmp_path / "kvs.sqlite"
    crash_after(
        path,
        """
        for i in range(20):
            with store.transaction():
                store.append("job.1.eventlog", f"event {i}\\n")
                store.count_commits(1)
        with store.transaction():
            store.namespace_create("job-1", 1000, "job.1.guest")
            store.apply([("put", "job.1.guest.x", "1"), ("put", "job.1.R", "{}")])
            store.count_commits(1)
        """,
        sync,
    )
    assert Path(f"{path}-redo").stat().st_size > 0  # never committed to SQLite
    with Store(path) as store:
        assert store.get("job.1.eventlog") == "".join(f"event {i}\n" for i in range(20))
        assert store.get("job.1.guest.x") == "1"
        assert store.namespace("job-1").owner == 1000
        assert store.version == 21
        assert Path(f"{path}-redo").stat().st_size == 0  # applied and committed
    with Store(path) as store:  # and applied once
        assert store.get("job.1.eventlog").count("event 0\n") == 1


def test_records_the_last_commit_holds_are_not_applied_again(tmp_path: Path) -> None:
    path = tmp_path / "kvs.sqlite"
    crash_after(
        path,
        """
        redo = Path(str(store.path) + "-redo")
        for i in range(3):
            with store.transaction():
                store.append("log", f"{i}\\n")
        kept = redo.read_bytes()
        store.release()  # committed; then a crash before the log was emptied
        redo.write_bytes(kept)
        store.hold()
        with store.transaction():
            store.append("log", "3\\n")
        """,
    )
    with Store(path) as store:
        assert store.get("log") == "0\n1\n2\n3\n"


def test_a_torn_last_record_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "kvs.sqlite"
    crash_after(
        path,
        """
        with store.transaction():
            store.put("a", "1")
        """,
    )
    redo_path = Path(f"{path}-redo")
    with redo_path.open("ab") as f:
        f.write(record(2, [["a", [["put", "b", "2"]]]])[:-3])  # what a crash cut short
    with Store(path) as store:
        assert store.ls() == {"a": "val"}
        store.put("c", "3")
    with Store(path) as store:
        assert store.ls() == {"a": "val", "c": "val"}


def test_a_damaged_log_is_refused_naming_it_and_the_way_on(tmp_path: Path) -> None:
    path = tmp_path / "kvs.sqlite"
    crash_after(
        path,
        """
        for key in ("a", "b"):
            with store.transaction():
                store.put(key, "1")
        """,
    )
    redo_path = Path(f"{path}-redo")
    data = bytearray(redo_path.read_bytes())
    data[redo.HEADER.size + 2] ^= 0x20  # within the first of two records
    redo_path.write_bytes(bytes(data))
    with pytest.raises(StoreError, match=r"kvs.sqlite-redo: the redo log is damaged .*remove"):
        Store(path)
    redo_path.unlink()
    with Store(path) as store:  # without it: what the database holds
        assert store.ls() == {}


def test_a_log_past_the_database_is_set_aside_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "kvs.sqlite"
    Store(path).close()
    Path(f"{path}-redo").write_bytes(record(5, [["a", [["put", "a", "1"]]]]))
    with caplog.at_level(logging.WARNING, logger="pflux.kvs"), Store(path) as store:
        assert store.ls() == {}
    assert "begin at 5, past the database's last (0)" in caplog.text


def test_a_log_that_does_not_fit_its_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "kvs.sqlite"
    Store(path).close()
    Path(f"{path}-redo").write_bytes(record(1, [["r", "job-1"], ["z"]]))
    with pytest.raises(StoreError, match="does not fit the database"):
        Store(path)


def test_a_fresh_store_drops_the_log(tmp_path: Path) -> None:
    path = tmp_path / "kvs.sqlite"
    Path(f"{path}-redo").write_bytes(record(1, [["a", [["put", "a", "1"]]]]))
    with Store(path, fresh=True) as store:
        assert store.ls() == {}
    assert not os.path.exists(f"{path}-redo")


def test_a_turn_with_a_large_value_is_committed_at_once_not_copied_into_the_log(
    tmp_path: Path,
) -> None:
    path = tmp_path / "kvs.sqlite"
    crash_after(
        path,
        f"""
        redo = Path(str(store.path) + "-redo")
        with store.transaction():
            store.put("small", "1")
        assert redo.stat().st_size > 0
        with store.transaction():
            store.put("large", "x" * {LARGE_VALUE + 1})
        assert redo.stat().st_size == 0  # all that was held committed with it
        assert store._conn.in_transaction  # and held again
        with store.transaction():
            store.put("after", "2")
        assert redo.stat().st_size > 0
        """,
    )
    with Store(path) as store:
        assert store.ls() == {"after": "val", "large": "val", "small": "val"}
        assert len(store.get("large")) == LARGE_VALUE + 1


def test_a_log_others_could_read_is_made_the_owners_alone(tmp_path: Path) -> None:
    path = tmp_path / "kvs.sqlite"
    redo_path = Path(f"{path}-redo")
    redo_path.touch()
    os.chmod(redo_path, 0o644)
    with Store(path):
        assert stat.S_IMODE(redo_path.stat().st_mode) == 0o600
