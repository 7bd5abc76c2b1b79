"""The SQLite store alone: keys and directories, atomic commits, namespaces, the file itself."""

from __future__ import annotations

import errno
import os
import re
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pflux.kvs.database import PAGE_SIZE, SCHEMA_VERSION, StoreError
from pflux.kvs.keys import KVSError
from pflux.kvs.namespaces import Namespace
from pflux.kvs.store import (
    APPEND,
    CHUNK,
    PIECE,
    PUT,
    UNLINK,
    Store,
    link_value,
)
from support.sqltrace import traced_opens


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "kvs.sqlite"


@pytest.fixture
def store(path: Path) -> Iterator[Store]:
    with Store(path) as s:
        yield s


def errnum(store: Store, method: str, *args: str) -> int:
    with pytest.raises(KVSError) as info:
        getattr(store, method)(*args)
    return info.value.errnum


# --- keys and directories ------------------------------------------------------------------


def test_put_get_and_directories_appear(store: Store) -> None:
    store.put("a.b.c", "1")
    store.put("a.d", "2")
    assert store.get("a.b.c") == "1"
    assert store.ls() == {"a": "dir"}
    assert store.ls("a") == {"b": "dir", "d": "val"}
    assert store.ls("a.b") == {"c": "val"}


def test_get_errors(store: Store) -> None:
    store.put("a.b", "1")
    assert errnum(store, "get", "x") == errno.ENOENT
    assert errnum(store, "get", "a") == errno.EISDIR
    assert errnum(store, "get", ".") == errno.EISDIR
    with pytest.raises(KVSError, match=re.escape('key "a.b.c": "a.b" is not a directory')) as info:
        store.get("a.b.c")
    assert info.value.errnum == errno.ENOTDIR


def test_ls_errors_and_empty_root(store: Store) -> None:
    assert store.ls(".") == {}
    store.put("a.b", "1")
    assert errnum(store, "ls", "x") == errno.ENOENT
    assert errnum(store, "ls", "a.b") == errno.ENOTDIR
    assert errnum(store, "ls", "a.b.c") == errno.ENOTDIR


def test_ls_is_sorted_and_sees_neighbours_that_sort_inside_a_directory(store: Store) -> None:
    # '-' and '!' sort before '.', '0' after '/': the skip over a directory must not lose them
    for key in ("p.a.x", "p.a-b", "p.a!", "p.a0", "p.b", "p.a.y.z"):
        store.put(key, "v")
    store.append("p.c", "chunk" * CHUNK)
    store.append("p.c", "more")
    assert list(store.ls("p").items()) == [
        ("a", "dir"),
        ("a!", "val"),
        ("a-b", "val"),
        ("a0", "val"),
        ("b", "val"),
        ("c", "val"),
    ]


def test_put_replaces_a_directory_and_a_value_in_the_way(store: Store) -> None:
    store.put("a.b.c", "1")
    store.put("a.b", "2")  # the directory a.b goes
    assert store.ls("a") == {"b": "val"}
    assert errnum(store, "get", "a.b.c") == errno.ENOTDIR
    store.put("a.b.x.y", "3")  # the value a.b goes
    assert store.ls("a.b") == {"x": "dir"}
    assert list(store.walk()) == [("a.b.x.y", "3")]


@pytest.mark.parametrize("known", [True, False])
def test_a_commit_appending_to_a_value_its_puts_need_as_a_directory_fails_whole(
    store: Store, known: bool
) -> None:
    """One op after another, the put makes ``b`` a directory and the append to it fails:
    so must the commit, however it is applied (its appends and new keys apart too)."""
    store.put("b", "v")
    store.put("c.d", "w")
    if not known:
        store._dirs.clear()
    ops: list[Any] = [(PUT, "b.x.y", "1"), (PUT, "c.e", "2"), (APPEND, "b", "+")]
    ops.append((PUT, "b.z.w", "3"))
    with pytest.raises(KVSError) as caught:
        store.apply(ops)
    assert caught.value.errnum == errno.EISDIR
    assert list(store.walk()) == [("b", "v"), ("c.d", "w")]
    store.apply([(APPEND, "b", "+"), *ops[:2]])  # appended first, it is replaced after
    assert list(store.walk()) == [("b.x.y", "1"), ("c.d", "w"), ("c.e", "2")]


def test_unlink_a_value_a_directory_and_nothing(store: Store) -> None:
    store.put("a.b.c", "1")
    store.put("a.b.d", "2")
    store.put("a.e", "3")
    store.unlink("a.b.c")
    assert store.ls("a.b") == {"d": "val"}
    store.unlink("a.b")
    assert store.ls("a") == {"e": "val"}
    store.unlink("a.e")
    assert store.ls() == {}  # a directory exists only while something is below it
    store.unlink("never.was")


