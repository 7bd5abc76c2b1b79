"""The launcher's journal: which job shell sessions may be alive, so no job ever runs twice.

A job shell leads its own session. Before job-exec asks the launcher for a
job's shell it appends ``Q <job id>``; before the launcher gives a shell the
job it appends ``P <job id> <pid> <when> <boot id>`` (the job is given to
that process, which has recorded nothing yet), and before the shell starts any
task it appends ``S <job id> <pid> <when> <boot id>`` to
``<state-dir>/exec/journal``: one
``write`` to a file the launcher opened with ``O_APPEND`` (about a
microsecond, where a file per job cost a hundred). ``pid`` is also the
session id and ``when`` the ``CLOCK_BOOTTIME`` nanoseconds at the time of
writing, the clock process start times in ``/proc/PID/stat`` count. Once the
shell and everything it started are gone the launcher appends
``E <job id>``, or ``E <job id> <wait status>`` for a shell that could not
report its job's end itself (it died) while no job-exec was there to be
told. An ``S`` line without its ``E`` names a session that may still run a
job's processes: a job-exec that starts and finds no launcher to take over
kills every such session before running anything, and removes the journal.
A ``P`` line without ``S`` or ``E`` names a shell that may be about to start
the job: while its process lives it may still record itself and run the
job; once it is gone, the job never started (no task starts before ``S``). A
``Q`` line alone names a job no shell was given: once the launcher is gone,
none will be. job-exec writes ``Q`` (and the ``E`` of the shells it kills)
through a descriptor of its own (``Appender``), under a shared ``flock`` of the
file, and opens the journal again once the launcher has replaced it
(``compact``), which it does under an exclusive lock: no line is written to a
file being replaced, so none is lost.

A shell on another broker's rank is that rank's launcher's, which journals it
there; job-exec appends ``Q <key> <incarnation>`` here before it sends that
rank the request, naming the rank's exec-node as it last named itself
(``exec-node.keep``), and ``E <key>`` once the job's end is stored. A
restart that finds the ``Q`` alone asks that exec-node, which says if it was
never asked for the shell since it started (``pflux.exec.node``).

A session id can be reused once its processes are gone, so a session is
ours only if its leader, when alive, started no later than the record was
written, and only processes started since the record count as its members
(the tasks all start after it). The process a ``P`` line names may not lead
its session yet (a spare just forked): it is ours if it started no later than
the line. A record from another boot names nothing alive.

The launcher keeps the journal short: it rewrites it with the live shells'
lines and the ``Q`` lines no shell has followed yet when it grows
(``compact``): a new file renamed over the old, so a kill at any point leaves
one whole journal or the other (the page cache outlives the process; the
journal names processes, which a power loss ends, so it is never synced).
"""

from __future__ import annotations

import fcntl
import os
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (mypy knows it)
if TYPE_CHECKING:
    import signal as _signal
    from collections.abc import Iterable, Mapping
else:
    import _signal  # not signal, which imports enum: the launcher keeps its imports few

__all__ = [
    "Appender",
    "alive",
    "asked_line",
    "boot_id",
    "compact",
    "end_lines",
    "ended_line",
    "entries",
    "given_line",
    "kill_recorded",
    "live",
    "proc_stat",
    "runs",
    "start_line",
]

BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id"

# (pid, CLOCK_BOOTTIME ns when recorded, boot id, given: a P or Q line, no shell has recorded);
# a Q line's is (0, the incarnation of the exec-node asked, 0 for this rank's launcher, "", True)
Entry = tuple[int, int, str, bool]


