"""The store against a dict model: random put/append/unlink/commit/get/ls/walk/reopen sequences,
held transactions and crashes."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from pflux.kvs.keys import KVSError
from pflux.kvs.store import APPEND, CHUNK, PUT, UNLINK, Change, Op, Store

# names that sort just before and after the '.' separator, to stress directory ranges
COMPONENTS = ("a", "b", "a-", "a0")
keys = st.lists(st.sampled_from(COMPONENTS), min_size=1, max_size=3).map(".".join)
texts = st.one_of(
    st.text(alphabet="xy\n√", max_size=6),
    st.integers(CHUNK - 10, CHUNK + 10).map(lambda n: "z" * n),  # across a chunk boundary
)


def ops(keys: st.SearchStrategy[str]) -> st.SearchStrategy[Op]:
    return st.one_of(
        st.tuples(st.just(PUT), keys, texts),
        st.tuples(st.just(APPEND), keys, texts),
        st.tuples(st.just(UNLINK), keys, st.none()),
    )


class Model:
    """What the store should hold: values by key; directories are implied."""

    def __init__(self, values: dict[str, str] | None = None) -> None:
        self.values: dict[str, str] = dict(values or {})

    def below(self, key: str) -> list[str]:
        return [k for k in self.values if k.startswith(key + ".")]

    def ancestors(self, key: str) -> list[str]:
        parts = key.split(".")
        return [".".join(parts[:i]) for i in range(1, len(parts))]

    def apply(self, op: Op) -> list[Change]:
        """Apply ``op``; return the changes a watcher of every key would see."""
        kind, key, value = op
        removed = [(k, UNLINK, None) for k in [key, *sorted(self.below(key))] if k in self.values]
        if kind == UNLINK:
            for k, _, _ in removed:
                del self.values[k]
            return removed
        assert value is not None
        if kind == APPEND and key in self.values:
            self.values[key] += value
            return [(key, APPEND, value)] if value else []
        if kind == APPEND and self.below(key):
            raise KVSError(errno.EISDIR, "directory")
        if kind == PUT and key in self.values:
            removed = []
        removed += [(k, UNLINK, None) for k in self.ancestors(key) if k in self.values]
        for k, _, _ in removed:
            del self.values[k]
        self.values[key] = value
        return [*removed, (key, kind, value)]

    def get(self, key: str) -> str | int:
        if key in self.values:
            return self.values[key]
        if self.below(key):
            return errno.EISDIR
        if any(a in self.values for a in self.ancestors(key)):
            return errno.ENOTDIR
        return errno.ENOENT

    def ls(self, key: str) -> dict[str, str] | int:
        if key in self.values:
            return errno.ENOTDIR
        prefix = "" if key == "." else key + "."
        entries: dict[str, str] = {}
        for k in self.values:
            if k.startswith(prefix):
                name, dot, _ = k[len(prefix) :].partition(".")
                entries[name] = "dir" if dot else "val"
        if not entries and key != ".":
            return (
                errno.ENOTDIR
                if any(a in self.values for a in self.ancestors(key))
                else errno.ENOENT
            )
        return dict(sorted(entries.items()))


class Abandoned(Exception):
    """Raised to roll a transaction back."""


class StoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="pflux-kvs-model-"))
        self.store = Store(self.dir / "kvs.sqlite")
        self.model = Model()
        self.seen: set[str] = set()

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.dir)

    def related(self) -> set[str]:
        """The keys used so far, those above them and one below each."""
        related = set(self.seen)
        for key in self.seen:
            related.update(self.model.ancestors(key))
            related.add(key + ".a")
        return related

    def keys(self) -> st.SearchStrategy[str]:
        """Random keys, or keys related to those used so far."""
        related = self.related()
        return st.one_of(keys, st.sampled_from(sorted(related))) if related else keys

    @rule(data=st.data())
    def one_op(self, data: st.DataObject) -> None:
        self.commit([data.draw(ops(self.keys()))])

    @rule(data=st.data())
    def many_ops(self, data: st.DataObject) -> None:
        self.commit(data.draw(st.lists(ops(self.keys()), min_size=2, max_size=5)))

    @rule(data=st.data(), abandon=st.booleans())
    def one_turn(self, data: st.DataObject, abandon: bool) -> None:
        """Commits sharing one transaction, as the service applies a loop turn's: each is
        atomic on its own; abandoning the transaction undoes them all."""
        before = self.model
        commits = st.lists(ops(self.keys()), min_size=1, max_size=5)
        with contextlib.suppress(Abandoned), self.store.transaction():
            for batch in data.draw(st.lists(commits, min_size=2, max_size=4)):
                self.commit(batch)
            if abandon:
                raise Abandoned
        if abandon:
            self.model = before

    def commit(self, batch: list[Op]) -> None:
        self.seen.update(op[1] for op in batch)
        trial = Model(self.model.values)
        expected: list[Change] = []
        try:
            for op in batch:
                expected += trial.apply(op)
        except KVSError as exc:
            with_error = exc.errnum
        else:
            with_error = 0
        watched = self.related()
        try:
            changes = self.store.apply(batch, watched)
        except KVSError as exc:
            got_error = exc.errnum
        else:
            got_error = 0
        assert got_error == with_error
        if not got_error:
            assert changes == [c for c in expected if c[0] in watched]
            self.model = trial

    @rule(data=st.data())
    def get(self, data: st.DataObject) -> None:
        key = data.draw(self.keys())
        try:
            got: str | int = self.store.get(key)
        except KVSError as exc:
            got = exc.errnum
        assert got == self.model.get(key)

    @rule(data=st.data())
    def ls(self, data: st.DataObject) -> None:
        key = data.draw(st.one_of(st.just("."), self.keys()))
        try:
            got: dict[str, str] | int = self.store.ls(key)
        except KVSError as exc:
            got = exc.errnum
        assert got == self.model.ls(key)

    @rule(data=st.data(), suffix=st.one_of(st.none(), st.sampled_from(COMPONENTS)))
    def walk(self, data: st.DataObject, suffix: str | None) -> None:
        key = data.draw(self.keys())
        if key in self.model.values:
            return
        expected = sorted(
            (k, v)
            for k, v in self.model.values.items()
            if k.startswith(key + ".") and (suffix is None or k.rsplit(".", 1)[-1] == suffix)
        )
        assert list(self.store.walk(key, suffix)) == expected

    @precondition(lambda self: bool(self.model.values))
    @rule()
    def reopen(self) -> None:
        self.store.close()
        self.store = Store(self.dir / "kvs.sqlite")

    @rule()
    def hold(self) -> None:
        """What the service does: later turns are savepoints of one transaction, each in
        the redo log before it ends."""
        self.store.hold()

    @rule()
    def release(self) -> None:
        self.store.release()

    @rule()
    def crash(self) -> None:
        """The process dies (kill -9): the transaction held is lost with it, the files stay
        as they are; what the store said it applied is there once it is opened again."""
        store = self.store
        # the last connection to close would copy the WAL in and remove it: a dead
        # process leaves it, so another connection outlives the store's
        with contextlib.closing(sqlite3.connect(store.path)) as keeper:
            keeper.execute("SELECT 1 FROM root").fetchall()
            if store._redo is not None:
                store._redo.close()
            if store._checkpointer is not None:
                store._checkpointer.close()
            store._conn.close()  # a transaction left open is not committed
            os.close(store._lock)
            self.store = Store(self.dir / "kvs.sqlite")

    @invariant()
    def everything_matches(self) -> None:
        assert list(self.store.walk()) == sorted(self.model.values.items())


TestStoreModel = StoreMachine.TestCase
TestStoreModel.settings = settings(max_examples=50, stateful_step_count=30, deadline=None)
