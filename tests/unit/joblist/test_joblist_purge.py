"""job-list and purged jobs: a ``purge`` journal entry drops the job everywhere, even
while the backlog (or the digest) that would bring it back is still coming; the cache
deletes its row and gives the space back."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from joblist_entries import Story

from pflux.joblist import cache as cache_module
from pflux.joblist.attributes import select
from pflux.joblist.cache import SummaryCache
from pflux.joblist.index import JobIndex

IDS = select([])


def purge(jobid: int) -> dict[str, Any]:
    return {"id": jobid, "seq": -1, "entry": {"timestamp": 2000.0, "name": "purge", "context": {}}}


def listed(index: JobIndex) -> list[int]:
    return [job["id"] for job in index.list(IDS)]


def test_a_purged_job_leaves_the_index_and_its_listing() -> None:
    index = JobIndex()
    index.feed([*Story(1).completed().entries, *Story(2).completed().entries])
    index.settle()
    index.feed([purge(1)])
    assert listed(index) == [2]
    assert index.get(1) is None
    assert index.purged == [1]
    index.feed([purge(3)])  # never seen: nothing to drop, still told to the cache
    assert listed(index) == [2]


def test_a_purge_ahead_of_the_backlog_keeps_the_job_from_coming_back() -> None:
    index = JobIndex()
    story = Story(1).completed()
    index.feed([purge(1)])  # live, before any of the job's history from the KVS
    index.feed(story.entries)
    other = Story(2).completed()
    index.feed([other.entries[0], purge(2), *other.entries[1:]])  # in the middle of it
    index.settle()
    assert listed(index) == []
    assert index.get(1) is None


def test_a_digest_naming_a_job_purged_since_does_not_bring_it_back() -> None:
    index = JobIndex()
    cached = JobIndex()
    cached.feed(Story(1).completed().entries)
    index.preload({1: cached.jobs[1]})
    index.feed([purge(1)])
    assert index.digest([[1, len(Story(1).completed().entries)], [2, 3]]) == [2]
    index.settle()
    assert index.get(1) is None


def test_the_cache_deletes_purged_rows_and_gives_back_their_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache_module, "RECLAIM_SLACK", 0)  # a few jobs: less than the slack
    path = tmp_path / "job-list.sqlite"
    index = JobIndex()
    for jobid in range(1, 2001):
        index.feed(Story(jobid).completed().entries)
    cache = SummaryCache(path)
    cache.load()
    cache.add(list(index.jobs.values()))
    cache.flush()
    conn = sqlite3.connect(path)
    full = conn.execute("PRAGMA page_count").fetchone()[0]
    cache.purge(list(range(1, 2000)))
    cache.flush()
    assert conn.execute("SELECT id FROM job").fetchall() == [(2000,)]
    assert conn.execute("PRAGMA page_count").fetchone()[0] < full / 2
    conn.close()
    cache.close()


def test_a_cache_file_made_before_is_switched_to_incremental_auto_vacuum(tmp_path: Path) -> None:
    path = tmp_path / "job-list.sqlite"
    cache = SummaryCache(path)
    cache.load()
    cache.close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA auto_vacuum = NONE")
    conn.execute("VACUUM")
    conn.close()
    cache = SummaryCache(path)
    cache.load()
    cache.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
    conn.close()
