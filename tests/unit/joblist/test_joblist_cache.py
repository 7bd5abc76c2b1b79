"""job-list's cache of inactive jobs: records, the SQLite file, and the index's digest."""

from __future__ import annotations

import gc
import os
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from joblist_entries import R_2NODES, Story, jobspec

from pflux.joblist import cache as cache_module
from pflux.joblist.attributes import select, to_json
from pflux.joblist.cache import CACHE_NAME, FORMAT, SummaryCache, decode, encode
from pflux.joblist.index import JobIndex
from pflux.joblist.summary import JobSummary
from pflux.spec.states import State
from support.sqltrace import traced_opens

ALL = select(["all"])


def stories() -> list[Story]:
    """Inactive jobs of every kind job-list reports differently."""
    memo = Story(2).pending().event("memo", {"note": "x"})
    memo.event("alloc", {"annotations": {"sched": {"resource_summary": "r"}}}, R=R_2NODES)
    memo.event("start").finish(256)
    depend = Story(3).submit().event("validate")
    depend.event("dependency-add", {"description": "after:1"})
    depend.exception("dependency", note="never").event("clean")
    update = Story(4).pending(spec=jobspec(queue="batch"))
    update.event("jobspec-update", {"attributes.system.duration": 60.0})
    update.event("alloc", R=R_2NODES).event("resource-update", {"expiration": 9999.0})
    update.event("start").exception("timelimit", note="ran out").finish(9)
    return [
        Story(1).completed(),
        memo,
        depend,
        update,
        Story(5).pending().exception("cancel", note="not today").event("clean"),
        Story(6).submit(spec={"version": 1}).event("validate").event("depend").exception("x"),
        Story((1 << 64) - 7).completed(userid=0),
    ]


def summaries() -> list[JobSummary]:
    index = JobIndex()
    for story in stories():
        index.feed(story.entries)
    index.settle()
    return [s for s in index.jobs.values() if s.state is State.INACTIVE]


def test_a_record_lists_as_the_summary_it_was_made_from() -> None:
    made = summaries()
    assert len(made) == 6
    for summary in made:
        restored = decode(summary.id, summary.next_seq, encode(summary))
        assert restored is not None
        assert to_json(restored, ALL) == to_json(summary, ALL)
        assert (restored.next_seq, restored.state, restored.live) == (
            summary.next_seq,
            State.INACTIVE,
            None,
        )


texts = st.none() | st.text(max_size=8)
numbers = st.integers(-1, 2**40) | st.floats(-1.0, 1e10)


@settings(max_examples=150)
@given(
    ints=st.lists(st.integers(-1, 2**32), min_size=9, max_size=9),
    times=st.lists(st.floats(0.0, 2e9), min_size=7, max_size=7),
    strings=st.lists(texts, min_size=7, max_size=7),
    duration=numbers,
    expiration=numbers,
    exception=st.none() | st.tuples(st.text(max_size=5), st.integers(0, 7), st.text(max_size=5)),
    annotations=st.none() | st.dictionaries(st.text(max_size=4), st.integers(-9, 9), min_size=1),
    dependencies=st.none() | st.tuples(st.text(max_size=6)),
)
def test_any_summary_survives_the_round_trip(
    *,
    ints: list[int],
    times: list[float],
    strings: list[str | None],
    duration: float,
    expiration: float,
    exception: tuple[str, int, str] | None,
    annotations: dict[str, Any] | None,
    dependencies: tuple[str, ...] | None,
) -> None:
    s = JobSummary.restored(42, ints[0] & 0xFFFF)
    s.userid, s.urgency, s.priority, s.states, s.ntasks, s.ncores, s.nnodes = ints[1:8]
    s.waitstatus = s.result = ints[8]
    s.t_submit, s.t_depend, s.t_priority, s.t_sched, s.t_run, s.t_cleanup, s.t_inactive = times
    s.name, s.cwd, s.queue, s.project, s.bank, s.ranks, s.nodelist = strings
    s.duration, s.expiration, s.exception = duration, expiration, exception
    s.annotations = None if annotations is None else orjson.dumps(annotations).decode()
    s.dependencies = dependencies
    restored = decode(42, s.next_seq, encode(s))
    assert restored is not None
    assert to_json(restored, ALL) == to_json(s, ALL)