def _read(path: str, size: int = 4096) -> bytes | None:
    """A small file's bytes (None if it cannot be read), with no Python file objects."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, size)
    except OSError:
        return None
    finally:
        os.close(fd)


def boot_id() -> str:
    data = _read(BOOT_ID_PATH)
    return data.decode().strip() if data else ""


def proc_stat(pid: int) -> tuple[int, int] | None:
    """(session id, start time in clock ticks) of a live process; None if gone or a zombie."""
    text = _read(f"/proc/{pid}/stat")
    if not text:
        return None
    fields = text[text.rfind(b")") + 2 :].split()
    if fields[0] == b"Z":
        return None
    return int(fields[3]), int(fields[19])


def start_line(jobid: int, pid: int, when: int, boot: bytes) -> bytes:
    """The line a shell writes before it starts a task (``when``: CLOCK_BOOTTIME ns)."""
    return b"S %d %d %d %s\n" % (jobid, pid, when, boot)


def asked_line(jobid: int, incarnation: int = 0) -> bytes:
    """The line job-exec writes before it asks a launcher for the job's shell: its own, or
    (``incarnation``) another rank's exec-node's, as that exec-node last named itself."""
    return b"Q %d %d\n" % (jobid, incarnation) if incarnation else b"Q %d\n" % jobid


def given_line(jobid: int, pid: int, when: int, boot: bytes) -> bytes:
    """The line the launcher writes before it gives shell ``pid`` the job."""
    return b"P %d %d %d %s\n" % (jobid, pid, when, boot)


def end_lines(jobids: Iterable[int]) -> bytes:
    return b"".join(b"E %d\n" % jobid for jobid in jobids)


def ended_line(jobid: int, status: int) -> bytes:
    """The end of a shell that died unheard, with its wait status."""
    return b"E %d %d\n" % (jobid, status)


def entries(path: str) -> tuple[dict[int, Entry], dict[int, int]]:
    """(the shells started and not ended, the wait statuses of shells that died unheard).

    Unreadable lines are skipped.
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return {}, {}
    return _parse(data)


def _parse(data: bytes) -> tuple[dict[int, Entry], dict[int, int]]:
    started: dict[int, Entry] = {}
    died: dict[int, int] = {}
    for line in data.split(b"\n"):
        words = line.split()
        try:
            if words[0] in (b"S", b"P") and len(words) == 5:
                entry = (int(words[2]), int(words[3]), words[4].decode(), words[0] == b"P")
                started[int(words[1])] = entry
            elif words[0] == b"Q" and len(words) in (2, 3):  # no process, so none alive
                asked = int(words[2]) if len(words) == 3 else 0  # the exec-node's incarnation
                started.setdefault(int(words[1]), (0, asked, "", True))  # not over a shell's
            elif words[0] == b"E" and len(words) in (2, 3):
                jobid = int(words[1])
                started.pop(jobid, None)
                if len(words) == 3:
                    died[jobid] = int(words[2])
        except (IndexError, ValueError, UnicodeDecodeError):
            continue
    return started, died


def live(path: str) -> dict[int, Entry]:
    """The shells the journal records as started (or given their job) and not ended."""
    return entries(path)[0]


def alive(path: str) -> set[int]:
    """The recorded shells that still run (``runs``)."""
    return {jobid for jobid, entry in live(path).items() if runs(entry)}


def runs(entry: Entry) -> bool:
    """Whether the recorded shell still runs: the pid leads its session (or, given its job
    only, lives), since before the record."""
    pid, when, boot, given = entry
    stat = proc_stat(pid) if pid > 0 else None
    if stat is None or boot != boot_id():
        return False
    began = stat[1] <= when * os.sysconf("SC_CLK_TCK") // 1_000_000_000
    return began and (given or stat[0] == pid)


def _members(sid: int, when: int) -> list[int]:
    """The live processes of the session recorded at ``when`` (in clock ticks)."""
    leader = proc_stat(sid)
    if leader is not None and leader[1] > when:
        return []  # the pid names a process started since: the session is gone
    if leader is not None and leader[0] != sid:
        return [sid]  # a shell given a job that has not made its session yet
    members = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        stat = proc_stat(pid)
        if stat is not None and stat[0] == sid and (pid == sid or stat[1] >= when):
            members.append(pid)
    return members


def _kill_session(sid: int, when: int, timeout: float) -> list[int]:
    """SIGKILL the session until it is gone; what survives ``timeout`` (nothing, normally)."""
    deadline = time.monotonic() + timeout
    while members := _members(sid, when):
        foreign = 0
        for pid in members:
            try:
                os.kill(pid, _signal.SIGKILL)
            except ProcessLookupError:
                continue
            except PermissionError:  # a guest's shell: it kills its tasks when its launcher goes
                foreign += 1
        if foreign == len(members):
            return []
        if time.monotonic() > deadline:
            return members
        time.sleep(0.01)  # SIGKILL is delivered asynchronously; the kernel gives no event
    return []


