"""RFC 16's namespaces: a name for the keys below a prefix, writable by its owner.

A namespace is a row of the ``namespace`` table, kept in memory too; removing one
keeps its keys, read-only, and the row (marked removed) until its prefix's
directory is unlinked (``SQL_NS_FORGET``, run by the store when it removes a
directory: a purged job's guest namespace).
"""

from __future__ import annotations

import errno
from pathlib import Path
from typing import NamedTuple

from pflux.kvs.database import Database, reading
from pflux.kvs.keys import PRIMARY, KVSError, check_key, check_name, quote

SQL_NS_LIVE = "SELECT name, owner, prefix FROM namespace WHERE removed = 0 ORDER BY name"
SQL_NS_REMOVED = "SELECT 1 FROM namespace WHERE name = ? AND removed = 1"
SQL_NS_CREATE = """INSERT OR REPLACE INTO namespace (name, owner, prefix, removed)
    VALUES (?, ?, ?, 0)"""
SQL_NS_REMOVE = "UPDATE namespace SET removed = 1 WHERE name = ? AND removed = 0"
SQL_NS_FORGET = """DELETE FROM namespace
    WHERE removed = 1 AND (prefix = ?3 OR (prefix >= ?1 AND prefix < ?2))"""


class Namespace(NamedTuple):
    """A namespace: a name for the keys below ``prefix``, writable by ``owner``."""

    name: str
    owner: int
    prefix: str


class Namespaces(Database):
    """The database's namespace table, and the namespaces that exist, by name."""

    def __init__(
        self, path: str | Path, *, sync: str = "normal", journal: str = "wal", fresh: bool = False
    ) -> None:
        self._namespaces: dict[str, Namespace] = {}
        super().__init__(path, sync=sync, journal=journal, fresh=fresh)

    def _reload(self) -> None:
        super()._reload()
        self._namespaces = {
            name: Namespace(name, owner, prefix)
            for name, owner, prefix in self._conn.execute(SQL_NS_LIVE)
        }

    def namespaces(self) -> list[Namespace]:
        """The namespaces that exist (not removed), by name."""
        return sorted(self._namespaces.values())

    @reading
    def namespace(self, name: str) -> Namespace:
        """The namespace called ``name``; KVSError ENOTSUP if there is none."""
        ns = self._namespaces.get(name)
        if ns is not None:
            return ns
        if self._conn.execute(SQL_NS_REMOVED, (name,)).fetchone():
            raise KVSError(
                errno.ENOTSUP, f"namespace {quote(name)}: was removed (its keys are read-only now)"
            )
        raise KVSError(errno.ENOTSUP, f"namespace {quote(name)}: does not exist")

    def namespace_create(self, name: str, owner: int, prefix: str) -> Namespace:
        """Create a namespace rooted at ``prefix`` (its keys, if any, are kept)."""
        check_name(name)
        if type(owner) is not int or owner < 0:
            raise KVSError(
                errno.EINVAL, f"namespace {quote(name)}: owner must be a userid, got {quote(owner)}"
            )
        check_key(prefix)
        if name == PRIMARY or name in self._namespaces:
            raise KVSError(errno.EEXIST, f"namespace {quote(name)}: already exists")
        with self.transaction():
            self._conn.execute(SQL_NS_CREATE, (name, owner, prefix))
            ns = self._namespaces[name] = Namespace(name, owner, prefix)
            self._note("c", name, owner, prefix)
        return ns

    def namespace_remove(self, name: str) -> bool:
        """Remove a namespace, keeping its keys; False if it did not exist."""
        if name == PRIMARY:
            raise KVSError(errno.ENOTSUP, 'namespace "primary": cannot be removed')
        if name not in self._namespaces:
            return False
        with self.transaction():
            self._conn.execute(SQL_NS_REMOVE, (name,))
            del self._namespaces[name]
            self._note("r", name)
        return True