@pytest.mark.parametrize(
    "record",
    [
        b"not json",
        b"{}",
        b"[1, 2]",
        orjson.dumps([0] * 28),  # times must be numbers, fine; names must be text or null
        b'["x"' + b",0" * 27 + b"]",
    ],
)
def test_decode_refuses_what_job_list_did_not_write(record: bytes) -> None:
    assert decode(1, 3, record) is None


def test_decode_checks_exception_annotations_and_dependencies() -> None:
    good = summaries()[1]
    record = orjson.loads(encode(good))
    assert decode(good.id, 10, orjson.dumps(record)) is not None
    for index, value in [(25, ["cancel", "0", "note"]), (25, ["a"]), (26, "[1]"), (26, "{"),
                         (27, [1])]:  # fmt: skip
        bad = list(record)
        bad[index] = value
        assert decode(good.id, 10, orjson.dumps(bad)) is None, (index, value)


def written(path: Path, made: list[JobSummary]) -> SummaryCache:
    cache = SummaryCache(path)
    assert cache.load() == {}
    cache.add(made)
    cache.close()
    return SummaryCache(path)


def test_the_file_keeps_what_was_written(tmp_path: Path) -> None:
    made = summaries()
    cache = written(tmp_path / CACHE_NAME, made)
    loaded = cache.load()
    assert sorted(loaded) == sorted(s.id for s in made)
    for s in made:
        assert to_json(loaded[s.id], ALL) == to_json(s, ALL)
        assert loaded[s.id].next_seq == s.next_seq
    cache.discard([made[0].id])
    cache.close()
    assert made[0].id not in SummaryCache(tmp_path / CACHE_NAME).load()


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "format", "other"])
def test_an_unreadable_file_is_started_afresh(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / CACHE_NAME
    written(path, summaries() * 1).close()
    if damage == "garbage":
        path.write_bytes(b"\x00not a database\xff" * 512)
    elif damage == "truncated":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2 + 100])
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        with sqlite3.connect(path) as conn:
            pragma = "user_version" if damage == "format" else "application_id"
            conn.execute(f"PRAGMA {pragma} = {FORMAT + 7}")
        conn.close()
    cache = SummaryCache(path)
    loaded = cache.load()
    if damage != "empty":  # an empty file is a new database: nothing to say
        assert loaded == {}
        assert "starting the cache afresh" in caplog.text
    made = summaries()
    cache.add(made)
    cache.close()
    assert len(SummaryCache(path).load()) == len(made)


