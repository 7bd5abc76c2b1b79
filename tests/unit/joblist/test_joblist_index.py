"""The job-list index: seq ordering of journal entries, listing order and filters."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from joblist_entries import Story, jobspec

from pflux.joblist.attributes import select
from pflux.joblist.index import USERID_ANY, JobIndex
from pflux.spec.states import State

ALL = select(["all"])
IDS = select([])


def ids(index: JobIndex, **filters: Any) -> list[int]:
    return [job["id"] for job in index.list(IDS, **filters)]


def settled(*entries: dict[str, Any]) -> JobIndex:
    index = JobIndex()
    index.feed(entries)
    index.settle()
    return index


@contextmanager
def no_errors_logged() -> Iterator[None]:
    """Fail if job-list logs an error (its self-checks) inside the block."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.ERROR)
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("pflux.job-list")
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
    assert [r.getMessage() for r in records] == []


def stories() -> list[Story]:
    """A mix of jobs in every state, some sharing timestamps."""
    completed = Story(10, 1000.0).completed(userid=1)
    failed = Story(11, 1000.0).completed(status=256, userid=2)
    canceled = Story(12, 1003.0).pending(userid=1).exception("cancel", note="x").event("clean")
    running = Story(13, 1001.0).running(userid=1)
    cleanup = Story(14, 1002.0).running(userid=2).exception("exec", note="boom")
    low = Story(15, 1000.0).pending(priority=2, userid=1)
    high = Story(16, 1000.0).pending(priority=30, userid=2)
    expedited = Story(17, 1000.0).pending(userid=1)
    expedited.event("urgency", {"urgency": 31, "userid": 1})
    expedited.event("priority", {"priority": 4294967295})
    expedited.event("memo", {"note": "hi"})
    held = Story(18, 1000.0).pending(userid=1).event("urgency", {"urgency": 0, "userid": 1})
    depend = Story(19, 1000.0).submit(userid=2).event("validate")
    depend.event("dependency-add", {"description": "after-success=10"})
    new = Story(20, 1000.0).submit(userid=1)
    return [completed, failed, canceled, running, cleanup, low, high, expedited, held, depend, new]


def everything() -> list[dict[str, Any]]:
    return [entry for story in stories() for entry in story.entries]


# --- ordering --------------------------------------------------------------------------------


def test_flux_order_pending_running_inactive() -> None:
    index = settled(*everything())
    # pending: priority, highest first, then id (18 keeps its old priority until it gets
    # a new one, as in flux-core; 19 has none yet: 0)
    # running: newest t_run first; inactive: newest t_inactive first, ties by newest id
    assert ids(index) == [17, 16, 18, 15, 19, 14, 13, 12, 11, 10]


def test_new_jobs_are_not_listed_until_validated() -> None:
    index = settled(*Story(1).submit().entries)
    assert ids(index) == []
    assert index.get(1) is not None


def test_orderings_follow_live_transitions() -> None:
    index = settled(*everything())
    low = Story(15, 1010.0).pending(priority=2, userid=1)  # seq 0-3 are duplicates
    low.event("urgency", {"urgency": 20, "userid": 1}).event("priority", {"priority": 40})
    index.feed(low.entries)
    assert ids(index, states=int(State.PENDING)) == [17, 15, 16, 18, 19]
    low.event("alloc").event("start")
    index.feed(low.entries)
    assert ids(index, states=int(State.RUNNING)) == [15, 14, 13]
    low.finish(0)
    index.feed(low.entries)
    assert ids(index, states=int(State.INACTIVE))[0] == 15


def test_max_entries_stops_early() -> None:
    index = settled(*everything())
    assert ids(index, max_entries=3) == [17, 16, 18]
    assert len(ids(index, max_entries=0)) == 10


# --- filters ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"states": int(State.PENDING)}, [17, 16, 18, 15, 19]),
        ({"states": int(State.SCHED)}, [17, 16, 15]),
        ({"states": int(State.DEPEND | State.PRIORITY)}, [18, 19]),
        ({"states": int(State.RUNNING)}, [14, 13]),
        ({"states": int(State.RUN)}, [13]),
        ({"states": int(State.INACTIVE)}, [12, 11, 10]),
        ({"results": 1}, [10]),
        ({"results": 2 | 4}, [12, 11]),
        ({"states": int(State.RUN), "results": 2}, [13, 11]),
        ({"userid": 2}, [16, 19, 14, 11]),
        ({"userid": 1, "states": int(State.INACTIVE)}, [12, 10]),
        ({"userid": -1}, [17, 16, 18, 15, 19, 14, 13, 12, 11, 10]),
        ({"userid": USERID_ANY, "max_entries": 1}, [17]),
        ({"name": "true", "states": int(State.RUNNING)}, [14, 13]),
        ({"name": "false"}, []),
        ({"queues": frozenset({"batch"})}, []),
        ({"since": 1001.4}, [17, 16, 18, 15, 19, 14, 13, 12]),
    ],
)
def test_filters(filters: dict[str, Any], expected: list[int]) -> None:
    assert ids(settled(*everything()), **filters) == expected


def test_queue_filter() -> None:
    index = settled(
        *Story(1).pending(spec=jobspec(queue="batch")).entries,
        *Story(2).pending(spec=jobspec(queue="debug")).entries,
        *Story(3).pending().entries,
    )
    assert ids(index, queues=frozenset({"batch", "debug"})) == [1, 2]
    assert ids(index, queues=frozenset({"debug"})) == [2]


# --- seq order ---------------------------------------------------------------------------------


