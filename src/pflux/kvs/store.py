"""The KVS store: RFC 16's hierarchical keys in one SQLite table.

Synchronous and free of asyncio, so it can be tested and benchmarked alone; the
service drives it from the event loop. The database's life (opening, locking,
transactions, checkpoints) is ``pflux.kvs.database``'s, the namespace table
``pflux.kvs.namespaces``'s; ``Store`` is both, and the keys.

Values are text, stored as chunks ``(leaf, key, seq, data)`` clustered by the
key's last component, so every ``eventlog`` is one range of the table.
Directories are implicit, but for one that was made empty (``mkdir``): its
marker is a row at ``DIR.<NUL>`` (``MARK``), a key no client can name, which
reads skip. A symbolic link (RFC 11's ``symlink``) is a row at ``KEY.<SOH>``
(``LINK``) holding its target as JSON; the links are also kept in memory
(``_links``, a few), for ``resolve`` to follow them without a query. A put
writes its value as one chunk, or pieces of ``PIECE`` characters if longer; an
append grows the key's last chunk up to ``CHUNK`` characters, then starts a
new one; the store remembers which values have more than one chunk
(``_long``). Directories are implicit, and ``put`` and ``append`` keep the
invariant that no value has anything below it. Removing a directory forgets
the removed namespaces rooted in it, and marks the pages freed for
``reclaim``.
"""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from operator import itemgetter
from pathlib import Path
from typing import Any

import orjson

from pflux.kvs.database import CACHE_KIB, StoreError, reading
from pflux.kvs.keys import ROOT, KVSError, check_component, check_key, quote
from pflux.kvs.namespaces import SQL_NS_FORGET, Namespaces
from pflux.spec.kvs_keys import KEY_PATTERN

CHUNK = 4000  # characters; an append rewrites at most this much (and its overflow pages)
# characters of a put's value per row: SQLite copies a bound value, and again into its
# record, so a long value (a jobspec near its limit) is written a piece at a time, through
# a cache of LONG_CACHE_KIB: its pages go to the WAL as they fill it, not held to the commit
PIECE = 1 << 20
LONG_CACHE_KIB = 1024
_DIRS_MAX = 65536  # directories remembered to skip the ancestor check
_LONG_MAX = 65536  # values remembered to have outgrown their first chunk

# --- SQL ---------------------------------------------------------------------------------

# one value: ?1 key, ?2 its last component
SQL_GET = "SELECT data FROM kv WHERE leaf = ?2 AND key = ?1 ORDER BY seq"
SQL_HAS_VALUE = "SELECT 1 FROM kv WHERE leaf = ?2 AND key = ?1 LIMIT 1"
SQL_CHUNKS = "SELECT seq, data FROM kv WHERE leaf = ?2 AND key = ?1 AND seq > ?3 ORDER BY seq"
SQL_INSERT = "INSERT INTO kv (leaf, key, seq, data) VALUES (?2, ?1, ?4, ?3)"
SQL_INSERT_WHOLE = "INSERT INTO kv (leaf, key, seq, data) VALUES (?2, ?1, 0, ?3)"  # one chunk
SQL_DELETE_VALUE = "DELETE FROM kv WHERE leaf = ?2 AND key = ?1"
# grow the first chunk while it is small, the usual append (an eventlog of a few events):
# one lookup; rowcount 0 means a full chunk, or no such value
SQL_APPEND_FIRST = f"""UPDATE kv SET data = data || ?3 WHERE leaf = ?2 AND key = ?1
    AND seq = 0 AND length(data) < {CHUNK}"""
# grow the last chunk while it is small; rowcount 0 means a full chunk or no such value
SQL_APPEND_CHUNK = f"""UPDATE kv SET data = data || ?3 WHERE leaf = ?2 AND key = ?1
    AND seq = (SELECT max(seq) FROM kv WHERE leaf = ?2 AND key = ?1) AND length(data) < {CHUNK}"""
# the last chunk by the index (an aggregate with HAVING would read every chunk: O(value))
SQL_APPEND_NEW_CHUNK = """INSERT INTO kv (leaf, key, seq, data)
    SELECT ?2, ?1, seq + 1, ?3 FROM kv WHERE leaf = ?2 AND key = ?1 ORDER BY seq DESC LIMIT 1"""
