"""job-list's snapshot of its inactive jobs: columns written at a clean stop, read in one go.

Reading a million rows of the cache (``cache.py``) and building a summary of
each takes seconds, and so did listing them in order; a restart needs neither.
At a clean stop job-list writes every inactive job it lists, in listing order
(``t_inactive``, then id), as columns of fixed-size numbers: id, event count,
``t_inactive``, userid, result, and name and queue as indexes into tables of
the strings they repeat. A restart reads them as arrays (``Frozen``), with no
object per job: a listing, a filter, ``job-stats``' counts and the journal's
check (``held_sum``) need nothing else, and a job's full summary is read from
its cache row only when a listing shows it.

The file is used only when it is provably current: it names the stamp of the
cache file it was written beside (``cache.py``: its size and modification time
at that clean close), and a start uses it only if the cache is stamped so now;
the journal then confirms the jobs as it confirms the cache's (``held`` or the
digest), so a snapshot that is somehow out of date costs replays, never a wrong
list. A missing, torn (its CRC), unreadable or other-format file is logged and
ignored: the cache's rows are read instead. It is written to a new file,
synced, then renamed over the old one, so a crash leaves one or the other.
"""

from __future__ import annotations

import logging
import zlib
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Final

import msgspec

from pflux.joblist.summary import JobSummary
from pflux.protocol.manager import HELD_SUM_MASK, held_sum
from pflux.safefs.replace import replace_file

log = logging.getLogger("pflux.job-list")

SNAPSHOT_NAME: Final = "job-list.sqlite.snapshot"  # the cache's, and pflux's by its name
FORMAT: Final = 1
MAGIC: Final = b"pflux job-list snapshot\n"
_CRC: Final = 4  # bytes of the trailing CRC-32 of everything before it

# a job's state in the snapshot as job-list goes: read, confirmed by the journal, or gone
GONE: Final = 0
READ: Final = 1
CONFIRMED: Final = 2


class Columns(msgspec.Struct, array_like=True, frozen=True):
    """The file's body: ``count`` jobs' columns, 8-byte native numbers, in listing order;
    ``sorted_ids`` the ids in order and ``by_id`` their positions; what a restart would
    otherwise compute per job: ``held`` (``held_sum``) and ``counts``, ``[queue, result,
    jobs]``."""

    format: int
    stamp: bytes  # the cache's stamp the snapshot was written with
    count: int
    ids: bytes  # Q
    nevents: bytes  # q
    t_inactive: bytes  # d
    userid: bytes  # q
    result: bytes  # q
    name: bytes  # q: an index into names
    queue: bytes  # q: an index into queues
    sorted_ids: bytes  # Q
    by_id: bytes  # q
    names: list[str | None]
    queues: list[str | None]
    held: int
    counts: list[tuple[int, int, int]]


_decode_columns = msgspec.msgpack.Decoder(Columns).decode


class ColumnsError(Exception):
    """A snapshot that is not one job-list wrote, or not whole."""


def _column(data: bytes, typecode: str, count: int, field: str) -> array:  # type: ignore[type-arg]
    column = array(typecode)
    if len(data) != count * column.itemsize:
        raise ColumnsError(f"{field}: {len(data)} bytes for {count} jobs")
    column.frombytes(data)
    return column


Row = tuple[int, int, float, int, int, str | None, str | None]


