"""Storage faults: a state directory whose files were damaged after a crash.

The seed is a state directory holding acknowledged jobs, its broker killed
with SIGKILL (so the WAL still holds the last transactions). Each test damages
a copy of it. The instance must either start and keep every acknowledged
job, or refuse to start with one clear message naming the file and what to
do: never a traceback, never silently starting empty.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from pflux.api import Client
from support.instance import PFLUX, LiveInstance, jobspec
from support.storage import refused, start

JOBS = 40
LIST = (str(PFLUX), "jobs", "-a", "-n", "-c", "0", "-o", "{id.dec}")


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, set[int]]:
    """A state directory with ``JOBS`` acknowledged jobs, half of them in the WAL alone."""
    state = tmp_path_factory.mktemp("seed") / "state"
    with LiveInstance(state, cores=1) as live, Client(live.uri) as client:
        done = {int(client.submit(jobspec())) for _ in range(JOBS // 2)}
        client.drain()
    # a clean stop checkpointed those into kvs.sqlite; these are in the WAL alone
    live = LiveInstance(state, cores=1)
    with Client(live.uri) as client:
        held = {int(client.submit(jobspec(), urgency="hold")) for _ in range(JOBS // 2)}
    live.kill()
    # job-list's process stops once its link is gone: wait for its lock, so that the
    # copies see the files it left
    fd = os.open(state / "job-list.sqlite.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    finally:
        os.close(fd)
    assert (state / "kvs.sqlite-wal").exists()
    return state, done | held


@pytest.fixture
def state(seed: tuple[Path, set[int]], tmp_path: Path) -> Path:
    """A copy of the seed to damage."""
    copy = tmp_path / "state"
    shutil.copytree(seed[0], copy, ignore=shutil.ignore_patterns("local", "sock"))
    return copy


def listed(state: Path, *args: str) -> set[int]:
    proc = start(state, *args, command=LIST)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return {int(line) for line in proc.stdout.split()}


def test_an_undamaged_copy_keeps_every_job(state: Path, seed: tuple[Path, set[int]]) -> None:
    assert listed(state) == seed[1]


def empty(path: Path) -> None:
    path.write_bytes(b"")


def test_an_emptied_kvs_is_refused_unless_fresh(state: Path) -> None:
    db = state / "kvs.sqlite"
    empty(db)
    (state / "kvs.sqlite-wal").unlink()
    refused(start(state), str(db), "empty or missing", "--fresh")
    assert db.stat().st_size == 0  # refused before anything was written
    assert listed(state, "--fresh") == set()
    assert listed(state) == set()  # the fresh instance is the state directory's from now on


@pytest.mark.parametrize("name", ["kvs.sqlite", "kvs.sqlite-wal"])
def test_a_deleted_database_file_is_refused(state: Path, name: str) -> None:
    (state / name).unlink()
    refused(start(state), name)


def test_a_deleted_wal_after_a_clean_stop_is_nothing_lost(
    state: Path, seed: tuple[Path, set[int]]
) -> None:
    assert listed(state) == seed[1]  # a clean stop: the WAL is checkpointed and removed
    assert not (state / "kvs.sqlite-wal").exists()
    assert listed(state) == seed[1]


def test_fresh_on_a_database_with_jobs_is_refused(state: Path, seed: tuple[Path, set[int]]) -> None:
    refused(start(state, "--fresh"), "kvs.sqlite", "--fresh", "holds an instance's data")
    assert listed(state) == seed[1]


def test_fresh_without_a_state_directory_is_a_usage_error() -> None:
    argv = [str(PFLUX), "start", "--fresh", "true"]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert "pflux-start: ERROR: --fresh: only with --state-dir" in proc.stderr


def truncate(path: Path) -> None:
    """Cut the file to its first page. Half of it is not enough: the WAL may hold a newer
    copy of every page of the second half (SQLite then rightly reads it whole), but not
    of the pages of the jobs that ended before it (their records, say), which no later
    commit touched."""
    os.truncate(path, min(path.stat().st_size // 2, 4096))


def zero(path: Path) -> None:
    path.write_bytes(bytes(path.stat().st_size))


def garble(path: Path) -> None:
    """Overwrite the second quarter of the file with bytes no SQLite page or journal holds."""
    size = path.stat().st_size
    with path.open("r+b") as f:
        f.seek(size // 4)
        f.write(bytes(range(7, 256, 7)) * (size // 4 // 36 + 1))


DAMAGES = [truncate, zero, garble]


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_kvs_is_refused_naming_it(state: Path, damage: Callable[[Path], None]) -> None:
    damage(state / "kvs.sqlite")
    refused(start(state), str(state / "kvs.sqlite"), "corrupt", "restore it from a backup")


@pytest.mark.parametrize("damage", [*DAMAGES, empty])
def test_a_damaged_job_list_cache_is_rebuilt(
    state: Path, seed: tuple[Path, set[int]], damage: Callable[[Path], None]
) -> None:
    damage(state / "job-list.sqlite")
    assert listed(state) == seed[1]


def test_a_garbled_exec_journal_is_no_fault(state: Path, seed: tuple[Path, set[int]]) -> None:
    with (state / "exec" / "journal").open("ab") as journal:
        journal.write(b"S 12x 99999999 no-time no-boot\n\xff\xfe garbage\nE\n")
    assert listed(state) == seed[1]


@pytest.mark.parametrize("damage", [zero, garble])
def test_a_damaged_wal_is_refused_naming_it(state: Path, damage: Callable[[Path], None]) -> None:
    wal = state / "kvs.sqlite-wal"
    damage(wal)
    refused(start(state), str(wal), "the WAL is damaged", "Put back an undamaged copy")


def test_going_on_from_a_damaged_wal_is_the_users_call(
    state: Path, seed: tuple[Path, set[int]]
) -> None:
    garble(state / "kvs.sqlite-wal")
    (state / "kvs.sqlite.state").unlink()  # as the refusal says
    kept = listed(state)
    # the jobs checkpointed into kvs.sqlite, and what SQLite could read of the WAL
    assert JOBS // 2 <= len(kept) < JOBS
    assert kept <= seed[1]