# directories: everything between ?1 = "dir." and ?2 = "dir/"
SQL_HAS_RANGE = "SELECT 1 FROM kv WHERE key >= ? AND key < ? LIMIT 1"
# SQL_HAS_RANGE for each key of a JSON list (``_at_or_below``'s ranges), in one query
SQL_HAS_ANY_RANGE = """SELECT 1 FROM json_each(?) AS r
    WHERE EXISTS (SELECT 1 FROM kv WHERE key >= r.value AND key < r.value || '/') LIMIT 1"""
SQL_DELETE_RANGE = "DELETE FROM kv WHERE key >= ? AND key < ? RETURNING key"
# ls: the first key after a cursor, to skip a whole child directory per step
SQL_NEXT_AFTER = "SELECT key FROM kv WHERE key > ? AND key < ? ORDER BY key LIMIT 1"
SQL_NEXT_FROM = "SELECT key FROM kv WHERE key >= ? AND key < ? ORDER BY key LIMIT 1"
SQL_ROOT_NEXT_AFTER = "SELECT key FROM kv WHERE key > ? ORDER BY key LIMIT 1"
SQL_ROOT_NEXT_FROM = "SELECT key FROM kv WHERE key >= ? ORDER BY key LIMIT 1"
# every value: the rows of empty directories and links (``MARK``, ``LINK``: a last
# component no valid key has, below any printable one) are left out here, by SQLite
SQL_WALK = """SELECT key, data FROM kv WHERE key >= ? AND key < ? AND leaf > ' '
    ORDER BY key, seq"""
SQL_LINKS = "SELECT key, data FROM kv WHERE leaf = ?"
# with a suffix, one range of the clustered table
SQL_WALK_SUFFIX = """SELECT key, data FROM kv
    WHERE leaf = ?3 AND key >= ?1 AND key < ?2 ORDER BY leaf, key, seq"""

# --- kinds of change, as reported to watchers ---------------------------------------------

PUT = "put"
APPEND = "append"
UNLINK = "unlink"
MKDIR = "mkdir"
SYMLINK = "symlink"  # its value: the JSON the service makes (``link_value``)
OPS = (PUT, APPEND, UNLINK, MKDIR, SYMLINK)
_NULL_OPS = (UNLINK, MKDIR)  # the ops whose value is null
MARK = "\x00"  # the last component of an empty directory's marker (no valid key has it)
LINK = "\x01"  # the last component of a symbolic link's row (no valid key has it)
LINK_HOPS = 10  # links followed in one lookup at most (ELOOP past it), as flux-core

Op = tuple[str, str, str | None]
#: (key, PUT, new value) | (key, APPEND, appended text) | (key, UNLINK, None): the key is gone
Change = tuple[str, str, str | None]


def _range(key: str) -> tuple[str, str]:
    """The key range holding everything below ``key`` ('/' follows '.')."""
    return key + ".", key + "/"


def _at_or_below(key: str) -> tuple[str, str]:
    """The key range holding ``key`` and everything below it (and siblings such as
    ``key-x``, which only make a probe of it find something)."""
    return key, key + "/"


def _kl(key: str) -> tuple[str, str]:
    """``key`` and its last component, the parameters of a one-value statement."""
    return key, key[key.rfind(".") + 1 :]


def _pieces(rows: Iterable[tuple[str, str, str]]) -> Iterator[tuple[str, str, str, int]]:
    """``SQL_INSERT``'s rows for new values ``(key, leaf, value)``: one row for a value
    of at most ``PIECE`` characters, else one for each piece of it, in order."""
    for key, leaf, value in rows:
        if len(value) <= PIECE:
            yield key, leaf, value, 0
        else:
            for seq, start in enumerate(range(0, len(value), PIECE)):
                yield key, leaf, value[start : start + PIECE], seq