def encode(stamp: bytes, jobs: Iterable[Row], base: Frozen | None = None) -> bytes:
    """The file for ``jobs`` ``(id, nevents, t_inactive, userid, result, name, queue)``,
    given in listing order, after ``base``'s: a snapshot's jobs, none gone, all older
    than ``jobs`` (its columns are copied, not read job by job)."""
    if base is None:
        ids, nevents, times = array("Q"), array("q"), array("d")
        userid, result, name, queue = array("q"), array("q"), array("q"), array("q")
        names: dict[str | None, int] = {}
        queues: dict[str | None, int] = {}
        counts: Counter[tuple[int, int]] = Counter()
        held, last = 0, 0
    else:  # copies: a slice of an array is one memcpy
        ids, nevents, times = base.ids[:], base.nevents[:], base.t_inactive[:]
        userid, result, name, queue = base.userid[:], base.result[:], base.name[:], base.queue[:]
        names = {value: i for i, value in enumerate(base.names)}
        queues = {value: i for i, value in enumerate(base.queues)}
        counts = Counter({(q, r): n for q, r, n in base.counts})
        held, last = base.held_value, len(ids)
    for jobid, count, t, uid, res, job_name, job_queue in jobs:
        ids.append(jobid)
        nevents.append(count)
        times.append(t)
        userid.append(uid)
        result.append(res)
        name.append(names.setdefault(job_name, len(names)))
        queue_index = queues.setdefault(job_queue, len(queues))
        queue.append(queue_index)
        counts[queue_index, res] += 1
    held = (held + held_sum(zip(ids[last:], nevents[last:], strict=True))) & HELD_SUM_MASK
    older = base.sorted_ids[-1] if base is not None and last else -1
    if base is not None and (last == len(ids) or min(ids[last:]) > older):
        added = sorted(range(last, len(ids)), key=ids.__getitem__)
        by_id = base.by_id[:]
        by_id.extend(added)
        sorted_ids = base.sorted_ids[:]
        sorted_ids.extend(map(ids.__getitem__, added))
    else:
        by_id = array("q", sorted(range(len(ids)), key=ids.__getitem__))
        sorted_ids = array("Q", map(ids.__getitem__, by_id))
    body = msgspec.msgpack.encode(
        Columns(
            FORMAT, stamp, len(ids), ids.tobytes(), nevents.tobytes(), times.tobytes(),
            userid.tobytes(), result.tobytes(), name.tobytes(), queue.tobytes(),
            sorted_ids.tobytes(), by_id.tobytes(), list(names), list(queues), held,
            [(q, r, n) for (q, r), n in counts.items()],
        )
    )  # fmt: skip
    data = MAGIC + body
    return data + zlib.crc32(data).to_bytes(_CRC, "little")


def decode(data: bytes) -> Columns:
    """The columns a file holds; ``ColumnsError`` if it is not whole or not of this format."""
    if len(data) < len(MAGIC) + _CRC or not data.startswith(MAGIC):
        raise ColumnsError("not a job-list snapshot")
    body = memoryview(data)[:-_CRC]
    if zlib.crc32(body).to_bytes(_CRC, "little") != data[-_CRC:]:
        raise ColumnsError("its CRC does not match (torn or damaged)")
    try:
        columns = _decode_columns(body[len(MAGIC) :])
    except msgspec.DecodeError as exc:
        raise ColumnsError(str(exc)) from None
    if columns.format != FORMAT:
        raise ColumnsError(f"format {columns.format}, not {FORMAT}")
    return columns


