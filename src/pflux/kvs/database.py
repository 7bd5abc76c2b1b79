"""The KVS's database file, from opening to closing: its lock, its marker, its schema,
its transactions and checkpoints; what it holds is the namespaces' (``namespaces``) and
the keys' (``store``).

A durable store is WAL with ``synchronous=NORMAL`` (``full`` for power loss),
owned by one instance (an exclusive ``flock`` on ``<db>.lock``), with
automatic checkpoints off: ``checkpoint`` runs a passive one on a connection
of its own, for the service to call from a thread. ``hold`` keeps one
transaction open across many, until ``release`` commits it: so a page that
many transactions write is written once. In a durable store each transaction
held so is a savepoint whose writes go to the redo log (``redo``) before it
ends, and opening the store applies what the log holds past the last commit;
with ``journal="memory"`` (an instance whose state is thrown away) the journal
stays in memory, the database is locked once, and a held transaction is all
there is. Removing keys frees pages, and ``reclaim`` gives them back to the
file system a step at a time (incremental auto-vacuum). Why each choice:
``docs/architecture.md``, "The KVS" and "Durability".
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from functools import wraps
from pathlib import Path
from typing import Any, ParamSpec, Self, TypeVar

from pflux.broker import lockfile, private
from pflux.errors import RPCError
from pflux.kvs import redo, wal
from pflux.kvs.keys import KVSError

log = logging.getLogger("pflux.kvs")

SCHEMA_VERSION = 1
APPLICATION_ID = 0x70666C78  # "pflx", so a stranger's database is recognised as such
# small pages: most transactions are a loop turn's few appends, and a commit writes every
# page it touched to the WAL; 4 KiB against 16 KiB: a simulated replay 29 s against 35 s,
# a dependency chain 1.66 ms against 1.91 ms a link, batched throughput no worse
PAGE_SIZE = 4096
CACHE_KIB = 32768
SYNC_MODES = ("off", "normal", "full")
JOURNAL_MODES = ("wal", "memory")
MARK_OPEN = b"open\n"  # the marker's states (see Database.marker), of one length
MARK_SHUT = b"shut\n"
MARK_DONE = b"done\n"  # followed by the closed file's stamp (``_stamp``)
BUSY_TIMEOUT = 5.0  # seconds; only the store's own checkpointer can hold a lock briefly
# free pages kept for new data rather than given back (8 MiB): purged jobs' pages are
# mostly taken again by the jobs that follow, and giving one back and growing the file
# again costs a write each way
RECLAIM_SLACK = 2048
WAL_SIZE_LIMIT = 16 << 20  # bytes past which an emptied WAL is cut back (checkpoint)
RESTART_FRAMES_LEFT = 256  # frames a passive checkpoint may leave for a truncating one
RECLAIM_STEP = 256  # pages given back per transaction at most (about 10 us each)
LARGE_VALUE = 1 << 20  # characters of a value whose turn is committed, not logged
AUTO_VACUUM_INCREMENTAL = 2

# --- SQL ---------------------------------------------------------------------------------

SQL_SCHEMA = (
    # clustered by last component, so that rows written together in job-manager's
    # batches (eventlogs) share pages, apart from the bigger J and jobspec of the same jobs
    """CREATE TABLE kv (
        leaf TEXT NOT NULL,
        key TEXT NOT NULL,
        seq INTEGER NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (leaf, key, seq)
    ) WITHOUT ROWID""",
    "CREATE INDEX kv_key ON kv (key, seq)",  # directories: key ranges
    """CREATE TABLE namespace (
        name TEXT PRIMARY KEY,
        owner INTEGER NOT NULL,
        prefix TEXT NOT NULL,
        removed INTEGER NOT NULL DEFAULT 0
    )""",
    f"PRAGMA user_version = {SCHEMA_VERSION}",
    f"PRAGMA application_id = {APPLICATION_ID}",
)
# a removed namespace is forgotten with its keys: its prefix's directory unlinked (a purged
# job's guest namespace), by prefix, so each needs an index (made at open, if missing)
SQL_NS_PREFIX_INDEX = "CREATE INDEX IF NOT EXISTS namespace_prefix ON namespace (prefix)"
# the root's version (flux's root sequence number): the commits stored since the database
# was made; one row, made at open if missing (a database from before counts from 0)
SQL_ROOT_TABLE = "CREATE TABLE IF NOT EXISTS root (version INTEGER NOT NULL)"
SQL_ROOT_ROW = "INSERT INTO root (version) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM root)"
SQL_ROOT_GET = "SELECT version FROM root"
SQL_ROOT_SET = "UPDATE root SET version = ?"
# the number of the last redo log record the database holds; one row, made at open
SQL_REDO_TABLE = "CREATE TABLE IF NOT EXISTS redo (lsn INTEGER NOT NULL)"
SQL_REDO_ROW = "INSERT INTO redo (lsn) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM redo)"
SQL_REDO_GET = "SELECT lsn FROM redo"
SQL_REDO_SET = "UPDATE redo SET lsn = ?"
# one step of the pragma gives back one page; Python's sqlite3 runs one step per execute
SQL_RECLAIM_PAGE = "PRAGMA incremental_vacuum(1)"

P = ParamSpec("P")
R = TypeVar("R")


class StoreError(RPCError):
    """The database failed (EIO): at start-up, or in a transaction, fatal for the instance."""

    def __init__(self, message: str) -> None:
        super().__init__(errno.EIO, message)


class StoreFull(StoreError):
    """The disk (or the quota) is full (ENOSPC): the transaction was rolled back, and one
    may succeed once there is space again."""

    def __init__(self, message: str) -> None:
        RPCError.__init__(self, errno.ENOSPC, message)


def failed(path: Path, what: str, exc: sqlite3.Error) -> StoreError:
    """The StoreError for a failed transaction: StoreFull when SQLite found no space."""
    message = f"{path}: {what}: {exc}"
    if getattr(exc, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_FULL:
        return StoreFull(f"{message} (no space left on device)")
    return StoreError(message)


def reading(method: Callable[P, R]) -> Callable[P, R]:
    """Report a failure of SQLite while reading as StoreError, not as a bug."""

    @wraps(method)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except sqlite3.Error as exc:
            raise StoreError(f"kvs: reading the database failed: {exc}") from None

    return guarded


def _holds_large_value(entries: list[Any]) -> bool:
    """Whether a turn's calls write a value past ``LARGE_VALUE``: such a turn is committed
    at once rather than copied into the redo log (a client's largest request is not
    held twice over)."""
    return any(
        type(op[2]) is str and len(op[2]) > LARGE_VALUE
        for entry in entries
        if entry[0] == "a"
        for op in entry[1]
    )


class Database:
    """One instance's SQLite database, open; its contents are a subclass's."""

    def __init__(
        self, path: str | Path, *, sync: str = "normal", journal: str = "wal", fresh: bool = False
    ) -> None:
        """Open (or create) the database at ``path``.

        ``fresh``: the database is known to be lost, and an empty one may replace
        it (see ``marker``); a database with data is then refused, not reset.
        """
        if sync not in SYNC_MODES:
            raise StoreError(f"kvs.sync: must be one of {', '.join(SYNC_MODES)}, got {sync!r}")
        if journal not in JOURNAL_MODES:
            why = " (a failed commit is rolled back, which needs a journal)" * (journal == "off")
            raise StoreError(
                f"kvs.journal_mode: must be one of {', '.join(JOURNAL_MODES)}, got {journal!r}{why}"
            )
        self.path = Path(path)
        self.wal = journal == "wal"  # False: nothing to checkpoint
        self.version = 0  # the root's, as stored (read at open)
        self._checkpointer: sqlite3.Connection | None = None
        self._freed = False  # keys were removed since free pages were last given back
        self._redo: redo.RedoLog | None = None  # a durable store's
        self._lsn = 0  # the number of the redo log's last record (or the database's)
        self._holding = False  # a durable store's transaction is held: turns are logged
        self._noting: list[Any] | None = None  # the store's calls in the turn open
        self._pending: list[bytes] = []  # the records logged since the last commit
        self._lock = self._take_lock()
        checked = False  # the file is as a clean close left it: no quick_check needed
        try:
            if not fresh:
                checked = self._check_files() and self.wal
            private.database(self.path)
            self._conn = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_TIMEOUT)
        except StoreError:
            os.close(self._lock)
            raise
        except (sqlite3.Error, OSError) as exc:
            os.close(self._lock)
            raise StoreError(f"{self.path}: cannot open the KVS database: {exc}") from None
        try:
            self._open(sync, journal, fresh, checked)
            if self.wal:
                self._recover(sync, fresh)
        except BaseException:
            self._shut()
            self._conn.close()
            os.close(self._lock)
            raise

    def _take_lock(self) -> int:
        """Own the database: an exclusive flock on ``<db>.lock``, or StoreError at once."""
        lock_path = f"{self.path}.lock"
        try:
            return lockfile.take(lock_path)
        except lockfile.LockHeld:
            raise StoreError(
                f"{self.path}: the KVS database is in use by another process"
                " (is another instance running on this state directory?)"
            ) from None
        except OSError as exc:
            raise StoreError(f"{lock_path}: cannot open the KVS lock: {exc.strerror}") from None

    @property
    def marker(self) -> Path:
        """``<db>.state``: that this directory holds a database, and whether a store has it open.

        Its presence says that a database was created here, so that one emptied
        or deleted later (a full disk, a stray ``>``) is not taken for a new
        instance's. It says ``open`` while a WAL-mode store has the database
        open (and after a crash), ``shut`` once it is closing: a WAL removed
        after a crash, with the transactions only it held, is noticed. Once
        the connection has closed (the WAL copied in and removed) it says
        ``done``, with the file's size and modification time then: a start
        that finds the file so skips SQLite's ``quick_check``, which reads the
        whole file (seconds for a million jobs).
        """
        return Path(f"{self.path}.state")

    def _stamp(self) -> bytes:
        """The database file's size and modification time (ns), as the marker keeps them."""
        st = os.stat(self.path)
        return b"%d %d\n" % (st.st_size, st.st_mtime_ns)

    def _check_files(self) -> bool:
        """StoreError if the marker says a database was here and it, or its WAL, is gone;
        True if a clean close left the file as it is now (``done``, the same stamp, no WAL)."""
        try:
            marker = self.marker.read_bytes()
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise StoreError(f"{self.marker}: cannot read the KVS state: {exc.strerror}") from None
        try:
            size = os.stat(self.path).st_size
        except FileNotFoundError:
            size = 0
        if size == 0:
            raise self._lost()
        state = marker[: len(MARK_OPEN)]
        wal_path = f"{self.path}-wal"
        if state == MARK_DONE:
            stamp = marker[len(MARK_DONE) :].split(b"\n", 1)[0] + b"\n"
            return not os.path.exists(wal_path) and stamp == self._stamp()
        if state != MARK_OPEN:
            return False
        try:
            damage = wal.damage(wal_path)
        except OSError as exc:
            raise StoreError(f"{wal_path}: cannot read the WAL: {exc.strerror}") from None
        if damage is not None:
            raise StoreError(
                f"{wal_path}: the WAL is damaged ({damage}): SQLite would drop the"
                " transactions after the damage. Put back an undamaged copy; or, to go on"
                f" with what SQLite can read of it (losing the rest), remove {self.marker}"
            )
        if not os.path.exists(wal_path):
            name = self.path.name
            raise StoreError(
                f"{self.path}-wal: missing, but the instance that had {name} open did not stop"
                f" cleanly, and its last transactions were there alone. Put it back; or, to go"
                f" on with what {name} holds (losing them), remove {self.marker}"
            )
        return False

    def _lost(self) -> StoreError:
        return StoreError(
            f"{self.path}: the KVS database is empty or missing, but {self.marker.name}"
            " says this state directory held one: its jobs would be lost. Restore it"
            " from a backup, or start with --fresh to begin again with no jobs"
        )

    def _shut(self) -> None:
        """Say the database is shut, before the connection closes (and the WAL goes).

        A crash from here on leaves the WAL, which is fine to find; a marker
        left ``open`` with no WAL would make the next start refuse.
        """
        if self.wal and self.marker.exists():
            try:
                self._mark(MARK_SHUT)
            except StoreError as exc:
                log.error("%s (the next start will say the WAL is missing)", exc.errstr)

    def _done(self) -> None:
        """Say the database closed cleanly, with its stamp (after the connection closed)."""
        if self.wal and self.marker.exists():
            try:
                self._mark(MARK_DONE + self._stamp())
            except (StoreError, OSError) as exc:
                log.warning("%s: %s (the next start checks the whole file)", self.marker, exc)

    def _mark(self, state: bytes) -> None:
        """Write ``state`` to the marker, durably, in place (no new block: even a full disk;
        what a longer state written before leaves after it is never read)."""
        try:
            fd = os.open(self.marker, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                os.pwrite(fd, state, 0)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise StoreError(f"{self.marker}: cannot write the KVS state: {exc.strerror}") from None

    def _open(self, sync: str, journal: str, fresh: bool, checked: bool) -> None:
        conn = self._conn
        try:
            conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # only takes effect on a new file
            # so too this, which must come before the journal mode on a new file
            conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
            # after a crash, or a file changed since its clean close: read it all
            problems = [] if checked else [row[0] for row in conn.execute("PRAGMA quick_check(3)")]
            if problems and problems != ["ok"]:
                raise self._corrupt("; ".join(problems).replace("\n", "; "))
            mode = conn.execute(f"PRAGMA journal_mode = {journal.upper()}").fetchone()[0]
            if mode != journal:
                raise StoreError(f"{self.path}: cannot use {journal} mode (journal mode is {mode})")
            if journal != "wal":
                conn.execute("PRAGMA locking_mode = EXCLUSIVE")
            conn.execute(f"PRAGMA synchronous = {sync.upper()}")
            conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            # SQLite may be built to zero what a change removes (Debian's is): every append
            # rewrites its chunk, so that is a write of zeros per append for nothing, the
            # file being the owner's alone (0600) and its free pages reused or given back
            conn.execute("PRAGMA secure_delete = OFF")
            conn.execute("PRAGMA wal_autocheckpoint = 0")  # see checkpoint()
            # a WAL the checkpoints have emptied is cut back to this when it starts again,
            # so a burst of writes does not keep its size for good
            conn.execute(f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT}")
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise self._open_error(exc) from None
        try:
            self._check_schema(fresh)
            conn.execute(SQL_NS_PREFIX_INDEX)
            conn.execute(SQL_ROOT_TABLE)
            conn.execute(SQL_ROOT_ROW)
            conn.execute(SQL_REDO_TABLE)
            conn.execute(SQL_REDO_ROW)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        self._switch_auto_vacuum()
        if self.wal:
            self._truncate_wal()
        self._mark(MARK_OPEN if self.wal else MARK_SHUT)
        self._reload()

    def _recover(self, sync: str, fresh: bool) -> None:
        """Open the redo log, apply the records it holds past the database's last, in one
        transaction, and empty it (``fresh``: drop them, as the database they follow is)."""
        path = Path(f"{self.path}-redo")
        try:
            log_file = redo.RedoLog(path, sync=sync == "full")
        except OSError as exc:
            raise StoreError(f"{path}: cannot open the redo log: {exc.strerror}") from None
        try:
            self._replay_log(path, log_file, fresh)
        except BaseException:
            log_file.close()
            raise
        self._redo = log_file

    def _replay_log(self, path: Path, log_file: redo.RedoLog, fresh: bool) -> None:
        """``_recover``'s work on the log it opened."""
        try:
            records, torn = log_file.read()
        except redo.RedoError as exc:
            raise StoreError(
                f"{path}: the redo log is damaged ({exc}): it holds answered writes the"
                " database lacks. Put back an undamaged copy; or, to go on with what the"
                f" database holds (losing them), remove {path.name}"
            ) from None
        except OSError as exc:
            raise StoreError(f"{path}: cannot read the redo log: {exc.strerror}") from None
        conn = self._conn
        self._lsn = int(conn.execute(SQL_REDO_GET).fetchone()[0])
        todo = [] if fresh else [(lsn, entries) for lsn, entries in records if lsn > self._lsn]
        if todo and todo[0][0] != self._lsn + 1:
            # the log is past the database: a power loss under sync=normal kept the log's
            # cut and later records but not the commit before them (the database is whole)
            log.warning(
                "%s: its records begin at %d, past the database's last (%d): a power loss"
                " took the commits between; going on without them",
                path,
                todo[0][0],
                self._lsn,
            )
            todo = []
        if torn:
            log.info("%s: dropping the %d bytes of a record a crash cut short", path, torn)
        if todo:
            self._apply_records(path, todo)
        if records or torn:
            try:
                log_file.cut()
            except OSError as exc:
                raise StoreError(f"{path}: cannot empty the redo log: {exc.strerror}") from None

    def _apply_records(self, path: Path, todo: list[tuple[int, list[Any]]]) -> None:
        """Apply the redo log's records ``todo``, in order, and commit them."""
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            for lsn, entries in todo:
                if lsn != self._lsn + 1:
                    raise KVSError(errno.EINVAL, f"record {lsn} follows record {self._lsn}")
                for entry in entries:
                    self._replay(entry)
                self._lsn = lsn
            conn.execute(SQL_REDO_SET, (self._lsn,))
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback()
            raise failed(self.path, f"cannot apply {path.name}", exc) from None
        except (KVSError, TypeError, ValueError) as exc:
            self._rollback()
            raise StoreError(
                f"{path}: the redo log does not fit the database ({exc}). Put back the"
                " database it follows; or, to go on with what the database holds (losing"
                f" the log's writes), remove {path.name}"
            ) from None
        log.info("%s: applied %d turns the last commit did not hold", path, len(todo))

    def _replay(self, entry: list[Any]) -> None:
        """Make again one call of the store's that the redo log holds (a subclass's)."""
        raise KVSError(errno.EINVAL, f"cannot replay {entry[:1]!r}")

    def _switch_auto_vacuum(self) -> None:
        """Make a database created without incremental auto-vacuum use it: one VACUUM.

        Without it, the pages of purged jobs stay in the file for good. The
        VACUUM rewrites the whole database (and needs as much free space again),
        once, at the first start of a state directory made before.
        """
        conn = self._conn
        try:
            if conn.execute("PRAGMA auto_vacuum").fetchone()[0] == AUTO_VACUUM_INCREMENTAL:
                return
            log.info("kvs: %s: rewriting the database once to give back purged space", self.path)
            conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
            conn.execute("VACUUM")
        except sqlite3.Error as exc:
            raise failed(self.path, "cannot switch on incremental auto-vacuum", exc) from None

    def reclaim(self) -> int:
        """Give free pages beyond ``RECLAIM_SLACK`` back to the file system, at most
        ``RECLAIM_STEP``, in the current transaction; return how many.

        Called after a transaction that removed keys (purged jobs), so the file
        shrinks in bounded steps rather than in one long pause.
        """
        if not self._freed:
            return 0
        execute = self._conn.execute
        try:
            free = int(execute("PRAGMA freelist_count").fetchone()[0])
            pages = max(min(free - RECLAIM_SLACK, RECLAIM_STEP), 0)
            for _ in range(pages):
                execute(SQL_RECLAIM_PAGE)
        except sqlite3.Error as exc:
            raise failed(self.path, "giving back free pages failed", exc) from None
        if pages < RECLAIM_STEP:
            self._freed = False  # all but the slack is given back
        return pages

    def _truncate_wal(self) -> None:
        """Copy a WAL a crash left into the database and empty it, before serving.

        Otherwise a WAL that no checkpoint caught up with before the crash (one
        every second, while commits keep coming) grows crash after crash, and so
        does the check of it at the next start (``_check_files``).
        """
        try:
            busy = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        except sqlite3.Error as exc:
            raise failed(self.path, "checkpoint at start", exc) from None
        if busy:
            log.warning("kvs: %s: the WAL could not be emptied at start", self.path)

    def _open_error(self, exc: sqlite3.Error) -> StoreError:
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            return StoreError(
                f"{self.path}: the KVS database is in use by another process"
                " (is another instance running on this state directory?)"
            )
        if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError):
            return self._corrupt(str(exc))
        return StoreError(f"{self.path}: cannot open the KVS database: {exc}")

    def _corrupt(self, detail: str) -> StoreError:
        return StoreError(
            f"{self.path}: the KVS database is corrupt ({detail}); "
            "restore it from a backup or move it aside to start afresh"
        )

    def _check_schema(self, fresh: bool) -> None:
        conn = self._conn
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        app = conn.execute("PRAGMA application_id").fetchone()[0]
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if version == 0 and app == 0 and tables == 0:
            if self.marker.exists() and not fresh:
                raise self._lost()
            for sql in SQL_SCHEMA:
                conn.execute(sql)
            return
        if fresh:
            raise StoreError(
                f"{self.path}: --fresh, but the KVS database holds an instance's data;"
                " start without --fresh to restart it, or move it aside"
            )
        if app != APPLICATION_ID:
            raise StoreError(f"{self.path}: not a pflux KVS database (application_id {app:#x})")
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: KVS schema version {version} is newer than this pflux"
                f" understands ({SCHEMA_VERSION}); use a newer pflux"
            )
        if version < SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: KVS schema version {version} is unknown (expected {SCHEMA_VERSION})"
            )

    def close(self) -> None:
        """Close the database (checkpointing the WAL into it) and give up the lock.

        A transaction ``hold`` keeps open is committed first.
        """
        if self._lock < 0:
            return  # closed already
        try:
            self.release()
            if self._redo is not None:
                with suppress(OSError):  # empty (the commit holds it all): left, it is cut
                    self._redo.path.unlink()
        finally:
            if self._redo is not None:
                self._redo.close()
            self._shut()
            if self._checkpointer is not None:
                self._checkpointer.close()
                self._checkpointer = None
            self._conn.close()
            if not os.path.exists(f"{self.path}-wal"):  # SQLite copied it in and removed it
                self._done()
            os.close(self._lock)
            self._lock = -1

    def checkpoint(self) -> int:
        """Copy what the WAL holds into the database; return the frames left in the WAL.

        A passive checkpoint on a connection of its own: it never waits for the
        writer, so it may be called from another thread (one at a time) while
        the store commits. What it cannot copy yet is left for the next call.
        A WAL longer than ``WAL_SIZE_LIMIT`` that it has nearly caught up with
        is emptied and cut back, the writer waiting meanwhile. Without a WAL
        (``journal="memory"``) there is nothing to copy.
        """
        if not self.wal:
            return 0
        conn = self._checkpointer
        try:
            if conn is None:
                conn = sqlite3.connect(
                    self.path, isolation_level=None, timeout=BUSY_TIMEOUT, check_same_thread=False
                )
                self._checkpointer = conn
            _, frames, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            if frames * PAGE_SIZE > WAL_SIZE_LIMIT and frames - copied <= RESTART_FRAMES_LEFT:
                # under steady writes a passive checkpoint never finds the WAL quiet, and
                # SQLite starts a WAL again only from a quiet one: so it would grow for
                # good. Block the writer while the last few frames are copied and the
                # WAL is emptied (milliseconds)
                _, frames, copied = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: checkpoint failed: {exc}") from None
        return max(0, int(frames) - int(copied))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- transactions -------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group writes into one durable transaction; joins one already open.

        A KVSError from the body rolls everything back and propagates; any SQLite
        failure, the final COMMIT included, becomes StoreError (StoreFull for a
        full disk): nothing of the transaction may be reported as done. Under a
        durable store's ``hold`` it is a savepoint, durable once its record is in
        the redo log (``_logged``).
        """
        conn = self._conn
        if self._holding and self._noting is None:
            with self._logged():
                yield
            return
        if conn.in_transaction:
            yield
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise failed(self.path, "cannot begin a transaction", exc) from None
        try:
            yield
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback()
            raise failed(self.path, "transaction failed", exc) from None
        except BaseException:
            self._rollback()
            raise

    @contextmanager
    def _logged(self) -> Iterator[None]:
        """A transaction under a durable store's hold: a savepoint, and the store's calls
        in it (``_note``) appended to the redo log as one record before it is released."""
        conn = self._conn
        noting: list[Any] = []
        self._noting = noting
        try:
            conn.execute("SAVEPOINT kvs_turn")
        except sqlite3.Error as exc:
            self._noting = None
            raise failed(self.path, "cannot begin a transaction", exc) from None
        released = False
        try:
            yield
            large = bool(noting) and _holds_large_value(noting)
            if noting and not large:
                self._log(noting)
            conn.execute("RELEASE kvs_turn")
            released = True
            if large:  # committed rather than copied into the log: all that is held with it
                self._noting = None
                self._commit_held(again=True)
        except BaseException as exc:
            if not released:
                with suppress(sqlite3.Error):
                    conn.execute("ROLLBACK TO kvs_turn")
                    conn.execute("RELEASE kvs_turn")
                with suppress(sqlite3.Error):  # a database this broken is already fatal
                    self._reload()
            if isinstance(exc, sqlite3.Error):
                raise failed(self.path, "transaction failed", exc) from None
            raise
        finally:
            self._noting = None

    def _log(self, entries: list[Any]) -> None:
        """Append a turn's calls to the redo log: StoreFull where there is no room."""
        assert self._redo is not None
        header, body = redo.encode(self._lsn + 1, entries)
        try:
            self._redo.append(header, body)
        except OSError as exc:
            message = f"{self._redo.path}: cannot write the redo log: {exc.strerror}"
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise StoreFull(f"{message} (no space left on device)") from None
            raise StoreError(message) from None
        self._lsn += 1
        self._pending.append(body)

    def _note(self, *entry: Any) -> None:
        """One call of the store's that changed it, for the turn's redo log record."""
        if self._noting is not None:
            self._noting.append(entry)

    def hold(self) -> None:
        """Open a transaction that later ones join, until ``release`` commits it: one
        COMMIT, and one write of each page, for many transactions.

        A durable store's joins it as a savepoint logged in the redo log, so a crash
        loses none of them; a memory journal's plainly (a crash loses every one since
        the hold, which is what such a store may do).
        """
        if not self._conn.in_transaction:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StoreError(f"{self.path}: cannot begin a transaction: {exc}") from None
            self._holding = self._redo is not None

    def release(self) -> None:
        """Commit the transaction ``hold`` opened, if any, and empty the redo log.

        Where the commit fails, the transaction is rolled back and what the log
        holds applied again under a new hold: StoreFull (a full disk) leaves the
        store as it was, to be released again later; StoreError is fatal.
        """
        if self._conn.in_transaction:
            self._commit_held(again=False)

    def _commit_held(self, *, again: bool) -> None:
        """``release``'s work; ``again``: hold anew after it (a turn committed at once)."""
        conn = self._conn
        holding, self._holding = self._holding, False
        try:
            if holding:
                conn.execute(SQL_REDO_SET, (self._lsn,))
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            error = failed(self.path, "transaction failed", exc)
            self._rollback()
            if holding and self._pending:
                self._hold_again()
            elif again:
                self.hold()
            raise error from None
        self._pending.clear()
        if holding and self._redo is not None:
            try:
                self._redo.cut()
            except OSError as exc:  # its records are skipped at open: the database has them
                log.warning("%s: cannot empty the redo log: %s", self._redo.path, exc.strerror)
        if again:
            self.hold()

    def _hold_again(self) -> None:
        """After a held commit failed: hold anew, with the redo log's records since the
        last commit applied again (not logged again: they are there)."""
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            for body in self._pending:
                for entry in redo.entries_of(body):
                    self._replay(entry)
        except (sqlite3.Error, KVSError) as exc:
            self._rollback()
            raise StoreError(
                f"{self.path}: cannot apply the redo log's writes again after a failed"
                f" commit ({exc}); the next start applies them"
            ) from None
        self._holding = True

    def _rollback(self) -> None:
        if self._conn.in_transaction:
            # SQLite may have rolled back already after the error being reported
            with suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")
        with suppress(sqlite3.Error):  # a database this broken is already fatal
            self._reload()

    def _reload(self) -> None:
        """Read again what is kept of the database in memory (the root's version, and
        what a subclass keeps): after opening it, and after a transaction is rolled back."""
        self.version = int(self._conn.execute(SQL_ROOT_GET).fetchone()[0])

    def count_commits(self, count: int) -> None:
        """``count`` more commits are stored by the transaction open: the root's version
        goes up by as many, with it."""
        if count:
            self._conn.execute(SQL_ROOT_SET, (self.version + count,))
            self.version += count
            self._note("v", count)

    def dropcache(self) -> None:
        """Give back the memory of SQLite's page cache (``flux kvs dropcache``)."""
        self._conn.execute("PRAGMA shrink_memory")