def test_append_creates_grows_and_refuses_a_directory(store: Store) -> None:
    store.append("log", "one\n")
    store.append("log", "two\n")
    store.append("log", "")
    assert store.get("log") == "one\ntwo\n"
    store.put("d.x", "1")
    with pytest.raises(KVSError, match='key "d": cannot append to a directory') as info:
        store.append("d", "x")
    assert info.value.errnum == errno.EISDIR
    store.put("v", "1")
    store.append("v.w", "2")  # a value in the way of a new key is replaced
    assert list(store.walk("v")) == [("v.w", "2")]


def test_long_appends_are_chunked_not_rewritten(store: Store, path: Path) -> None:
    pieces = [f"{i:06d}" * 50 + "\n" for i in range(200)]  # 60 KB in 301-byte appends
    for piece in pieces:
        store.append("out", piece)
    assert store.get("out") == "".join(pieces)
    assert list(store.walk()) == [("out", "".join(pieces))]
    store.close()
    with sqlite3.connect(path) as db:
        chunks = [n for (n,) in db.execute("SELECT length(data) FROM kv WHERE key = 'out'")]
    db.close()
    assert len(chunks) > 10
    assert max(chunks) < CHUNK + 301
    with Store(path) as again:
        again.put("out", "short")
        assert again.get("out") == "short"


def test_batched_appends_grow_first_chunks_and_learn_which_values_have_more(
    store: Store, path: Path
) -> None:
    """A batch of appends is one statement while every value is one chunk; a value that
    outgrows its first is learned once (the batch goes op by op), then appended by its last."""

    def batch(*values: str) -> list[str]:
        statements: list[str] = []
        store._conn.set_trace_callback(statements.append)
        try:
            store.apply([[APPEND, key, value] for key, value in zip("abc", values, strict=True)])
        finally:
            store._conn.set_trace_callback(None)
        return statements

    batch("1", "x" * (CHUNK - 1), "z")  # new keys: op by op
    assert "ROLLBACK TO kvs_commit" not in batch("2", "y" * 10, "z")  # b's first chunk grows
    assert "ROLLBACK TO kvs_commit" in batch("3", "w", "z")  # b's first is full: learned
    assert "ROLLBACK TO kvs_commit" not in batch("4", "v", "z")  # b by its last chunk
    expected = {"a": "1234", "b": "x" * (CHUNK - 1) + "y" * 10 + "wv", "c": "zzzz"}
    assert {key: store.get(key) for key in "abc"} == expected
    store.close()
    with Store(path) as again:  # knowing nothing of b at first
        again.apply([[APPEND, key, "."] for key in "abc"])
        assert {key: again.get(key) for key in "abc"} == {k: v + "." for k, v in expected.items()}


def test_an_append_costs_the_same_however_long_the_value(store: Store) -> None:
    """O(chunk), not O(value): SQLite's steps for one append to 5 chunks and to 500."""

    def steps_of_an_append(key: str, chunks: int) -> int:
        for _ in range(chunks):
            store.append(key, "x" * CHUNK)
        steps = [0]

        def count() -> int:
            steps[0] += 1
            return 0

        store._conn.set_progress_handler(count, 10)
        try:
            store.append(key, "y" * CHUNK)
        finally:
            store._conn.set_progress_handler(None, 0)
        return steps[0]

    short, long = steps_of_an_append("short", 5), steps_of_an_append("long", 500)
    assert long < 2 * short + 10, (short, long)


def traced(store: Store, ops: list[Any], watched: set[str]) -> tuple[list[str], list[Any]]:
    """(the kind of each SQL statement ``store.apply(ops, watched)`` ran, its changes)."""
    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    try:
        changes = store.apply(ops, watched)
    finally:
        store._conn.set_trace_callback(None)
    return [statement.split()[0] for statement in statements], changes