def kill_recorded(
    path: str, jobids: Iterable[int] | None = None, timeout: float = 5.0
) -> tuple[list[int], list[int]]:
    """SIGKILL the sessions of recorded shells (of ``jobids``, or all) and forget them.

    Returns the ids of the jobs that had a live record, and the pids that
    survived SIGKILL for ``timeout`` seconds. With every job, the journal is
    removed; with some, their ``E`` lines are appended.
    """
    entries = live(path)
    if jobids is not None:
        wanted = set(jobids)
        entries = {jobid: e for jobid, e in entries.items() if jobid in wanted}
    boot = boot_id()
    hz = os.sysconf("SC_CLK_TCK")
    survivors: list[int] = []
    for pid, when, entry_boot, _ in entries.values():
        if entry_boot == boot:
            survivors += _kill_session(pid, when * hz // 1_000_000_000, timeout)
    if jobids is None:
        _unlink(path)
    elif entries:
        appender = Appender(path)
        try:
            appender.append(end_lines(entries))
        except FileNotFoundError:  # removed meanwhile: nothing to add to
            pass
        finally:
            appender.close()
    return sorted(entries), survivors


class Appender:
    """Lines appended by a process other than the launcher (job-exec), which a compaction
    neither loses nor lets land in the file it replaced.

    Each line is written under a shared ``flock`` of the file (``compact`` holds
    it exclusively from its read to its rename); a file found replaced (no link
    left) is let go of and the journal opened again.
    """

    __slots__ = ("fd", "path")

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = -1

    def append(self, data: bytes) -> None:
        """Write ``data`` to the journal; FileNotFoundError if there is none (no launcher
        has made it), other OSErrors as ``write`` raises them."""
        while True:
            if self.fd < 0:
                self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
            fcntl.flock(self.fd, fcntl.LOCK_SH)
            try:
                if os.fstat(self.fd).st_nlink:
                    os.write(self.fd, data)
                    return
            finally:
                fcntl.flock(self.fd, fcntl.LOCK_UN)
            self.close()  # compacted into another file: write there

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        return


def compact(path: str, fd: int, shells: Mapping[int, int]) -> bool:
    """Rewrite the journal with the start lines of ``shells`` (job id -> pid) and the jobs
    asked for (``Q``) that no shell was given yet; False if a writer holds the file
    (``Appender``), to be tried again later.

    The new file takes the place of the old one, and of descriptor ``fd``,
    which shells forked later inherit. A shell forked earlier that has not
    written its line yet writes it to the old file, but its line is already in
    the new one, made from /proc: only shells still alive need one. So a shell
    given its job (``P``) is written as started: it may record itself where
    nobody will look. job-exec's lines are all in the old file when it is read,
    since it writes them only under a lock held from then until the rename.
    """
    try:
        lock = os.open(path, os.O_RDONLY | os.O_CLOEXEC)  # the launcher's alone: no shell has it
    except FileNotFoundError:
        return False
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        if os.fstat(lock).st_ino != os.fstat(fd).st_ino:
            return False  # not the file the launcher writes (removed and made again)
        _replace(path, fd, _compacted(_read_all(lock), shells))
        return True
    finally:
        os.close(lock)  # unlocks, after the rename


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _compacted(data: bytes, shells: Mapping[int, int]) -> bytes:
    recorded = _parse(data)[0]
    boot = boot_id().encode()
    hz = os.sysconf("SC_CLK_TCK")
    lines = [asked_line(j, e[1]) for j, e in recorded.items() if not e[0] and j not in shells]
    for jobid, pid in shells.items():
        entry = recorded.get(jobid)
        if entry is not None and entry[0] > 0:
            lines.append(start_line(jobid, entry[0], entry[1], entry[2].encode()))
            continue
        stat = proc_stat(pid)
        if stat is not None:  # else it died before it recorded itself: it started no task
            lines.append(start_line(jobid, pid, stat[1] * 1_000_000_000 // hz, boot))
    return b"".join(lines)


def _replace(path: str, fd: int, data: bytes) -> None:
    """Put a file of ``data`` in place of ``path`` and of descriptor ``fd``."""
    new = f"{path}.new"
    tmp = os.open(new, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        os.write(tmp, data)
        os.rename(new, path)
        os.dup2(tmp, fd, inheritable=False)
    finally:
        os.close(tmp)
