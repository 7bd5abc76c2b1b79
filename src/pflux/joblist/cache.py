"""job-list's cache of inactive jobs: their summaries in a SQLite file of the state directory.

A restart would otherwise replay every event of every inactive job a second
time (the job manager replays them all already), which is most of a restart.
The cache is derived data, never the truth: each row is a summary as job-list
built it from the job's events, with the number of events it was built from.
At restart the journal tells job-list each inactive job's event count, and a
row is used only if its count matches; a job without a usable row is built
from its history again. A missing, unreadable, corrupt or other-format file
is started afresh, and every row it lacked is rebuilt the same way.

Rows are written in batches, a while after jobs become inactive, in one
transaction each, in WAL mode and with ``synchronous=OFF``: nothing is synced,
since a row lost in a crash only costs that job's history at the next restart,
and a file torn by a power loss fails ``quick_check`` or its rows' CRCs (a row
once written never changes: a stale page can only lack rows, or hold a job
built from another count of events, which the digest refuses).

A clean close syncs the file and stamps it (its size and modification time
in ``<path>.state``); a start that finds the file as stamped, with no WAL,
trusts it as written and skips ``quick_check`` and the rows' CRCs, which
read and hash the whole file (seconds for a million jobs); any other start
checks both.

After a clean close job-list also writes a snapshot of its inactive jobs
(``snapshot.py``) naming the stamp; a start that finds the file as that stamp
says opens it without reading its rows (``open_as_stamped``) and reads a row
only when a listing shows its job (``fetch``).

A purged job's row is deleted with the next batch, and the pages freed are
given back to the file system a bounded step a batch (incremental
auto-vacuum; a file made without it is rewritten once, with ``VACUUM``).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import sqlite3
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import msgspec
import orjson

from pflux.broker import lockfile, private
from pflux.joblist.summary import JobSummary

log = logging.getLogger("pflux.job-list")

CACHE_NAME: Final = "job-list.sqlite"
FORMAT: Final = 1  # PRAGMA user_version: a file of another format is started afresh
APPLICATION_ID: Final = 0x70666A6C  # "pfjl"

SQL_SCHEMA: Final = (
    # crc: of the row, since SQLite checks none (a torn or flipped page must not pass)
    """CREATE TABLE job (
        id INTEGER PRIMARY KEY,
        nevents INTEGER NOT NULL,
        record BLOB NOT NULL,
        crc INTEGER NOT NULL
    )""",
    f"PRAGMA user_version = {FORMAT}",
    f"PRAGMA application_id = {APPLICATION_ID}",
)
SQL_LOAD: Final = "SELECT id, nevents, record, crc FROM job"
SQL_FETCH: Final = "SELECT nevents, record, crc FROM job WHERE id = ?"
SQL_PUT: Final = "INSERT OR REPLACE INTO job (id, nevents, record, crc) VALUES (?, ?, ?, ?)"
SQL_DELETE: Final = "DELETE FROM job WHERE id = ?"
SQL_RECLAIM_PAGE: Final = "PRAGMA incremental_vacuum(1)"  # one page a step, a step an execute
RECLAIM_SLACK: Final = 1024  # free pages kept for the rows that follow (4 MiB)
RECLAIM_STEP: Final = 1024  # pages given back per batch at most

_Num = int | float
_Text = str | None
# a record: the summary's attributes in this order, then exception, annotations, dependencies
# (``decode``), checked as it is read: the types job-list writes, each number int or float
# as written, no bool for an int, the exception and dependencies as they are kept
_RECORD = tuple[
    int, int, int, int,  # userid, urgency, priority, states
    _Num, _Num, _Num, _Num, _Num, _Num, _Num,  # t_submit ... t_inactive
    _Text, _Text, _Text, _Text, _Text,  # name, cwd, queue, project, bank
    int, int, int, _Num,  # ntasks, ncores, nnodes, duration
    _Text, _Text, _Num,  # ranks, nodelist, expiration
    int, int,  # waitstatus, result
    tuple[str, int, str] | None,  # exception
    _Text,  # annotations (a JSON object's text)
    tuple[str, ...] | None,  # dependencies
]  # fmt: skip
_read_record = msgspec.json.Decoder(_RECORD).decode
_TEXTS: dict[str, str] = {}  # annotations texts seen valid, shared by the jobs that repeat them
_TEXTS_MAX: Final = 4096
_ZERO: Final = 0.0  # one float for every unset time, as summaries share one
_MINUS_ONE: Final = -1.0
_intern = sys.intern


def encode(s: JobSummary) -> bytes:
    """An inactive job's record."""
    exception = s.exception
    annotations = s.annotations
    if isinstance(annotations, dict):
        annotations = orjson.dumps(annotations).decode()
    return orjson.dumps(
        [
            s.userid, s.urgency, s.priority, s.states, s.t_submit, s.t_depend, s.t_priority,
            s.t_sched, s.t_run, s.t_cleanup, s.t_inactive, s.name, s.cwd, s.queue, s.project,
            s.bank, s.ntasks, s.ncores, s.nnodes, s.duration, s.ranks, s.nodelist, s.expiration,
            s.waitstatus, s.result, None if exception is None else list(exception), annotations,
            None if s.dependencies is None else list(s.dependencies),
        ]
    )  # fmt: skip