def test_entries_out_of_order_wait_for_their_predecessors() -> None:
    entries = Story(1).completed().entries
    index = JobIndex()
    index.feed(entries[5:])
    assert index.get(1) is None
    assert index.held == 5
    index.feed(entries[2:5])
    assert index.held == 8
    index.feed(entries[:2])
    assert index.held == 0
    index.settle()
    assert index.list(ALL) == settled(*entries).list(ALL)


def test_duplicates_are_dropped() -> None:
    entries = Story(1).completed().entries
    index = settled(*entries, *entries[3:], *entries)
    assert index.list(ALL) == settled(*entries).list(ALL)


def test_annotations_before_the_job_are_kept_for_it() -> None:
    story = Story(1).pending()
    index = settled(story.annotate({"sched": {"reason_pending": "busy"}}), *story.entries)
    assert index.list(select(["annotations"])) == [
        {"id": 1, "annotations": {"sched": {"reason_pending": "busy"}}}
    ]


def test_an_invalidated_job_is_forgotten() -> None:
    story = Story(1).submit().event("invalidate")
    assert len(settled(*story.entries)) == 0
    index = settled()
    index.feed(story.entries)
    assert len(index) == 0
    assert ids(index) == []


def test_an_invalidated_job_is_not_revived_by_the_backlog() -> None:
    story = Story(1).submit().event("invalidate")
    index = JobIndex()
    index.feed([*story.entries, story.entries[0], story.annotate({"a": 1})])
    index.settle()
    assert len(index) == 0


def test_gaps_left_at_the_sentinel_are_dropped(caplog: pytest.LogCaptureFixture) -> None:
    entries = Story(1).completed().entries
    index = settled(*entries[:3], *entries[4:])
    assert index.held == 0
    summary = index.get(1)
    assert summary is not None
    assert summary.state is State.PRIORITY  # submit, validate, depend; then the gap
    assert "never got their predecessors" in caplog.text


@pytest.mark.parametrize(
    "entry",
    [
        None,
        "text",
        {"seq": 0},
        {"id": "1", "seq": 0},
        {"id": 1, "seq": 0.0},
        {"id": 1, "seq": -1, "entry": {"context": 3}},
    ],
)
def test_malformed_entries_are_ignored(entry: Any, caplog: pytest.LogCaptureFixture) -> None:
    index = settled(entry)
    assert len(index) == 0
    assert "job-list" in caplog.text


def test_a_bad_event_is_skipped_but_counted() -> None:
    entries = Story(1).pending().entries
    entries[2] = {**entries[2], "entry": {"name": "depend"}}  # no timestamp
    index = settled(*entries)
    summary = index.get(1)
    assert summary is not None
    assert summary.next_seq == 4
    assert summary.state is State.DEPEND  # depend was lost, so priority was illegal


# --- properties ----------------------------------------------------------------------------------


def _merge(draw: st.DrawFn, streams: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """A random interleaving of ``streams`` that keeps each stream's own order."""
    pending = [list(s) for s in streams if s]
    out = []
    while pending:
        i = draw(st.integers(0, len(pending) - 1))
        out.append(pending[i].pop(0))
        if not pending[i]:
            del pending[i]
    return out


@st.composite
def journal_deliveries(draw: st.DrawFn) -> list[dict[str, Any]]:
    """What a subscriber with ``full`` may see: the backlog read from the KVS and the live
    entries published meanwhile, the two streams interleaved.

    Each job's backlog holds its first ``b`` entries and its live stream entries
    ``l..n`` with ``l <= b`` (what was committed before the read overlaps what
    was published after the subscription), plus a scheduler annotation.
    """
    backlog: list[dict[str, Any]] = []
    live: list[list[dict[str, Any]]] = []
    for story in stories():
        n = len(story.entries)
        b = draw(st.integers(0, n))
        first_live = draw(st.integers(0, b))
        backlog.extend(story.entries[:b])
        stream = story.entries[first_live:]
        stream.insert(draw(st.integers(0, len(stream))), story.annotate({"sched": {"n": n}}))
        live.append(stream)
    return _merge(draw, [backlog, _merge(draw, live)])


def _in_order() -> JobIndex:
    index = JobIndex()
    for story in stories():
        index.feed(story.entries)
        index.feed([story.annotate({"sched": {"n": len(story.entries)}})])
    index.settle()
    return index


@settings(max_examples=150, deadline=None)
@given(journal_deliveries())
def test_any_interleaving_gives_the_in_order_result(delivered: list[dict[str, Any]]) -> None:
    index = JobIndex()
    with no_errors_logged():
        index.feed(delivered)
        index.settle()
    assert index.held == 0
    assert index.list(ALL) == _in_order().list(ALL)


@st.composite
def live_histories(draw: st.DrawFn) -> tuple[list[dict[str, Any]], int]:
    """Every job's entries in some interleaving, and where the sentinel falls in it."""
    merged = _merge(draw, [story.entries for story in stories()])
    return merged, draw(st.integers(0, len(merged)))


@settings(max_examples=100, deadline=None)
@given(live_histories())
def test_orderings_kept_live_equal_orderings_built_at_once(
    history: tuple[list[dict[str, Any]], int],
) -> None:
    merged, cut = history
    live = JobIndex()
    live.feed(merged[:cut])
    live.settle()
    with no_errors_logged():
        for entry in merged[cut:]:
            live.feed_one(entry)
            for ordering in (live.pending, live.running, live.inactive):
                assert ordering.items == sorted(ordering.items, key=ordering.key)
    assert live.list(ALL) == settled(*merged).list(ALL)