def one_by_one(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """A list that gets an item for each op the store applies one at a time."""
    applied: list[Any] = []
    apply_one = store._apply_one
    monkeypatch.setattr(store, "_apply_one", lambda *args: applied.append(apply_one(*args)))
    return applied


def test_new_jobs_are_inserted_in_one_statement(store: Store) -> None:
    """job-ingest's commit, a new directory per job: one probe and one INSERT for all."""
    store.put("job.a", "in the way")  # a value where the directories go is still replaced
    kinds, changes = traced(
        store,
        [
            (op, f"job.a.{n}.{leaf}", f"{n}{leaf}")
            for n in range(3)
            for op, leaf in (("put", "J"), ("put", "jobspec"), ("append", "eventlog"))
        ],
        {"job.a", "job.a.1.eventlog"},
    )
    assert kinds.count("SELECT") == 1  # one probe of every job directory, none per key
    assert kinds.count("INSERT") == 9  # one executemany, traced a row at a time
    assert "UPDATE" not in kinds  # no append probing
    # the probes covered each job's directory itself: only the value in the way is deleted
    assert kinds.count("DELETE") == 1
    assert changes == [("job.a", "unlink", None), ("job.a.1.eventlog", "append", "1eventlog")]
    assert store.get("job.a.2.jobspec") == "2jobspec"
    assert store.ls("job.a") == {"0": "dir", "1": "dir", "2": "dir"}
    store.append("job.a.2.eventlog", "+")  # an existing directory: one by one, as before
    assert store.get("job.a.2.eventlog") == "2eventlog+"


class Calls:
    """A connection that notes each call's method and statement kind, as ``execute DELETE``."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self.calls: list[str] = []

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        self.calls.append(f"execute {sql.split(maxsplit=1)[0]}")
        return self._conn.execute(sql, *args)

    def executemany(self, sql: str, *args: Any) -> sqlite3.Cursor:
        self.calls.append(f"executemany {sql.split(maxsplit=1)[0]}")
        return self._conn.executemany(sql, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self._conn, name)


def test_values_where_new_directories_go_are_removed_in_one_statement(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Jobs in new directories under new ones: one probe, the values in the way go at once."""
    store.put("job.a", "in the way")
    store.put("job.b.x", "in the way too")
    store.put("job.c.1.J", "a job's, not in the way")
    applied = one_by_one(store, monkeypatch)
    conn = Calls(store._conn)
    monkeypatch.setattr(store, "_conn", conn)
    ops = [
        ("put", f"job.{d}.{n}.J", f"{d}{n}")
        for d, n in (("a", 0), ("a", 1), ("b", "x.0"), ("c", 2), ("new", 0))
    ]
    changes = store.apply(ops, {"job.c.2.J", "job.new.0.J"})
    assert applied == []
    within = conn.calls[conn.calls.index("execute SAVEPOINT") + 1 :]
    assert within[: within.index("execute RELEASE")] == [
        "execute SELECT",  # every probe
        "executemany DELETE",  # job.a, job.b.x, job.new
        "executemany INSERT",
    ]
    assert changes == [("job.c.2.J", "put", "c2"), ("job.new.0.J", "put", "new0")]
    assert store.ls("job.a") == {"0": "dir", "1": "dir"}
    assert store.ls("job.b") == {"x": "dir"}
    assert store.get("job.b.x.0.J") == "bx.0"
    assert store.get("job.c.1.J") == "a job's, not in the way"
    assert store.get("job.new.0.J") == "new0"


def test_new_keys_in_known_directories_are_inserted_in_one_statement(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scheduler's commit, an R in each job's directory: one probe, one INSERT."""
    store.apply([("put", f"job.{n}.{leaf}", "v") for n in range(3) for leaf in ("J", "jobspec")])
    applied = one_by_one(store, monkeypatch)
    kinds, changes = traced(store, [("put", f"job.{n}.R", f"R{n}") for n in range(3)], {"job.1.R"})
    assert (kinds.count("SELECT"), kinds.count("INSERT"), kinds.count("DELETE")) == (1, 3, 0)
    assert applied == []
    assert changes == [("job.1.R", "put", "R1")]
    assert [store.get(f"job.{n}.R") for n in range(3)] == ["R0", "R1", "R2"]
    # a key that is there already, or one below a key of the commit: one by one
    store.apply([("put", "job.0.R", "again"), ("put", "job.1.S", "s")])
    store.apply([("put", "job.2.T", "t"), ("put", "job.2.T.U", "u")])
    assert len(applied) == 4
    assert (store.get("job.0.R"), store.get("job.1.S")) == ("again", "s")
    assert store.ls("job.2.T") == {"U": "val"}


def test_ends_of_jobs_append_and_insert_their_records_in_a_few_statements(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job manager's commit where jobs end: each eventlog's last event appended and a
    record beside it, the appends in one statement and the records in one more, none one
    by one; a record in the way of nothing else, and a watched eventlog heard in order."""
    store.apply([("append", f"job.{n}.eventlog", "a") for n in range(3)])
    applied = one_by_one(store, monkeypatch)
    kinds, changes = traced(
        store,
        [
            op
            for n in range(3)
            for op in (
                ("append", f"job.{n}.eventlog", "b"),
                ("put", f"job.{n}.data.manager", f"r{n}"),
            )
        ],
        {"job.0.eventlog", "job.2.eventlog"},
    )
    assert applied == []
    assert (kinds.count("UPDATE"), kinds.count("INSERT"), kinds.count("DELETE")) == (3, 3, 0)
    assert changes == [("job.0.eventlog", "append", "b"), ("job.2.eventlog", "append", "b")]
    assert [store.get(f"job.{n}.eventlog") for n in range(3)] == ["ab"] * 3
    assert [store.get(f"job.{n}.data.manager") for n in range(3)] == ["r0", "r1", "r2"]
    # a new key where a value is: the appends are undone and all go one by one
    store.apply([("append", "job.0.eventlog", "c"), ("put", "job.1.data.manager.x", "y")])
    assert len(applied) == 2
    assert store.get("job.0.eventlog") == "abc"
    assert store.ls("job.1.data.manager") == {"x": "val"}


def test_new_directories_one_inside_another_probed_once_each_and_never_deleted(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """job-exec's first keys of a job: ``guest.exec.eventlog`` and ``guest.output`` in a
    known job directory. Each new directory's probe found nothing at it, so the outer one
    is not deleted to make way for the inner; a value above them still is."""
    store.apply([("put", f"job.{n}.jobspec", "v") for n in range(2)])
    applied = one_by_one(store, monkeypatch)
    ops = [("put", "job.0.guest.exec.eventlog", "e"), ("put", "job.0.guest.output", "o")]
    kinds, changes = traced(store, ops, {"job.0.guest"})
    assert applied == []
    # one query probes both new directories
    assert (kinds.count("SELECT"), kinds.count("INSERT"), kinds.count("DELETE")) == (1, 2, 0)
    assert changes == []
    assert store.ls("job.0.guest") == {"exec": "dir", "output": "val"}
    # a value where the outer directory goes is found by its probe: one by one, replaced
    store.put("job.1.guest", "in the way")
    del applied[:]
    changes = store.apply(
        [("put", "job.1.guest.exec.eventlog", "e"), ("put", "job.1.guest.output", "o")],
        {"job.1.guest"},
    )
    assert len(applied) == 2
    assert changes == [("job.1.guest", "unlink", None)]
    assert store.ls("job.1.guest") == {"exec": "dir", "output": "val"}
    # one above both, in a directory not known: deleted once, heard once
    store._dirs.clear()
    store.put("job.x", "in the way")
    store._dirs.clear()
    del applied[:]
    kinds, changes = traced(
        store, [("put", "job.x.a.b.k", "1"), ("put", "job.x.a.k", "2")], {"job.x", "job.x.a"}
    )
    assert applied == []
    assert kinds.count("DELETE") == 2  # at job.x and job, none at job.x.a
    assert changes == [("job.x", "unlink", None)]
    assert (store.get("job.x.a.b.k"), store.get("job.x.a.k")) == ("1", "2")


def test_a_commit_whose_key_stands_where_another_needs_a_directory(store: Store) -> None:
    """Found by the model test: all new directories, but a0.a is a key and a directory
    a0.a.a.a needs, so the commit goes one op at a time and the later put wins."""
    changes = store.apply(
        [("put", "a0.a", "1"), ("put", "a.a.a", "2"), ("put", "a0.a.a.a", "3")], {"a0.a"}
    )
    assert changes == [("a0.a", "put", "1"), ("a0.a", "unlink", None)]
    assert store.ls("a0.a") == {"a": "dir"}
    assert store.get("a0.a.a.a") == "3"
    with pytest.raises(KVSError, match="cannot append to a directory"):  # as one by one
        store.apply([("put", "b.x", "1"), ("put", "b.y.z.w", "2"), ("append", "b.y", "3")])
    assert store.ls() == {"a": "dir", "a0": "dir"}  # and the commit left nothing


def test_a_long_put_is_stored_a_piece_at_a_time(store: Store, path: Path) -> None:
    """SQLite copies what it is given: a long value goes in PIECE characters a row."""
    value = "".join(chr(ord("a") + i) * PIECE for i in range(2)) + "tail"
    store.put("j.1.J", value)
    store.apply([("put", "j.2.J", value), ("put", "j.2.jobspec", "{}")])  # one new directory
    store.put("j.2.J", value)  # replacing a value
    store.append("j.1.J", "+more")
    assert store.get("j.1.J") == value + "+more"
    assert list(store.walk("j", suffix="J")) == [("j.1.J", value + "+more"), ("j.2.J", value)]
    store.close()
    with sqlite3.connect(path) as db:
        query = "SELECT key, seq, length(data) FROM kv WHERE leaf = 'J' ORDER BY key, seq"
        lengths = [(key, seq, size) for key, seq, size in db.execute(query)]
    db.close()
    assert lengths == [
        ("j.1.J", 0, PIECE),
        ("j.1.J", 1, PIECE),
        ("j.1.J", 2, len("tail+more")),
        ("j.2.J", 0, PIECE),
        ("j.2.J", 1, PIECE),
        ("j.2.J", 2, len("tail")),
    ]


def test_a_long_value_is_read_a_piece_at_a_time(store: Store) -> None:
    pieces = [f"{i:06d}" * 1000 + "\n" for i in range(40)]  # 6 KB appends: a chunk each
    for piece in pieces:
        store.append("out", piece)
    got, after = [], -1
    while rows := store.chunks("out", after, 20_000):
        assert sum(len(text) for _, text in rows) < 20_000 + len(pieces[0])
        got += [text for _, text in rows]
        after = rows[-1][0]
    assert "".join(got) == "".join(pieces) == store.get("out")
    assert len(got) == 40
    assert store.chunks("out", after) == []
    store.put("d.v", "x")
    for key, errno_ in (("none", errno.ENOENT), ("d", errno.EISDIR)):
        with pytest.raises(KVSError) as info:
            store.chunks(key)
        assert info.value.errnum == errno_


def test_walk_is_ordered_and_filters_by_suffix(store: Store) -> None:
    store.put("job.2.eventlog", "e2")
    store.put("job.1.eventlog", "e1")
    store.put("job.1.jobspec", "j1")
    store.put("job.1.guest.eventlog", "g1")
    store.put("jobs", "not below job")
    store.put("eventlog", "top")
    assert list(store.walk("job")) == [
        ("job.1.eventlog", "e1"),
        ("job.1.guest.eventlog", "g1"),
        ("job.1.jobspec", "j1"),
        ("job.2.eventlog", "e2"),
    ]
    assert [k for k, _ in store.walk("job", "eventlog")] == [
        "job.1.eventlog",
        "job.1.guest.eventlog",
        "job.2.eventlog",
    ]
    assert [k for k, _ in store.walk(".", "eventlog")] == [
        "eventlog",
        "job.1.eventlog",
        "job.1.guest.eventlog",
        "job.2.eventlog",
    ]
    assert list(store.walk("nothing")) == []
    assert errnum(store, "walk", "jobs") == errno.ENOTDIR
    with pytest.raises(KVSError, match=re.escape('suffix "a.b": must be one path component')):
        store.walk("job", "a.b")


# --- commits -------------------------------------------------------------------------------


def test_a_commit_is_atomic(store: Store) -> None:
    store.put("d.x", "1")
    with pytest.raises(KVSError, match=r"ops\[2\]: key \"d\": cannot append"):
        store.apply([(PUT, "a", "1"), (UNLINK, "e", None), (APPEND, "d", "2")])
    assert errnum(store, "get", "a") == errno.ENOENT
    assert store.get("d.x") == "1"
    # and the store is sane afterwards: the directory cache was rolled back too
    store.apply([(PUT, "d", "v"), (PUT, "e.f", "w")])
    assert store.ls() == {"d": "val", "e": "dir"}


@pytest.mark.parametrize(
    ("op", "message"),
    [
        (("frob", "a", "b"), 'ops[1]: unknown op "frob" (expected put, append, unlink or mkdir)'),
        (("put", "a..b", "v"), 'ops[1]: key "a..b": empty path component'),
        (("put", "a", 5), "ops[1]: the value of put must be a string, got number"),
        (("append", "a", None), "ops[1]: the value of append must be a string, got null"),
        (("unlink", "a", "x"), "ops[1]: the value of unlink must be null"),
        (("put", "a"), "ops[1]: must be [op, key, value]"),
        ("put a b", "ops[1]: must be [op, key, value]"),
        (("put", ".", "v"), 'ops[1]: key ".": the root directory is not allowed here'),
    ],
)
def test_bad_ops_are_refused_before_anything_is_written(
    store: Store, op: object, message: str
) -> None:
    with pytest.raises(KVSError) as info:
        store.apply([(PUT, "first", "1"), op])  # type: ignore[list-item]
    assert info.value.errnum == errno.EINVAL
    assert info.value.errstr == message
    assert store.ls() == {}


def test_changes_are_reported_for_watched_keys_only(store: Store) -> None:
    store.put("d.a", "1")
    store.put("d.b", "2")
    store.put("v", "3")
    changes = store.apply(
        [
            (APPEND, "log", "x"),
            (APPEND, "log", "y"),
            (APPEND, "log", ""),
            (PUT, "other", "z"),
            (PUT, "d", "now a value"),
            (PUT, "v.w", "below a former value"),
        ],
        watched={"log", "d.a", "d", "v"},
    )
    assert changes == [
        ("log", APPEND, "x"),
        ("log", APPEND, "y"),
        ("d.a", UNLINK, None),
        ("d", PUT, "now a value"),
        ("v", UNLINK, None),
    ]
    assert store.apply([(UNLINK, "log", None)], watched={"log"}) == [("log", UNLINK, None)]


def test_a_transaction_groups_commits(store: Store, path: Path) -> None:
    with store.transaction():
        store.apply([(PUT, "a", "1")])
        with pytest.raises(KVSError):
            store.apply([(PUT, "b", "2"), (APPEND, ".", "x")])
        store.apply([(PUT, "c", "3")])
    assert store.ls() == {"a": "val", "c": "val"}

    def abandon() -> None:
        with store.transaction():
            store.put("d", "4")
            raise RuntimeError("abandon")

    with pytest.raises(RuntimeError):
        abandon()
    assert store.ls() == {"a": "val", "c": "val"}


# --- namespaces ------------------------------------------------------------------------------


def test_namespaces_persist_and_removal_keeps_the_keys(path: Path) -> None:
    with Store(path) as store:
        store.namespace_create("job-1", 1000, "job.1.guest")
        store.put("job.1.guest.output", "hi")
        with pytest.raises(KVSError) as info:
            store.namespace_create("job-1", 1000, "job.1.guest")
        assert info.value.errnum == errno.EEXIST
    with Store(path) as store:
        assert store.namespaces() == [Namespace("job-1", 1000, "job.1.guest")]
        assert store.namespace("job-1").prefix == "job.1.guest"
        assert store.namespace_remove("job-1") is True
        assert store.namespace_remove("job-1") is False
    with Store(path) as store:
        assert store.namespaces() == []
        with pytest.raises(KVSError, match='namespace "job-1": was removed') as info:
            store.namespace("job-1")
        assert info.value.errnum == errno.ENOTSUP
        assert store.get("job.1.guest.output") == "hi"
        with pytest.raises(KVSError, match='namespace "job-2": does not exist'):
            store.namespace("job-2")
        store.namespace_create("job-1", 1001, "job.1.guest")  # a removed name may come back
        assert store.namespace("job-1").owner == 1001


@pytest.mark.parametrize(
    ("name", "owner", "prefix", "errnum_"),
    [
        ("primary", 0, "x", errno.EEXIST),
        ("", 0, "x", errno.EINVAL),
        ("a b", 0, "x", errno.EINVAL),
        ("n", -1, "x", errno.EINVAL),
        ("n", "0", "x", errno.EINVAL),
        ("n", 0, ".", errno.EINVAL),
        ("n", 0, "a..b", errno.EINVAL),
    ],
)
def test_namespace_create_refuses(
    store: Store, name: str, owner: int, prefix: str, errnum_: int
) -> None:
    with pytest.raises(KVSError) as info:
        store.namespace_create(name, owner, prefix)
    assert info.value.errnum == errnum_
    assert store.namespaces() == []


def test_primary_cannot_be_removed(store: Store) -> None:
    assert errnum(store, "namespace_remove", "primary") == errno.ENOTSUP


# --- the database file -------------------------------------------------------------------------


def test_data_survives_reopening_in_wal_mode(path: Path) -> None:
    with Store(path) as store:
        store.put("a", "1")
        mode = store._conn.execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    with Store(path, sync="full") as store:
        assert store.get("a") == "1"
        assert store._conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL


def test_bad_sync_mode(path: Path) -> None:
    with pytest.raises(StoreError, match=r"kvs\.sync: must be one of off, normal, full, got 'x'"):
        Store(path, sync="x")


def test_bad_journal_mode_names_the_setting(path: Path) -> None:
    with pytest.raises(StoreError, match=r"kvs\.journal_mode: must be one of wal, memory"):
        Store(path, journal="delete")
    with pytest.raises(StoreError, match="rolled back, which needs a journal"):
        Store(path, journal="off")


def test_memory_journal_has_no_wal_and_still_rolls_back(path: Path) -> None:
    with Store(path, journal="memory", sync="off") as store:
        store.put("a", "1")
        store.put("d.x", "2")
        assert store._conn.execute("PRAGMA journal_mode").fetchone()[0] == "memory"
        assert not store.wal
        with pytest.raises(KVSError, match="cannot append to a directory"):
            store.apply([("put", "b", "3"), ("append", "d", "x")])  # the put is undone
        assert store.ls() == {"a": "val", "d": "dir"}
        assert store.checkpoint() == 0
    assert not Path(f"{path}-wal").exists()
    with Store(path) as again:  # reopened durable: the data is there, in WAL mode again
        assert again.get("a") == "1"
        assert again.wal


def test_a_held_transaction_groups_commits_until_released(path: Path) -> None:
    with Store(path, journal="memory", sync="off") as store:
        store.hold()
        store.put("a", "1")
        store.append("b", "x")
        assert store._conn.in_transaction  # both inside the one held transaction
        assert store.get("a") == "1"  # and read back from it
        store.release()
        assert not store._conn.in_transaction
        store.hold()
        store.put("c", "3")  # committed by close
    with Store(path) as again:
        assert again.ls() == {"a": "val", "b": "val", "c": "val"}


def test_a_crash_safe_store_logs_what_it_holds_and_empties_the_log_at_commit(
    store: Store, path: Path
) -> None:
    redo = Path(f"{path}-redo")
    store.hold()
    sizes = []
    for key in ("a", "b"):
        store.put(key, "1")  # a savepoint of the held transaction, and a record
        sizes.append(redo.stat().st_size)
    assert store._conn.in_transaction
    assert 0 < sizes[0] < sizes[1]
    store.release()
    assert not store._conn.in_transaction
    assert redo.stat().st_size == 0
    store.close()
    assert not redo.exists()  # a clean close leaves no log


def test_a_second_opener_is_refused(store: Store, path: Path) -> None:
    with pytest.raises(StoreError, match="in use by another process"):
        Store(path)


def test_the_lock_is_given_up_on_close(path: Path) -> None:
    Store(path).close()
    with Store(path) as again:
        again.put("a", "1")  # opened: nobody holds the lock any more
        assert again.get("a") == "1"


def test_commits_never_checkpoint_by_themselves(store: Store, path: Path) -> None:
    for i in range(50):
        store.put(f"k{i}", "x" * 20000)  # two pages a commit: SQLite's default would copy at 1000
    wal = Path(f"{path}-wal")
    assert wal.stat().st_size > 50 * PAGE_SIZE
    assert store.checkpoint() == 0  # everything copied
    assert store.get("k49") == "x" * 20000


def test_a_checkpoint_runs_beside_commits_from_another_thread(store: Store, path: Path) -> None:
    failures: list[BaseException] = []
    stop = threading.Event()

    def checkpoints() -> None:
        while not stop.is_set():
            try:
                store.checkpoint()
            except BaseException as exc:  # reported below
                failures.append(exc)
                return

    thread = threading.Thread(target=checkpoints)
    thread.start()
    try:
        for i in range(300):
            with store.transaction():
                store.append("log", f"{i}\n")
                store.put(f"v.{i}", str(i))
    finally:
        stop.set()
        thread.join()
    assert failures == []
    assert store.get("log") == "".join(f"{i}\n" for i in range(300))
    store.close()
    with Store(path) as again:
        assert again.get("v.299") == "299"


def test_a_newer_schema_is_refused(path: Path) -> None:
    Store(path).close()
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(StoreError, match=r"schema version 2 is newer than this pflux understands"):
        Store(path)


def test_someone_elses_database_is_refused(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE t (x)")
    db.close()
    with pytest.raises(StoreError, match=f"{path}: not a pflux KVS database"):
        Store(path)


def test_a_file_that_is_not_a_database_is_corrupt(path: Path) -> None:
    path.write_bytes(b"this is not SQLite, not even close" * 200)
    with pytest.raises(StoreError, match=f"{path}: the KVS database is corrupt"):
        Store(path)


@pytest.mark.parametrize("journal", ["wal", "memory"])
def test_what_a_change_removes_is_not_zeroed(path: Path, journal: str) -> None:
    """Zeroing is a write for each append (its chunk is rewritten) that a file private to
    its owner does not need, whatever SQLite was built to do."""
    with Store(path, journal=journal) as s:
        assert s._conn.execute("PRAGMA secure_delete").fetchone()[0] == 0


def test_a_damaged_page_fails_quick_check(path: Path) -> None:
    with Store(path) as store:
        store.apply([(PUT, f"k.{i:05d}", "v" * 500) for i in range(400)])
    raw = bytearray(path.read_bytes())
    assert len(raw) > 4 * PAGE_SIZE
    # page 3, the root of the kv b-tree (page 2 is auto-vacuum's pointer map): overwrite
    # its cell pointers
    page = 2 * PAGE_SIZE
    raw[page + 12 : page + 64] = b"\xff" * 52
    path.write_bytes(bytes(raw))
    with pytest.raises(StoreError, match=f"{path}: the KVS database is corrupt") as info:
        Store(path)
    assert "page 3" in str(info.value)
    assert "move it aside" in str(info.value)


def test_a_clean_close_spares_the_next_open_its_quick_check(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Store(path) as store:
        store.put("kept", "1")
    marker = Path(f"{path}.state").read_bytes()
    assert marker.startswith(b"done\n")
    size, mtime = (int(n) for n in marker.split(b"\n")[1].split())
    assert (size, mtime) == (path.stat().st_size, path.stat().st_mtime_ns)
    statements = traced_opens(monkeypatch)
    with Store(path) as store:
        assert store.get("kept") == "1"
    assert not [sql for sql in statements if "quick_check" in sql]
    assert Path(f"{path}.state").read_bytes().startswith(b"done\n")


def crashed_closing(path: Path) -> None:
    """A crash after the marker said ``shut``, before it said ``done``."""
    with Path(f"{path}.state").open("r+b") as f:
        f.write(b"shut\n")


def touched(path: Path) -> None:
    """The file written after its clean close (its time moves on; the size may not)."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1))


@pytest.mark.parametrize("how", [crashed_closing, touched])
def test_a_file_not_left_by_a_clean_close_gets_its_quick_check(
    path: Path, monkeypatch: pytest.MonkeyPatch, how: Any
) -> None:
    with Store(path) as store:
        store.put("kept", "1")
    how(path)
    statements = traced_opens(monkeypatch)
    with Store(path) as store:
        assert store.get("kept") == "1"
    assert [sql for sql in statements if "quick_check" in sql]


class FailingCommit:
    """A connection whose COMMIT fails, as on a full or failing disk."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        if sql == "COMMIT":
            raise sqlite3.OperationalError("disk I/O error")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self._conn, name)


def test_a_failed_commit_raises_store_error_and_keeps_nothing(store: Store) -> None:
    store.put("kept", "1")
    real = store._conn
    store._conn = FailingCommit(real)  # type: ignore[assignment]
    with pytest.raises(StoreError, match="transaction failed: disk I/O error") as info:
        store.put("lost", "2")
    assert info.value.errnum == errno.EIO
    store._conn = real
    assert not real.in_transaction
    assert list(store.walk()) == [("kept", "1")]


CRASHING_WRITER = """
import os, sys
from pflux.kvs.store import Store
store = Store(sys.argv[1])
for i in range(200):
    store.put(f"k.{i}", "x" * 4000)
os._exit(0)  # a crash: no checkpoint, no close, the WAL left as it is
"""


def test_a_store_opened_after_a_crash_empties_the_wal_into_the_database(path: Path) -> None:
    """So that crash after crash the WAL, and the check of it at each start, stay bounded."""
    subprocess.run([sys.executable, "-c", CRASHING_WRITER, str(path)], check=True)
    wal = Path(f"{path}-wal")
    assert wal.stat().st_size > 200 * 4000
    with Store(path) as store:
        assert wal.stat().st_size == 0
        assert store.get("k.199") == "x" * 4000


# --- empty directories ------------------------------------------------------------------------


def test_mkdir_makes_an_empty_directory_that_reads_skip_the_marker_of(store: Store) -> None:
    store.apply([("mkdir", "e.d", None)])
    assert store.ls("e") == {"d": "dir"}
    assert store.ls("e.d") == {}
    assert errnum(store, "get", "e.d") == errno.EISDIR
    assert errnum(store, "get", "e.d.x") == errno.ENOENT
    assert list(store.walk("e")) == []
    store.put("e.d.x", "1")
    assert store.ls("e.d") == {"x": "val"}
    store.unlink("e.d.x")
    assert store.ls("e.d") == {}  # it stays, as a directory made with mkdir does in flux
    store.unlink("e.d")
    assert errnum(store, "ls", "e.d") == errno.ENOENT


def test_mkdir_replaces_a_value_or_a_directory(store: Store) -> None:
    store.put("m.v", "1")
    store.put("m.d.x", "2")
    changes = store.apply([("mkdir", "m.v", None), ("mkdir", "m.d", None)], {"m.v", "m.d.x"})
    assert changes == [("m.v", UNLINK, None), ("m.d.x", UNLINK, None)]
    assert store.ls("m") == {"d": "dir", "v": "dir"}
    assert store.ls("m.d") == {}
    assert store.ls("m.v") == {}
    store.put("m.v", "3")  # a value replaces it in turn
    assert store.get("m.v") == "3"


def test_mkdir_takes_no_value(store: Store) -> None:
    with pytest.raises(KVSError, match=r"ops\[0\]: the value of mkdir must be null"):
        store.apply([("mkdir", "n.d", "x")])
    with pytest.raises(KVSError, match=r"expected put, append, unlink or mkdir"):
        store.apply([("link", "n.d", None)])


# --- symbolic links ----------------------------------------------------------------------------


def test_a_link_is_listed_followed_by_resolve_and_kept_across_a_reopen(path: Path) -> None:
    with Store(path) as store:
        store.put("l.target.x", "1")
        store.apply([("symlink", "l.link", link_value("l.target", None, "l.target"))])
        store.apply([("symlink", "l.loop", link_value("l.loop", None, "l.loop"))])
        assert store.ls("l") == {"link": "link", "loop": "link", "target": "dir"}
        assert store.resolve("l.link.x") == "l.target.x"
        assert store.resolve("l.link", last=False) == "l.link"
        assert store.readlink("l.link") == {"target": "l.target"}
        assert list(store.walk("l")) == [("l.target.x", "1")]
        with pytest.raises(KVSError, match="too many levels of symbolic links"):
            store.resolve("l.loop.x")
        assert errnum(store, "readlink", "l.target") == errno.EINVAL
        assert errnum(store, "readlink", "l.nope") == errno.ENOENT
    with Store(path) as store:
        assert store.resolve("l.link.x") == "l.target.x"
        store.put("l.link", "a value now")  # a write to the link replaces it
        assert store.resolve("l.link.x") == "l.link.x"
        assert store.get("l.link") == "a value now"
        store.unlink("l")
        assert not store.links


def test_a_failed_commit_leaves_the_links_as_they_were(store: Store) -> None:
    store.apply([("symlink", "f.link", link_value("t", None, "t"))])
    store.put("dd.x", "1")
    with store.transaction():  # the service's turn: the commit is a savepoint in it
        with pytest.raises(KVSError, match="cannot append to a directory"):
            store.apply([("unlink", "f", None), ("append", "dd", "x")])  # after the unlink
        assert store.resolve("f.link.y") == "t.y"
    with pytest.raises(KVSError, match="made by the kvs service"):
        store.apply([("put", "g", "1"), ("symlink", "g.link", "not json")])
    assert store.resolve("f.link.y") == "t.y"
    assert errnum(store, "get", "g") == errno.ENOENT


def test_a_link_made_with_new_keys_in_one_commit_is_a_link(store: Store) -> None:
    store.apply(
        [("put", "n.dir.v", "1"), ("symlink", "n.link", link_value("n.dir", None, "n.dir"))]
    )
    assert store.ls("n") == {"dir": "dir", "link": "link"}
    assert store.resolve("n.link.v") == "n.dir.v"