def test_invalid_rows_are_ignored(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / CACHE_NAME
    made = summaries()
    written(path, made).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE job SET record = 'oops' WHERE id = ?", (made[0].id,))
        conn.execute("UPDATE job SET nevents = 'x' WHERE id = ?", (made[1].id,))
        conn.execute("UPDATE job SET nevents = nevents + 1 WHERE id = ?", (made[2].id,))
        # a flipped digit: valid JSON, and a row that fails its check
        record = conn.execute("SELECT record FROM job WHERE id = ?", (made[3].id,)).fetchone()[0]
        flipped = record.replace(b"16", b"17", 1)
        assert flipped != record
        conn.execute("UPDATE job SET record = ? WHERE id = ?", (flipped, made[3].id))
    conn.close()
    loaded = SummaryCache(path).load()
    assert sorted(loaded) == sorted(s.id for s in made[4:])
    assert "4 invalid rows ignored" in caplog.text


def test_a_cache_that_cannot_be_written_only_logs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = SummaryCache(tmp_path / "missing-dir" / CACHE_NAME)
    assert cache.load() == {}
    cache.add(summaries())
    cache.close()
    assert "going on without a cache" in caplog.text
    unwritable = tmp_path / "ro"
    unwritable.mkdir()
    (unwritable / f"{CACHE_NAME}.lock").touch()
    unwritable.chmod(0o500)
    try:
        cache = SummaryCache(unwritable / CACHE_NAME)
        assert cache.load() == {}
        cache.add(summaries())
        cache.close()
    finally:
        unwritable.chmod(0o700)
    if os.geteuid() != 0:  # root may write anyway
        assert "cannot create the cache" in caplog.text


def test_a_file_as_its_clean_close_left_it_is_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No quick_check, no CRCs: a row whose CRC is wrong, in a file restamped as it was
    (same size and time), is read; the same file with another time is checked."""
    path = tmp_path / CACHE_NAME
    made = summaries()
    written(path, made).close()
    st = path.stat()
    assert Path(f"{path}.state").read_bytes() == b"done\n%d %d\n" % (st.st_size, st.st_mtime_ns)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE job SET crc = crc + 1 WHERE id = ?", (made[0].id,))
    conn.close()
    assert path.stat().st_size == st.st_size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    statements = traced_opens(monkeypatch)
    cache = SummaryCache(path)
    assert sorted(cache.load()) == sorted(s.id for s in made)
    cache.close()  # nothing written: the file and its stamp are as they were
    assert not [sql for sql in statements if "quick_check" in sql]
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    cache = SummaryCache(path)
    assert made[0].id not in cache.load()
    cache.close()
    assert [sql for sql in statements if "quick_check" in sql]


def test_the_rows_are_read_with_no_collection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A collection in the middle of a million rows would look at every summary made."""
    path = tmp_path / CACHE_NAME
    made = summaries()
    written(path, made).close()
    collecting: list[bool] = []

    def noted(jobid: int, nevents: int, record: bytes) -> JobSummary | None:
        collecting.append(gc.isenabled())
        return decode(jobid, nevents, record)

    monkeypatch.setattr(cache_module, "decode", noted)
    assert len(SummaryCache(path).load()) == len(made)
    assert collecting == [False] * len(made)
    assert gc.isenabled()


def test_one_process_at_a_time(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / CACHE_NAME
    made = summaries()
    first = SummaryCache(path)
    first.load()
    first.add(made)
    first.flush()
    second = SummaryCache(path)
    assert second.load() == {}  # in use: no cache for the second, and nothing written
    second.add(made[:1])
    second.close()
    assert "in use by another process" in caplog.text
    first.close()
    assert len(SummaryCache(path).load()) == len(made)


# --- the index and the digest ------------------------------------------------------------


def test_digest_takes_confirmed_jobs_and_asks_for_the_rest() -> None:
    made = {s.id: s for s in summaries()}
    ids = sorted(made)
    index = JobIndex()
    index.ended = []
    index.preload(dict(made))
    assert index.preloaded == len(made)
    digest = [[ids[0], made[ids[0]].next_seq], [ids[1], made[ids[1]].next_seq + 1], [99, 4]]
    assert index.digest([*digest, "junk", [1], ["a", 1]]) == [ids[1], 99]
    assert index.get(ids[0]) is made[ids[0]]
    assert index.get(ids[1]) is None
    index.feed(Story(99).completed().entries)  # a history asked for
    index.settle()
    assert sorted(index.dropped) == ids[2:]  # cached, named by no digest
    assert [s.id for s in index.inactive.items] == [ids[0], 99]
    assert [s.id for s in index.ended] == [99]  # built here: for the cache to write


def test_digest_ignores_what_is_not_a_list() -> None:
    index = JobIndex()
    assert index.digest({"1": 2}) == []


def test_a_bug_reading_the_file_starts_it_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """job-list must not fail at every start on one file."""
    path = tmp_path / CACHE_NAME
    written(path, summaries()).close()

    def broken(jobid: int, nevents: int, record: bytes) -> JobSummary | None:
        raise RuntimeError("a bug")

    monkeypatch.setattr("pflux.joblist.cache.decode", broken)
    assert SummaryCache(path).load() == {}
    assert "starting the cache afresh" in caplog.text
    monkeypatch.undo()
    assert SummaryCache(path).load() == {}  # the file was started afresh