class Frozen:
    """The inactive jobs of a snapshot, as columns; each job READ until the journal
    confirms it, GONE once purged or refused. ``fetch`` reads a job's summary (from its
    cache row) given its id and event count."""

    def __init__(self, columns: Columns, fetch: Callable[[int, int], JobSummary | None]) -> None:
        n = columns.count
        self.stamp = columns.stamp
        self.ids = _column(columns.ids, "Q", n, "ids")
        self.nevents = _column(columns.nevents, "q", n, "nevents")
        self.t_inactive = _column(columns.t_inactive, "d", n, "t_inactive")
        self.userid = _column(columns.userid, "q", n, "userid")
        self.result = _column(columns.result, "q", n, "result")
        self.name = _column(columns.name, "q", n, "name")
        self.queue = _column(columns.queue, "q", n, "queue")
        self.sorted_ids = _column(columns.sorted_ids, "Q", n, "sorted_ids")
        self.by_id = _column(columns.by_id, "q", n, "by_id")
        self.names = columns.names
        self.queues = columns.queues
        self.held_value = columns.held
        self.counts = columns.counts
        if n and (
            min(self.name) < 0
            or max(self.name) >= len(self.names)
            or min(self.queue) < 0
            or max(self.queue) >= len(self.queues)
            or min(self.by_id) < 0
            or max(self.by_id) >= n
        ):
            raise ColumnsError("an index out of its table")
        if sum(jobs for _, _, jobs in self.counts) != n or any(
            not 0 <= q < len(self.queues) for q, _, _ in self.counts
        ):
            raise ColumnsError("counts that are not those of its jobs")
        self.state = bytearray([READ]) * n
        self.confirmed = 0
        self.changed = False  # a job has gone since the file was read
        self._fetch = fetch

    def __len__(self) -> int:
        return len(self.ids)

    def find(self, jobid: int) -> int | None:
        """The position of a job that is not GONE, or None."""
        sorted_ids = self.sorted_ids
        j = bisect_left(sorted_ids, jobid)
        if j < len(sorted_ids) and sorted_ids[j] == jobid:
            i: int = self.by_id[j]
            if self.state[i] != GONE:
                return i
        return None

    def held(self) -> tuple[int, int]:
        """The count and ``held_sum`` of the jobs read (before any is confirmed or gone)."""
        return len(self.ids), self.held_value

    def confirm_all(self) -> Counter[tuple[str | None, int]]:
        """Confirm every job READ; their count by (queue, result)."""
        state = self.state
        if state.count(READ) == len(state):
            self.state = bytearray([CONFIRMED]) * len(state)
            self.confirmed = len(state)
            queues = self.queues
            return Counter({(queues[q], r): n for q, r, n in self.counts})
        counts: Counter[tuple[str | None, int]] = Counter()
        for i in self._where(READ):
            counts[self.key(i)] += 1
            self.confirm(i)
        return counts

    def confirm(self, i: int) -> None:
        self.state[i] = CONFIRMED
        self.confirmed += 1

    def remove(self, i: int) -> None:
        if self.state[i] == CONFIRMED:
            self.confirmed -= 1
        self.state[i] = GONE
        self.changed = True

    def drop_unconfirmed(self) -> list[int]:
        """Drop the jobs still READ (the journal named them in no digest); their ids."""
        dropped = list(self._where(READ))
        for i in dropped:
            self.remove(i)
        return [self.ids[i] for i in dropped]

    def _where(self, value: int) -> Iterator[int]:
        state, i = self.state, -1
        while (i := state.find(value, i + 1)) >= 0:
            yield i

    def rows(self) -> Iterator[Row]:
        """The confirmed jobs as ``encode`` takes them, in listing order."""
        ids, nevents, times, uids, codes = (
            self.ids,
            self.nevents,
            self.t_inactive,
            self.userid,
            self.result,
        )
        names, queues, name, queue = self.names, self.queues, self.name, self.queue
        for i in self._where(CONFIRMED):
            yield ids[i], nevents[i], times[i], uids[i], codes[i], names[name[i]], queues[queue[i]]

    def last_key(self) -> tuple[float, int]:
        """The listing key (``t_inactive``, id) of the newest job."""
        return self.t_inactive[-1], self.ids[-1]

    def key(self, i: int) -> tuple[str | None, int]:
        """A job's queue and result, which its ``job-stats`` count goes by."""
        return self.queues[self.queue[i]], self.result[i]

    def summary(self, i: int) -> JobSummary | None:
        """A job's summary, read from its cache row (None, logged, if the row is gone)."""
        jobid = self.ids[i]
        found = self._fetch(jobid, self.nevents[i])
        if found is None:
            log.error("job-list: job %d: its cache row is missing or damaged", jobid)
        return found

    def newest(
        self,
        *,
        since: float,
        userid: int | None,
        results: int,
        name: str | None,
        queues: frozenset[str] | None,
    ) -> Iterator[tuple[tuple[float, int], int]]:
        """``((t_inactive, id), position)`` of the confirmed jobs that pass the filters
        given, newest first, down to ``since``."""
        state, times, ids = self.state, self.t_inactive, self.ids
        uids, codes = self.userid, self.result
        name_index = _index_of(self.names, name) if name is not None else None
        queue_indexes = (
            None if queues is None else {i for i, q in enumerate(self.queues) if q in queues}
        )
        for i in range(len(ids) - 1, -1, -1):
            t = times[i]
            if t <= since:
                return
            if state[i] != CONFIRMED:
                continue
            if userid is not None and uids[i] != userid:
                continue
            if results and not codes[i] & results:
                continue
            if name is not None and self.name[i] != name_index:
                continue
            if queue_indexes is not None and self.queue[i] not in queue_indexes:
                continue
            yield (t, ids[i]), i


def _index_of(table: list[str | None], value: str) -> int:
    try:
        return table.index(value)
    except ValueError:
        return -1


def read(path: Path) -> Columns | None:
    """The snapshot at ``path``, or None (logged unless there is none)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning("job-list: %s: ignored: %s", path, exc.strerror)
        return None
    try:
        return decode(data)
    except ColumnsError as exc:
        log.warning("job-list: %s: ignored: %s", path, exc)
        return None


def write(path: Path, data: bytes) -> None:
    """Replace the file at ``path`` with ``data``, synced (a failure is logged)."""
    try:
        replace_file(str(path), data)
    except OSError as exc:
        log.warning("job-list: %s: cannot write the snapshot: %s", path, exc.strerror)


def remove(path: Path) -> None:
    """Remove the snapshot (one no longer current must not outlive what replaces it)."""
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        log.warning("job-list: %s: cannot remove the snapshot: %s", path, exc.strerror)