def decode(jobid: int, nevents: int, record: bytes) -> JobSummary | None:
    """The summary a record holds, or None if it is not a valid record."""
    try:
        values = _read_record(record)
    except msgspec.DecodeError:
        return None
    s = JobSummary.restored(jobid, nevents)
    (
        s.userid, s.urgency, s.priority, s.states, s.t_submit, s.t_depend, s.t_priority,
        s.t_sched, s.t_run, s.t_cleanup, s.t_inactive, name, cwd, queue, project, bank,
        s.ntasks, s.ncores, s.nnodes, duration, ranks, nodelist, expiration, s.waitstatus,
        s.result, exception, annotations, dependencies,
    ) = values  # fmt: skip
    if annotations is not None:
        annotations = _annotations(annotations)
        if annotations is None:
            return None
    s.exception, s.annotations, s.dependencies = exception, annotations, dependencies
    # share what many jobs repeat, as summaries built from events do
    s.name = None if name is None else _intern(name)
    s.cwd = None if cwd is None else _intern(cwd)
    s.queue = None if queue is None else _intern(queue)
    s.project = None if project is None else _intern(project)
    s.bank = None if bank is None else _intern(bank)
    s.ranks = None if ranks is None else _intern(ranks)
    s.nodelist = None if nodelist is None else _intern(nodelist)
    s.duration = _ZERO if duration == 0.0 else _MINUS_ONE if duration == -1.0 else duration
    s.expiration = _MINUS_ONE if expiration == -1.0 else expiration
    if not s.t_depend:
        s.t_depend = _ZERO
    if not s.t_priority:
        s.t_priority = _ZERO
    if not s.t_sched:
        s.t_sched = _ZERO
    if not s.t_run:
        s.t_run = _ZERO
    if not s.t_cleanup:
        s.t_cleanup = _ZERO
    return s


def _annotations(text: str) -> str | None:
    """The text, shared, if it is a JSON object (as listing will decode it); else None."""
    known = _TEXTS.get(text)
    if known is not None:
        return known
    try:
        if type(orjson.loads(text)) is not dict:
            return None
    except orjson.JSONDecodeError:
        return None
    if len(_TEXTS) >= _TEXTS_MAX:
        _TEXTS.clear()
    _TEXTS[text] = text
    return text


def _crc(rowid: int, nevents: int, record: bytes) -> int:
    return zlib.crc32(record, zlib.crc32(b"%d:%d" % (rowid, nevents)))


def _row(summary: JobSummary) -> tuple[int, int, bytes, int]:
    # a copy of exactly its size: a small bytes object from orjson.dumps keeps a 4 KiB
    # allocation behind it, and thousands of them at once grow the heap for good
    record = bytes(memoryview(encode(summary)))
    rowid, nevents = _row_id(summary.id), summary.next_seq
    return rowid, nevents, record, _crc(rowid, nevents, record)


def _row_id(jobid: int) -> int:
    """A job id as SQLite's signed 64-bit integer (two's complement)."""
    return jobid - (1 << 64) if jobid >= 1 << 63 else jobid


def _job_id(rowid: int) -> int:
    return rowid + (1 << 64) if rowid < 0 else rowid