class Store(Namespaces):
    """One SQLite database holding every key and namespace of an instance."""

    def __init__(
        self, path: str | Path, *, sync: str = "normal", journal: str = "wal", fresh: bool = False
    ) -> None:
        """Open (or create) the database at ``path`` (``Database``)."""
        self._dirs: set[str] = set()  # known directories none of whose ancestors is a value
        # values known to have outgrown their first chunk, appended to by the last (a hint:
        # a key that is not here has its first chunk tried first, and is added if full)
        self._long: set[str] = set()
        self._links: dict[str, str] = {}  # a link's key: the primary key it points to
        super().__init__(path, sync=sync, journal=journal, fresh=fresh)

    def _reload(self) -> None:
        self._dirs.clear()
        self._load_links()
        super()._reload()

    def _replay(self, entry: list[Any]) -> None:
        """Make again a call the redo log holds (``Database._note``'s entries)."""
        kind, *args = entry
        if kind == "a":
            self.apply(*args)
        elif kind == "c":
            self.namespace_create(*args)
        elif kind == "r":
            self.namespace_remove(*args)
        elif kind == "v":
            self.count_commits(*args)
        else:
            super()._replay(entry)

    def _load_links(self) -> None:
        self._links = {
            key[: -len(LINK) - 1]: link_target(data)
            for key, data in self._conn.execute(SQL_LINKS, (LINK,))
        }

    # --- reads ------------------------------------------------------------------------------

    @reading
    def get(self, key: str) -> str:
        """The value at ``key``: KVSError ENOENT if nothing is there, EISDIR for a directory."""
        check_key(key, root=True)
        rows = self._conn.execute(SQL_GET, _kl(key)).fetchall()
        if rows:
            return rows[0][0] if len(rows) == 1 else "".join([row[0] for row in rows])
        if key == ROOT or self._is_dir(key):
            raise KVSError(errno.EISDIR, f"key {quote(key)}: is a directory")
        raise self._missing(key)

    @reading
    def chunks(self, key: str, after: int = -1, size: int = 1 << 20) -> list[tuple[int, str]]:
        """The value at ``key`` a piece at a time: its chunks after chunk ``after``, as
        ``(seq, text)``, about ``size`` characters of them (at least one); [] past the end.

        A long value (a job's output) is read this way rather than whole: pass the
        last seq returned to read on. The first piece (``after`` -1) raises ``get``'s
        errors. Only a value's last chunk ever grows (an append), so reading on
        after a commit sees the value as appended to, never rewritten.
        """
        check_key(key, root=True)
        cursor = self._conn.execute(SQL_CHUNKS, (*_kl(key), after))
        found: list[tuple[int, str]] = []
        held = 0
        for seq, data in cursor:
            found.append((seq, data))
            held += len(data)
            if held >= size:
                break
        cursor.close()
        if not found and after < 0:
            if key == ROOT or self._is_dir(key):
                raise KVSError(errno.EISDIR, f"key {quote(key)}: is a directory")
            raise self._missing(key)
        return found

    @property
    def links(self) -> bool:
        """Whether any symbolic link exists (else keys need no resolving)."""
        return bool(self._links)

    def resolve(self, key: str, *, last: bool = True) -> str:
        """``key`` with the links on its path followed (its last component too if
        ``last``): the primary key it names; ELOOP past ``LINK_HOPS`` links."""
        links = self._links
        if not links or key == ROOT:
            return key
        for _ in range(LINK_HOPS + 1):
            parts = key.split(".")
            for i in range(1, len(parts) + 1 if last else len(parts)):
                target = links.get(".".join(parts[:i]))
                if target is not None:
                    rest = ".".join(parts[i:])
                    key = (f"{target}.{rest}" if target != ROOT else rest) if rest else target
                    break
            else:
                return key
        raise KVSError(errno.ELOOP, f"key {quote(key)}: too many levels of symbolic links")

    @reading
    def readlink(self, key: str) -> dict[str, Any]:
        """The link at ``key``: ``{target, namespace?}`` as it was made; EINVAL for
        anything else, ENOENT for nothing."""
        row = self._conn.execute(SQL_GET, _kl(f"{key}.{LINK}")).fetchone()
        if row is not None:
            link: dict[str, Any] = orjson.loads(row[0])
            link.pop("key", None)
            return link
        if key == ROOT or self._conn.execute(SQL_HAS_RANGE, _at_or_below(key)).fetchone():
            raise KVSError(errno.EINVAL, f"key {quote(key)}: not a symbolic link")
        raise self._missing(key)

    @reading
    def ls(self, key: str = ROOT) -> dict[str, str]:
        """The entries of directory ``key``, ``{name: "dir", "val" or "link"}``, by name."""
        check_key(key, root=True)
        execute = self._conn.execute
        entries: dict[str, str] = {}
        if key == ROOT:
            lo, hi, start = "", "", 0
            after, from_ = SQL_ROOT_NEXT_AFTER, SQL_ROOT_NEXT_FROM
        else:
            lo, hi = _range(key)
            start = len(lo)
            after, from_ = SQL_NEXT_AFTER, SQL_NEXT_FROM
            if execute(SQL_HAS_VALUE, _kl(key)).fetchone():
                raise KVSError(errno.ENOTDIR, f"key {quote(key)}: not a directory")
        bounds: tuple[str, ...] = (lo,) if key == ROOT else (lo, hi)
        row = execute(from_, bounds).fetchone()
        found_any = row is not None
        while row is not None:
            found = row[0]
            dot = found.find(".", start)
            if dot < 0:
                if found[-1] != MARK:
                    entries[found[start:]] = "val"
                row = execute(after, (found, *bounds[1:])).fetchone()
            else:
                child = found[:dot]
                entries[child[start:]] = "link" if found[dot + 1 :] == LINK else "dir"
                row = execute(from_, (child + "/", *bounds[1:])).fetchone()
        if not found_any and key != ROOT:
            raise self._missing(key)
        return dict(sorted(entries.items()))

    @reading
    def walk(
        self, key: str = ROOT, suffix: str | None = None, *, after: str | None = None
    ) -> Iterator[tuple[str, str]]:
        """Every ``(key, value)`` below ``key`` in key order, in one range scan.

        With ``suffix``, only keys whose last component is ``suffix``; with
        ``after``, only keys after that one (to walk page by page, or from a
        key on; a value at ``key`` then yields nothing). Nothing below
        (or no such directory) yields nothing; a value at ``key`` is ENOTDIR.
        """
        check_key(key, root=True)
        if suffix is not None:
            check_component(suffix, "suffix")
        if key == ROOT:
            lo, hi = "", "\U0010ffff"
        else:
            if after is None and self._conn.execute(SQL_HAS_VALUE, _kl(key)).fetchone():
                raise KVSError(errno.ENOTDIR, f"key {quote(key)}: not a directory")
            lo, hi = _range(key)
        if after is not None:
            lo = max(lo, after + "\x00")  # the smallest key after ``after``, below ``key``
        if suffix is None:
            return self._joined(self._conn.execute(SQL_WALK, (lo, hi)))
        return self._joined(self._conn.execute(SQL_WALK_SUFFIX, (lo, hi, suffix)))

    @staticmethod
    def _joined(rows: Iterator[Any]) -> Iterator[tuple[str, str]]:
        """Join consecutive chunks of the same key."""
        prev: str | None = None
        parts: list[str] = []
        try:
            for key, data in rows:
                if key == prev:
                    parts.append(data)
                    continue
                if prev is not None:
                    yield prev, parts[0] if len(parts) == 1 else "".join(parts)
                prev = key
                parts = [data]
        except sqlite3.Error as exc:
            raise StoreError(f"kvs: reading the database failed: {exc}") from None
        if prev is not None:
            yield prev, parts[0] if len(parts) == 1 else "".join(parts)

    def _is_dir(self, key: str) -> bool:
        return self._conn.execute(SQL_HAS_RANGE, _range(key)).fetchone() is not None

    def _missing(self, key: str) -> KVSError:
        """ENOENT for ``key``, or ENOTDIR if a value stands where one of its directories would."""
        parts = key.split(".")
        for i in range(1, len(parts)):
            ancestor = ".".join(parts[:i])
            if self._conn.execute(SQL_HAS_VALUE, _kl(ancestor)).fetchone():
                return KVSError(
                    errno.ENOTDIR, f"key {quote(key)}: {quote(ancestor)} is not a directory"
                )
        return KVSError(errno.ENOENT, f"key {quote(key)}: not found")

    # --- writes -------------------------------------------------------------------------------

    def put(self, key: str, value: str) -> None:
        """Store ``value`` at ``key``, replacing whatever is there (a value or a directory)."""
        self.apply([(PUT, key, value)])

    def append(self, key: str, text: str) -> None:
        """Append ``text`` to the value at ``key``, creating it; EISDIR for a directory."""
        self.apply([(APPEND, key, text)])

    def unlink(self, key: str) -> None:
        """Remove ``key``, value or whole directory; nothing there is not an error."""
        self.apply([(UNLINK, key, None)])

    def apply(
        self, ops: Sequence[Op], watched: Collection[str] = (), *, checked: bool = False
    ) -> list[Change]:
        """Apply one commit's ops atomically, in order, inside the current transaction.

        Returns the changes to keys in ``watched``, in order. A bad op raises
        KVSError naming ``ops[i]`` and leaves the store as it was. ``checked``
        skips checking the ops' form, for callers that built them themselves.
        """
        valid = KEY_PATTERN.fullmatch
        for i, op in enumerate(() if checked else ops):
            # the common case in one expression; _op_error says what is wrong otherwise
            if not (
                type(op) in _SEQUENCES
                and len(op) == 3
                and (
                    (op[0] in _TEXT_OPS and type(op[2]) is str)
                    or (op[0] in _NULL_OPS and op[2] is None)
                )
                and type(op[1]) is str
                and valid(op[1])
            ):
                raise _op_error(i, op)
        changes: list[Change] = []
        if not ops:
            return changes
        if self._conn.in_transaction and not self._holding:  # the KVS's flush, or a replay
            self._apply_ops(ops, watched, changes)
            self._note("a", ops)
        else:
            with self.transaction():
                self._apply_ops(ops, watched, changes)
                self._note("a", ops)
        return changes

    def _apply_ops(
        self, ops: Sequence[Op], watched: Collection[str], changes: list[Change]
    ) -> None:
        """``apply``'s ops, checked, in the transaction open: all or none."""
        if len(ops) == 1:
            # a single op checks everything before it writes anything
            self._apply_one(0, ops[0], watched, changes)
            return
        self._conn.execute("SAVEPOINT kvs_commit")
        try:
            if not any(batched(ops, watched, changes) for batched in self._batched_ways(ops)):
                for i, op in enumerate(ops):
                    self._apply_one(i, op, watched, changes)
        except KVSError:
            self._conn.execute("ROLLBACK TO kvs_commit")
            self._conn.execute("RELEASE kvs_commit")
            self._dirs.clear()
            self._load_links()
            raise
        self._conn.execute("RELEASE kvs_commit")

    def _batched_ways(self, ops: Sequence[Op]) -> tuple[_Batched, ...]:
        """The ways of applying ``ops`` in a few statements that may fit them, likeliest
        first (each tries, and changes nothing where it does not fit).

        Appends alone are most often the job manager's, to values that exist; puts alone
        new keys; a mix is job-ingest's new keys with their first eventlog lines, or the
        job manager's lines where jobs end with their records beside them, told apart by
        whether the first append's directory is known.
        """
        kinds = set(map(_FIRST, ops))
        if APPEND not in kinds:
            return (self._insert_new,)
        if len(kinds) == 1:
            return (self._append_in_place, self._insert_new)
        key = next(op[1] for op in ops if op[0] == APPEND)
        if key[: key.rfind(".")] in self._dirs:
            return (self._append_and_insert, self._insert_new)
        return (self._insert_new, self._append_and_insert)

    def _append_in_place(
        self, ops: Sequence[Op], watched: Collection[str], changes: list[Change]
    ) -> bool:
        """job-manager's batches in a statement or two: appends (``ops`` are nothing else)
        that all grow an existing chunk.

        The first chunk for most (``SQL_APPEND_FIRST``), the last for those
        known to have more (``_long``). False (with nothing changed) if the
        ops are anything else, for the caller to apply one by one (which learns
        the values whose first chunk is full).
        """
        long = self._long
        last: list[tuple[str, str, str | None]] = []
        if long:
            first: list[tuple[str, str, str | None]] = []
            for _, key, value in ops:
                (last if key in long else first).append((key, key.rpartition(".")[2], value))
        else:
            first = [(key, key.rpartition(".")[2], value) for _, key, value in ops]
        executemany = self._conn.executemany
        if (first and executemany(SQL_APPEND_FIRST, first).rowcount != len(first)) or (
            last and executemany(SQL_APPEND_CHUNK, last).rowcount != len(last)
        ):
            self._conn.execute("ROLLBACK TO kvs_commit")
            return False
        if watched:
            changes += [(k, APPEND, v) for _, k, v in ops if v and k in watched]
        return True

    def _append_and_insert(
        self, ops: Sequence[Op], watched: Collection[str], changes: list[Change]
    ) -> bool:
        """Appends that grow existing values and new keys, each kind in a statement or
        two: the job manager's batches where jobs end (their eventlogs' last events, and
        each one's record beside them). Neither kind can touch the other's keys (an
        append here grows a value that exists, a new key has nothing at or below it,
        and no appended value may stand where the new keys' directories go), so their
        order between them changes nothing; the new keys may not be watched,
        so that what watchers hear keeps the ops' order. False, with nothing changed,
        for anything else."""
        appends = [op for op in ops if op[0] == APPEND]
        news = [op for op in ops if op[0] != APPEND]
        if not appends or not news or (watched and any(op[1] in watched for op in news)):
            return False
        heard = len(changes)
        if not self._append_in_place(appends, watched, changes):
            return False
        if self._insert_new(news, watched, changes, {op[1] for op in appends}):
            return True
        self._conn.execute("ROLLBACK TO kvs_commit")
        del changes[heard:]
        return False

    def _insert_new(
        self,
        ops: Sequence[Op],
        watched: Collection[str],
        changes: list[Change],
        appended: Collection[str] = (),
    ) -> bool:
        """New keys in one statement: job-ingest's batches, in directories not there yet,
        and the scheduler's, an R in each job's directory.

        Every op must put or append a key whose directory is either neither
        known nor found (one probe each), so that nothing is at the key or
        below it, or known, with nothing found at the key or below it (one
        probe each); no key may come twice or stand where another's
        directories go, nor any of ``appended`` (values the commit appended to,
        which one by one would make such a directory an EISDIR). False, with
        nothing changed, for anything else, for the caller to apply one by one.
        """
        known = self._dirs
        fresh: dict[str, str] = {}  # new directory -> the first key in it
        rows: list[tuple[str, str, str]] = []
        probes: list[str] = []  # keys at and below which nothing may be
        for kind, key, value in ops:
            parent, _, leaf = key.rpartition(".")
            if kind not in _NEW_OPS or value is None or not parent:
                return False
            if parent in known:  # no value above it: only the key's own range matters
                probes.append(key)
            elif parent not in fresh:
                probes.append(parent)  # a value at the directory or anything in it
                fresh[parent] = key
            rows.append((key, leaf, value))
        # the directories to be made: the new ones, and those above them not known
        above = self._new_ancestors(fresh)
        # no key may come twice, nor stand where a directory is to be made (a known
        # directory has values below it, which the probes find)
        keys = set(map(_FIRST, rows))
        if (
            len(keys) != len(rows)
            or not keys.isdisjoint(fresh)
            or not keys.isdisjoint(above)
            or (appended and not above.keys().isdisjoint(appended))
            or self._any_at_or_below(probes)
        ):
            return False
        # the probes found no value at the new directories themselves: only those above
        # them, less the other new directories, which their own probes found empty
        if watched and any(ancestor in watched for ancestor in above):
            firsts = set(fresh.values())
            for kind, key, value in ops:  # the changes in the order one by one would make them
                if key in firsts:
                    self._make_way(key[: key.rfind(".")], watched, changes, fresh)
                if key in watched:
                    changes.append((key, kind, value))
        else:
            doomed = [_kl(ancestor) for ancestor in above if ancestor not in fresh]
            if doomed:
                self._conn.executemany(SQL_DELETE_VALUE, doomed)
            self._remember_dirs(above)
            if watched:
                changes += [(key, kind, value) for kind, key, value in ops if key in watched]
        self._insert(rows)
        self._remember_dirs(fresh)
        return True

    def _any_at_or_below(self, keys: list[str]) -> bool:
        """Whether a value is at or below any of ``keys``: one query for all of them."""
        if len(keys) == 1:
            return self._conn.execute(SQL_HAS_RANGE, _at_or_below(keys[0])).fetchone() is not None
        try:
            listed = orjson.dumps(keys).decode()
        except orjson.JSONEncodeError:  # a key JSON cannot carry (lone surrogates): each alone
            execute = self._conn.execute
            return any(execute(SQL_HAS_RANGE, _at_or_below(key)).fetchone() for key in keys)
        return self._conn.execute(SQL_HAS_ANY_RANGE, (listed,)).fetchone() is not None

    def _new_ancestors(self, dirs: Iterable[str]) -> dict[str, None]:
        """The ancestors of ``dirs`` not known as directories (``dirs`` among them, where
        one holds another), shallowest first under each: where a value may stand that
        ``_make_way`` would remove, in the order it would remove them."""
        known = self._dirs
        found: dict[str, None] = {}
        for key in dirs:
            end = key.rfind(".")
            unknown = []  # deepest first
            while end > 0 and (ancestor := key[:end]) not in known and ancestor not in found:
                unknown.append(ancestor)
                end = key.rfind(".", 0, end)
            if unknown:  # most often none: a batch's new directories share a known parent
                found.update(dict.fromkeys(reversed(unknown)))
        return found

    def _apply_one(self, i: int, op: Op, watched: Collection[str], changes: list[Change]) -> None:
        kind, key, value = op
        kl = _kl(key)
        execute = self._conn.execute
        if kind == APPEND:
            assert value is not None
            if (key not in self._long and execute(SQL_APPEND_FIRST, (*kl, value)).rowcount) or (
                (
                    execute(SQL_APPEND_CHUNK, (*kl, value)).rowcount
                    or execute(SQL_APPEND_NEW_CHUNK, (*kl, value)).rowcount
                )
                and self._remember_long(key)
            ):
                if value and watched and key in watched:
                    changes.append((key, APPEND, value))
                return
            if key in self._dirs or self._is_dir(key):
                raise KVSError(
                    errno.EISDIR, f"ops[{i}]: key {quote(key)}: cannot append to a directory"
                )
            self._create(key, value, watched, changes)
            if watched and key in watched:
                changes.append((key, APPEND, value))
        elif kind == PUT:
            assert value is not None
            self._put_one(key, value, watched, changes)
        elif kind == MKDIR:
            # an empty directory, replacing whatever is there (a value goes by _make_way)
            self._remove_below(key, watched, changes)
            self._create(f"{key}.{MARK}", "", watched, changes)
        elif kind == SYMLINK:
            assert value is not None
            target = link_target(value)
            self._remove_below(key, watched, changes)
            self._create(f"{key}.{LINK}", value, watched, changes)
            self._links[key] = target
        elif execute(SQL_DELETE_VALUE, kl).rowcount:
            self._dirs.clear()  # its directory may be gone with it
            self._freed = True
            if watched and key in watched:
                changes.append((key, UNLINK, None))
        else:
            self._remove_below(key, watched, changes)

    def _put_one(
        self, key: str, value: str, watched: Collection[str], changes: list[Change]
    ) -> None:
        execute = self._conn.execute
        # one probe for a value at the key or anything below it (a sibling found
        # there only sends the put the long way)
        if key not in self._dirs and not execute(SQL_HAS_RANGE, _at_or_below(key)).fetchone():
            self._create(key, value, watched, changes)  # the usual put: a new key
        elif execute(SQL_DELETE_VALUE, _kl(key)).rowcount:
            self._insert([(*_kl(key), value)])
        else:
            self._remove_below(key, watched, changes)
            self._create(key, value, watched, changes)
        if watched and key in watched:
            changes.append((key, PUT, value))

    def _insert(self, rows: list[tuple[str, str, str]]) -> None:
        """Insert new values ``(key, leaf, value)``, a long one a piece at a time through
        a small cache (``PIECE``, ``LONG_CACHE_KIB``)."""
        execute = self._conn.execute
        if max(map(len, map(_VALUE, rows))) <= PIECE:
            self._conn.executemany(SQL_INSERT_WHOLE, rows)  # the usual: as they are
            return
        execute(f"PRAGMA cache_size = -{LONG_CACHE_KIB}")
        try:
            self._conn.executemany(SQL_INSERT, _pieces(rows))
        finally:
            execute(f"PRAGMA cache_size = -{CACHE_KIB}")

    def _remember_long(self, key: str) -> bool:
        """Note that ``key``'s value has more than its first chunk (True, for ``_apply_one``)."""
        if len(self._long) >= _LONG_MAX:
            self._long.clear()
        self._long.add(key)
        return True

    def _remove_below(self, key: str, watched: Collection[str], changes: list[Change]) -> None:
        """Remove the directory at ``key``, if there is one."""
        bounds = _range(key)
        if key not in self._dirs and self._conn.execute(SQL_HAS_RANGE, bounds).fetchone() is None:
            return  # the usual case, a new key: an index probe, no delete
        removed = self._conn.execute(SQL_DELETE_RANGE, bounds).fetchall()
        if removed:
            self._conn.execute(SQL_NS_FORGET, (*bounds, key))
            self._freed = True
            self._dirs.clear()
            if self._links:
                self._forget_links(row[0] for row in removed)
            if watched:
                for gone in sorted({row[0] for row in removed}):
                    if gone in watched:
                        changes.append((gone, UNLINK, None))

    def _forget_links(self, removed: Iterable[str]) -> None:
        end = len(LINK) + 1
        for gone in removed:
            if gone.endswith(LINK):
                self._links.pop(gone[:-end], None)

    def _create(
        self, key: str, value: str, watched: Collection[str], changes: list[Change]
    ) -> None:
        """Insert a new value at ``key`` (nothing is there), replacing any value above it."""
        self._make_way(key, watched, changes)
        self._insert([(*_kl(key), value)])

    def _make_way(
        self,
        key: str,
        watched: Collection[str],
        changes: list[Change],
        empty: Collection[str] = (),
    ) -> None:
        """Remove any value standing where ``key``'s directories go.

        Only the ancestors below the deepest known directory are looked at: a known
        directory has no value above it. A value removed to make way had nothing below
        it, so no known directory is affected. ``empty``: ancestors known to hold no
        value (probed), skipped.
        """
        dirs = self._dirs
        end = key.rfind(".")
        if end > 0 and key[:end] not in dirs:
            unknown = []  # deepest first
            while end > 0 and (ancestor := key[:end]) not in dirs:
                unknown.append(ancestor)
                end = key.rfind(".", 0, end)
            execute = self._conn.execute
            for ancestor in reversed(unknown):
                if ancestor in empty:
                    continue
                if execute(SQL_DELETE_VALUE, _kl(ancestor)).rowcount and ancestor in watched:
                    changes.append((ancestor, UNLINK, None))
            self._remember_dirs(unknown)

    def _remember_dirs(self, new: Collection[str]) -> None:
        """Add directories none of whose ancestors is a value, forgetting all at the limit."""
        if len(self._dirs) + len(new) > _DIRS_MAX:
            self._dirs.clear()
        self._dirs.update(new)


