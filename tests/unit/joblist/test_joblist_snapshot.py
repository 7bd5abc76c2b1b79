"""job-list's snapshot: its encoding, and an index that holds inactive jobs as its columns
listing, counting and purging exactly as one that holds their summaries."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from joblist_entries import Story, jobspec

from pflux.joblist import snapshot
from pflux.joblist.attributes import select, to_json
from pflux.joblist.cache import decode, encode
from pflux.joblist.index import JobIndex
from pflux.joblist.snapshot import ColumnsError, Frozen, Row
from pflux.joblist.summary import JobSummary
from pflux.protocol.manager import held_sum
from pflux.spec.resultcodes import RESULT_CANCELED, RESULT_COMPLETED, RESULT_FAILED, USERID_ANY
from pflux.spec.states import State

ALL = select(["all"])
STAMP = b"done\n123 456\n"

texts = st.none() | st.sampled_from(["", "a", "batch", "ƒ", "x" * 40])
rows = st.lists(
    st.tuples(
        st.integers(0, (1 << 64) - 1),  # id
        st.integers(0, 1 << 40),  # nevents
        st.floats(0, 1e10, allow_nan=False),  # t_inactive
        st.integers(-(1 << 40), 1 << 40),  # userid
        st.integers(0, 1 << 40),  # result
        texts,
        texts,
    ),
    max_size=40,
    unique_by=lambda row: row[0],
).map(lambda found: sorted(found, key=lambda row: (row[2], row[0])))


def frozen_of(data: bytes) -> Frozen:
    return Frozen(snapshot.decode(data), lambda jobid, nevents: None)


@settings(max_examples=200, deadline=None)
@given(rows)
def test_any_jobs_survive_the_round_trip(jobs: list[Row]) -> None:
    frozen = frozen_of(snapshot.encode(STAMP, jobs))
    assert frozen.stamp == STAMP
    assert frozen.held() == (len(jobs), held_sum((row[0], row[1]) for row in jobs))
    counts = frozen.confirm_all()
    assert counts == Counter((row[6], row[4]) for row in jobs)
    assert list(frozen.rows()) == jobs
    for i, row in enumerate(jobs):
        assert frozen.find(row[0]) == i
    for jobid in {0, 1, 1 << 40, (1 << 64) - 1} - {row[0] for row in jobs}:
        assert frozen.find(jobid) is None


@settings(max_examples=100, deadline=None)
@given(rows, rows)
def test_a_snapshot_extended_is_one_written_whole(older: list[Row], newer: list[Row]) -> None:
    """``encode`` with a base (its columns copied) writes what it writes from rows."""
    ids = {row[0] for row in older}
    last = older[-1][2] if older else 0.0
    newer = [(jobid, n, last + 1 + t, *rest) for jobid, n, t, *rest in newer if jobid not in ids]
    base = frozen_of(snapshot.encode(b"old", older))
    base.confirm_all()
    extended = frozen_of(snapshot.encode(STAMP, newer, base))
    whole = frozen_of(snapshot.encode(STAMP, older + newer))
    assert extended.held() == whole.held()
    assert extended.confirm_all() == whole.confirm_all()
    assert list(extended.rows()) == list(whole.rows()) == older + newer
    assert all(extended.find(row[0]) == whole.find(row[0]) for row in older + newer)


@settings(max_examples=200, deadline=None)
@given(rows.filter(bool), st.data())
def test_a_damaged_snapshot_is_refused(jobs: list[Row], data: st.DataObject) -> None:
    written = snapshot.encode(STAMP, jobs)
    where = data.draw(st.integers(0, len(written) - 1))
    damaged = [
        written[:where]
        + bytes([written[where] ^ data.draw(st.integers(1, 255))])
        + written[where + 1 :],
        written[:where],
        data.draw(st.binary(max_size=200)),
    ]
    for bad in damaged:
        with pytest.raises(ColumnsError):
            frozen_of(bad)


def test_columns_that_do_not_hold_together_are_refused() -> None:
    """What a CRC cannot catch (a snapshot written wrong): refused, not crashed on."""
    good = snapshot.decode(snapshot.encode(STAMP, [(1, 2, 3.0, 4, 5, "n", "q")]))
    fields: dict[str, Any] = {f: getattr(good, f) for f in snapshot.Columns.__struct_fields__}
    for change in [
        {"ids": b"\0" * 7},
        {"name": (5).to_bytes(8, "little")},
        {"by_id": (1).to_bytes(8, "little")},
        {"counts": [(0, 5, 2)]},
        {"counts": [(3, 5, 1)]},
    ]:
        with pytest.raises(ColumnsError):
            Frozen(snapshot.Columns(**{**fields, **change}), lambda jobid, nevents: None)


# --- an index with a snapshot lists as one with summaries -----------------------------------


def variety() -> list[Story]:
    """Inactive jobs of several users, names, queues and endings, and active ones."""
    out = []
    for n in range(1, 41):
        spec = jobspec(f"/bin/job{n % 3}", queue="batch" if n % 4 else "debug")
        story = Story(n * 1000 + 7, t0=1000.0 + (n * 37) % 23)
        userid = 1000 + n % 3
        if n % 5 == 0:
            story.pending(userid=userid, spec=spec).exception("cancel", note="no").event("clean")
        else:
            story.completed(status=256 * (n % 2), userid=userid, spec=spec)
        out.append(story)
    out.append(Story(99000).running(spec=jobspec(queue="batch")))
    out.append(Story(99001).pending(userid=1001))
    return out


def indexes() -> tuple[JobIndex, JobIndex]:
    """The same jobs: in an index fed every event, and in one given the inactive ones as a
    snapshot (their summaries fetched as the cache's records), confirmed by ``held``."""
    fed = JobIndex()
    for story in variety():
        fed.feed(story.entries)
    fed.settle()
    inactive = fed.inactive.items
    records = {s.id: encode(s) for s in inactive}
    data = snapshot.encode(
        STAMP,
        [(s.id, s.next_seq, s.t_inactive, s.userid, s.result, s.name, s.queue) for s in inactive],
    )

    def fetch(jobid: int, nevents: int) -> JobSummary | None:
        return decode(jobid, nevents, records[jobid])

    thawed = JobIndex()
    thawed.preload_frozen(Frozen(snapshot.decode(data), fetch))
    assert thawed.cached_sum() == (len(inactive), held_sum((s.id, s.next_seq) for s in inactive))
    thawed.take_cached()
    for story in variety()[-2:]:
        thawed.feed(story.entries)
    for story in variety()[:3]:  # the backlog's duplicates of inactive jobs change nothing
        thawed.feed(story.entries)
    thawed.settle()
    return fed, thawed


FILTERS: list[dict[str, Any]] = [
    {},
    {"max_entries": 1},
    {"max_entries": 7},
    {"userid": 1001},
    {"userid": USERID_ANY},
    {"states": int(State.INACTIVE)},
    {"states": int(State.PENDING | State.RUNNING)},
    {"results": RESULT_FAILED},
    {"results": RESULT_CANCELED | RESULT_COMPLETED},
    {"states": int(State.RUNNING), "results": RESULT_FAILED},
    {"since": 1015.0},
    {"name": "job1"},
    {"name": "absent"},
    {"queues": frozenset(["debug"])},
    {"queues": frozenset(["batch", "debug"]), "userid": 1002, "results": RESULT_COMPLETED},
]


def same(fed: JobIndex, thawed: JobIndex) -> None:
    for filters in FILTERS:
        assert thawed.list(ALL, **filters) == fed.list(ALL, **filters), filters
    assert thawed.job_counts.answer() == fed.job_counts.answer()
    assert thawed.counts() == fed.counts()
    assert len(thawed) == len(fed)
    for jobid in [*fed.jobs, 12345]:
        found, expected = thawed.get(jobid), fed.get(jobid)
        assert (found is None) == (expected is None)
        if found is not None and expected is not None:
            assert to_json(found, ALL) == to_json(expected, ALL)


def test_a_snapshot_lists_counts_and_purges_as_summaries_do() -> None:
    fed, thawed = indexes()
    assert thawed.frozen is not None
    assert thawed.frozen.confirmed == 40
    assert len(thawed.jobs) == 2  # only the active jobs have summaries
    same(fed, thawed)
    gone = [fed.inactive.items[0].id, fed.inactive.items[-1].id]
    purge = [
        {"id": jobid, "seq": -1, "entry": {"timestamp": 9e3, "name": "purge", "context": {}}}
        for jobid in gone
    ]
    ended = Story(99001, t0=5000.0).pending(userid=1001).exception("cancel").event("clean")
    for index in (fed, thawed):
        index.feed(purge)
        index.feed(ended.entries[4:])
    same(fed, thawed)
    assert thawed.purged == gone
    assert thawed.frozen is not None
    assert thawed.frozen.confirmed == 38


def test_the_snapshot_written_at_a_stop_holds_every_inactive_job() -> None:
    """The jobs ended since the start are added to the snapshot's (its columns copied)."""
    fed, thawed = indexes()
    ended = Story(99001, t0=5000.0).pending(userid=1001).exception("cancel").event("clean")
    for index in (fed, thawed):
        index.feed(ended.entries[4:])
    base, added = thawed.inactive_rows()
    assert base is thawed.frozen
    again = frozen_of(snapshot.encode(STAMP, added, base))
    again.confirm_all()
    assert [row[0] for row in again.rows()] == [s.id for s in fed.inactive.items]
    plain, every = fed.inactive_rows()
    assert plain is None
    assert list(again.rows()) == list(every)


def test_a_digest_confirms_a_snapshot_job_by_job() -> None:
    """Not ``held``: a job the digest counts otherwise is asked for again, one it does not
    name is dropped, the others are taken from the snapshot."""
    stories = variety()
    gone, other = stories[0], stories[1]
    fed = JobIndex()
    for story in stories[1:]:
        fed.feed(story.entries)
    fed.settle()
    whole = JobIndex()
    for story in stories:
        whole.feed(story.entries)
    whole.settle()
    records = {s.id: encode(s) for s in whole.inactive.items}
    data = snapshot.encode(
        STAMP,
        [
            (
                s.id,
                s.next_seq - (s.id == other.jobid),
                s.t_inactive,
                s.userid,
                s.result,
                s.name,
                s.queue,
            )
            for s in whole.inactive.items
        ],
    )
    thawed = JobIndex()
    thawed.preload_frozen(Frozen(snapshot.decode(data), lambda i, n: decode(i, n, records[i])))
    pairs = [[s.id, s.next_seq] for s in whole.inactive.items if s.id != gone.jobid]
    assert thawed.digest(pairs) == [other.jobid]
    for story in [other, *stories[-2:]]:
        thawed.feed(story.entries)
    thawed.settle()
    assert thawed.dropped == [gone.jobid]
    same(fed, thawed)