class SummaryCache:
    """The cache file of one state directory, used by one process at a time (``<path>.lock``).

    Another job-list using the file (of another instance on the same directory, or
    one still ending after its broker was killed) leaves this one without a cache:
    every job is then replayed from the journal, and nothing is written.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None
        self._lock = -1
        self._pending: list[JobSummary] = []
        self._purged: list[int] = []
        self._failed = False

    def __len__(self) -> int:
        return len(self._pending) + len(self._purged)

    def load(self) -> dict[int, JobSummary]:
        """Open the file and read every valid row; a file that cannot be read is started
        afresh, and invalid rows are left for the journal to replace."""
        summaries: dict[int, JobSummary] = {}
        bad = 0
        if not self._take_lock():
            return summaries
        # a row makes no reference cycle: no collection while a million are read (each
        # would look at every summary made so far); the module freezes them once started
        collecting = gc.isenabled()
        gc.disable()
        try:
            clean = self._stamped() is not None
            self._conn = self._open(check=not clean)
            # row by row, not fetchall: 100,000 rows at once would grow the heap for good
            for rowid, nevents, record, crc in self._conn.execute(SQL_LOAD):
                summary = None
                typed = type(record) is bytes and type(nevents) is int and type(rowid) is int
                if typed and (clean or crc == _crc(rowid, nevents, record)):
                    summary = decode(_job_id(rowid), nevents, record)
                if summary is None:
                    bad += 1
                    continue
                summaries[summary.id] = summary
        except (sqlite3.Error, _Unusable) as exc:
            log.warning("job-list: %s: starting the cache afresh: %s", self.path, exc)
            self._reset()
            return {}
        except Exception:  # a bug: it must not fail every start of job-list on this file
            log.exception("job-list: %s: starting the cache afresh", self.path)
            self._reset()
            return {}
        finally:
            if collecting:
                gc.enable()
        if bad:
            log.warning("job-list: %s: %d invalid rows ignored", self.path, bad)
        return summaries

    def stamp(self) -> bytes | None:
        """The stamp of the file as its last clean close left it, or None if it is not."""
        return self._stamped()

    def open_as_stamped(self, stamp: bytes) -> bool:
        """Open the file without reading its rows, if it is as ``stamp`` says (a snapshot
        of its jobs is then current); ``fetch`` reads a row."""
        if self._stamped() != stamp or not self._take_lock():
            return False
        try:
            self._conn = self._open(check=False)
        except (sqlite3.Error, _Unusable) as exc:
            log.warning("job-list: %s: %s", self.path, exc)
            self._conn = None
            return False
        return True

    def fetch(self, jobid: int, nevents: int) -> JobSummary | None:
        """The summary of a job's row, if it is there, valid, and built from ``nevents``
        events."""
        if self._conn is None:
            return None
        rowid = _row_id(jobid)
        try:
            row = self._conn.execute(SQL_FETCH, (rowid,)).fetchone()
        except sqlite3.Error as exc:
            log.error("job-list: %s: %s", self.path, exc)
            return None
        if row is None:
            return None
        count, record, crc = row
        if count != nevents or type(record) is not bytes or crc != _crc(rowid, count, record):
            return None
        return decode(jobid, nevents, record)

    def add(self, summaries: list[JobSummary]) -> None:
        """Jobs that have become inactive, to be written at the next ``flush``."""
        self._pending.extend(summaries)

    def purge(self, jobids: list[int]) -> None:
        """Jobs purged, whose rows go at the next ``flush``."""
        self._purged.extend(jobids)

    def flush(self) -> None:
        """Write the jobs added and delete those purged since the last flush, in one
        transaction."""
        pending, self._pending = self._pending, []
        purged, self._purged = self._purged, []
        if not (pending or purged) or self._conn is None:
            return
        self._write(SQL_PUT, [_row(s) for s in pending], [(_row_id(jobid),) for jobid in purged])

    def discard(self, jobids: list[int]) -> None:
        """Remove the rows of jobs the journal does not list as inactive."""
        if jobids and self._conn is not None:
            self._write(SQL_DELETE, [(_row_id(jobid),) for jobid in jobids])

    def close(self, stamped: Callable[[bytes], None] | None = None) -> None:
        """Write what waits, close, stamp; then, with the file still locked, call
        ``stamped`` with the stamp (for the snapshot), if the file was stamped."""
        self.flush()
        if self._conn is not None:
            self._conn.close()
            self._conn = None
            if not self._failed:
                self._stamp()
                stamp = self._stamped()
                if stamp is not None and stamped is not None:
                    stamped(stamp)
        if self._lock >= 0:
            os.close(self._lock)
            self._lock = -1

    @property
    def _state(self) -> Path:
        return Path(f"{self.path}.state")

    def _stamp(self) -> None:
        """Sync the closed file and stamp it, so the next start may trust it (a failure
        only leaves that start to check it)."""
        try:
            if os.path.exists(f"{self.path}-wal"):
                return  # not closed cleanly after all (another connection?)
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                os.fsync(fd)
                st = os.fstat(fd)
            finally:
                os.close(fd)
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
            fd = os.open(self._state, flags, 0o600)
            try:
                os.write(fd, b"done\n%d %d\n" % (st.st_size, st.st_mtime_ns))
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            log.warning("job-list: %s: cannot stamp the cache: %s", self.path, exc.strerror)

    def _stamped(self) -> bytes | None:
        """The stamp, if the file is as the last clean close left it (stamped, no WAL)."""
        try:
            stamp = self._state.read_bytes()
            st = os.stat(self.path)
        except OSError:
            return None
        wal = os.path.exists(f"{self.path}-wal")
        if wal or stamp != b"done\n%d %d\n" % (st.st_size, st.st_mtime_ns):
            return None
        return stamp

    def _take_lock(self) -> bool:
        if self._lock >= 0:
            return True
        lock_path = f"{self.path}.lock"
        try:
            self._lock = lockfile.take(lock_path)
        except lockfile.LockHeld:
            log.warning("job-list: %s is in use by another process; going on without it", self.path)
            return False
        except OSError as exc:
            log.error("job-list: %s: %s; going on without a cache", lock_path, exc.strerror)
            return False
        return True

    def _write(self, sql: str, rows: list[Any], deleted: list[Any] | None = None) -> None:
        conn = self._conn
        assert conn is not None
        try:
            with conn:
                conn.executemany(sql, rows)
                if deleted:
                    conn.executemany(SQL_DELETE, deleted)
                    free = conn.execute("PRAGMA freelist_count").fetchone()[0]
                    for _ in range(max(min(free - RECLAIM_SLACK, RECLAIM_STEP), 0)):
                        conn.execute(SQL_RECLAIM_PAGE)
        except sqlite3.Error as exc:
            # a cache that cannot be written only makes the next restart slower
            if not self._failed:
                log.error("job-list: %s: cannot write the cache: %s", self.path, exc)
            self._failed = True

    def _open(self, check: bool = True) -> sqlite3.Connection:
        try:
            private.database(self.path)  # summaries name the job's command and cwd
        except OSError as exc:
            raise _Unusable(exc.strerror) from None
        conn = sqlite3.connect(self.path, timeout=5.0)
        try:
            conn.execute("PRAGMA auto_vacuum = INCREMENTAL")  # a new file: before the journal
            conn.execute("PRAGMA journal_mode = WAL").fetchone()
            conn.execute("PRAGMA synchronous = OFF")  # a cache: a torn file fails its checks
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            app = conn.execute("PRAGMA application_id").fetchone()[0]
            tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            if (version, app, tables) == (0, 0, 0):
                with conn:
                    for sql in SQL_SCHEMA:
                        conn.execute(sql)
            elif (version, app) != (FORMAT, APPLICATION_ID):
                raise _Unusable(f"format {version} of application {app:#x}, not {FORMAT}")
            else:  # a cut or torn file may open, and then answer anything
                problems = [r[0] for r in conn.execute("PRAGMA quick_check(3)")] if check else []
                if problems and problems != ["ok"]:
                    raise _Unusable("corrupt: " + "; ".join(problems).replace("\n", "; "))
                if conn.execute("PRAGMA auto_vacuum").fetchone()[0] != 2:  # incremental
                    conn.execute("VACUUM")  # once, for a file made before purging
        except BaseException:
            conn.close()
            raise
        return conn

    def _reset(self) -> None:
        """Remove the file (and its WAL) and start an empty one; without one, go on uncached."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                Path(f"{self.path}{suffix}").unlink()
        try:
            self._conn = self._open()
        except (sqlite3.Error, _Unusable) as exc:
            log.error("job-list: %s: cannot create the cache: %s", self.path, exc)
            self._conn = None


class _Unusable(Exception):
    """A cache file of another format or program."""