_SEQUENCES = (list, tuple)
_TEXT_OPS = (PUT, APPEND, SYMLINK)
_NEW_OPS = (PUT, APPEND)  # the ops that may make new keys in a statement (``_insert_new``)
_FIRST = itemgetter(0)  # an op's kind, a row's key
_VALUE = itemgetter(2)  # a row's (or an op's) value
_Batched = Callable[[Sequence[Op], Collection[str], list[Change]], bool]


def _op_error(i: int, op: object) -> KVSError:
    """What is wrong with ``ops[i]``, which failed the check in ``Store.apply``."""
    if not isinstance(op, list | tuple) or len(op) != 3:
        return KVSError(errno.EINVAL, f"ops[{i}]: must be [op, key, value]")
    kind, key, value = op
    if kind not in OPS:
        return KVSError(
            errno.EINVAL,
            f"ops[{i}]: unknown op {quote(kind)} (expected put, append, unlink or mkdir)",
        )
    if kind in _NULL_OPS and value is not None:
        return KVSError(errno.EINVAL, f"ops[{i}]: the value of {kind} must be null")
    if kind not in _NULL_OPS and type(value) is not str:
        return KVSError(
            errno.EINVAL, f"ops[{i}]: the value of {kind} must be a string, got {_type(value)}"
        )
    try:
        check_key(key)
    except KVSError as exc:
        return KVSError(errno.EINVAL, f"ops[{i}]: {exc.errstr}")
    raise AssertionError(f"ops[{i}] is valid")  # pragma: no cover - the check agrees


def _type(value: object) -> str:
    """A JSON-ish name for the type of ``value``, for error messages."""
    if value is None:
        return "null"
    return {bool: "boolean", int: "number", float: "number", list: "array", dict: "object"}.get(
        type(value), type(value).__name__
    )


def link_value(target: str, namespace: str | None, key: str) -> str:
    """A link's row: its ``target`` as given (in ``namespace``, None: the link's own),
    and ``key``, the primary key it names."""
    link: dict[str, str] = {"target": target, "key": key}
    if namespace is not None:
        link["namespace"] = namespace
    return orjson.dumps(link).decode()


def link_target(value: str) -> str:
    """The primary key a link's row names."""
    try:
        link = orjson.loads(value)
    except orjson.JSONDecodeError:
        link = None
    target = link.get("key") if isinstance(link, dict) else None
    if type(target) is not str:
        raise KVSError(errno.EINVAL, "symlink: a link's value must be made by the kvs service")
    return target
