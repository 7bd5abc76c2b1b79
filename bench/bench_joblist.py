"""job-list: journal entries applied per second, memory per inactive job, list latency.

Run by hand or by ``make bench``; never part of the test suite. Jobs are the
usual ten events (submit ... clean) with a jobspec on ``submit``, R and the
scheduler's annotations on ``alloc``, each job's entries decoded from JSON on
its own as the journal's backlog is, so no strings are shared that would not be.

    python bench/bench_joblist.py [--jobs 100000]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit" / "joblist"))

from joblist_entries import R_2NODES, Story

from pflux.cli.jobfields import JobInfo, attrs_for
from pflux.cli.jobformat import NAMED_FORMATS, JobFormat
from pflux.joblist.attributes import select, to_json
from pflux.joblist.index import JobIndex
from pflux.spec.builder import from_command
from pflux.spec.states import State

EVENTS_PER_JOB = 10


def template() -> bytes:
    """One finished job's entries as JSON, with a placeholder id."""
    spec = from_command(["/usr/bin/hostname"], num_tasks=2, cwd="/home/user/project")
    story = Story(0, 1_700_000_000.0).pending(spec=spec)
    story.event("alloc", {"annotations": {"sched": {"resource_summary": "rank0/core[0-1]"}}})
    story.entries[-1]["R"] = R_2NODES
    story.event("start").finish(0)
    assert len(story.entries) == EVENTS_PER_JOB
    return orjson.dumps(story.entries)


def jobs(n: int, start: int = 1 << 24) -> Iterator[list[dict[str, Any]]]:
    """n finished jobs, one entry list each, decoded separately, a millisecond apart."""
    raw = template()
    for i in range(n):
        entries = orjson.loads(raw)
        jobid = start + (i << 24)
        shift = i * 0.001
        for entry in entries:
            entry["id"] = jobid
            entry["entry"]["timestamp"] += shift
        yield entries


def fill(index: JobIndex, n: int) -> float:
    """Feed n jobs; return the seconds spent in ``feed`` only."""
    spent = 0.0
    for entries in jobs(n):
        start = time.perf_counter()
        index.feed(entries)
        spent += time.perf_counter() - start
    return spent


def median_ms(work: Callable[[], object], repeats: int = 7) -> float:
    work()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000, help="inactive jobs (100000)")
    args = parser.parse_args()
    n = args.jobs

    # entries applied per second: the backlog at start-up, then live after the sentinel
    backlog = JobIndex()
    spent = fill(backlog, n)
    start = time.perf_counter()
    backlog.settle()
    settle = time.perf_counter() - start
    print(f"backlog: {n * EVENTS_PER_JOB / spent:,.0f} entries/s ({n / spent:,.0f} jobs/s)")
    print(f"settle (build the orderings of {n:,} jobs): {settle * 1000:.1f} ms")
    live = JobIndex()
    live.settle()
    tenth = n // 10
    spent = fill(live, tenth)
    print(f"live: {tenth * EVENTS_PER_JOB / spent:,.0f} entries/s ({tenth / spent:,.0f} jobs/s)")
    del live

    # memory per inactive job: everything the index holds, nothing of the entries
    gc.collect()
    tracemalloc.start()
    index = JobIndex()
    fill(index, n)
    index.settle()
    gc.collect()
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    print(f"memory: {held / n:,.0f} bytes per inactive job ({held / 2**20:.1f} MiB for {n:,})")
    pending = JobIndex()
    tracemalloc.start()
    for entries in jobs(tenth):
        pending.feed(entries[:4])  # submit, validate, depend, priority: waiting in SCHED
    gc.collect()
    held_pending = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    print(f"memory: {held_pending / tenth:,.0f} bytes per pending job (its jobspec included)")
    del pending

    # list latency with n inactive jobs
    default_attrs = select(attrs_for(JobFormat(NAMED_FORMATS["default"][1]).fields))
    every = select(["all"])
    active = int(State.PENDING | State.RUNNING)
    cases: list[tuple[str, Callable[[], object]]] = [
        (
            "pflux jobs (yours, pending+running: none)",
            lambda: index.list(default_attrs, max_entries=1001, userid=1000, states=active),
        ),
        (
            "pflux jobs -a (1001 newest)",
            lambda: orjson.dumps(index.list(default_attrs, max_entries=1001, userid=1000)),
        ),
        (
            "pflux jobs -a --json (1001, all attrs)",
            lambda: orjson.dumps(index.list(every, max_entries=1001, userid=1000)),
        ),
        (
            f"pflux jobs -a -c 0 (all {n:,})",
            lambda: orjson.dumps(index.list(default_attrs, userid=1000)),
        ),
        (
            f"job-list.list all attrs (all {n:,})",
            lambda: orjson.dumps(index.list(every)),
        ),
        (
            "pflux jobs -u nobody -a (scan, no match)",
            lambda: index.list(default_attrs, max_entries=1001, userid=4321),
        ),
    ]
    for label, work in cases:
        print(f"list: {label}: {median_ms(work):.2f} ms")
    some = index.get((1 << 24) + ((n // 2) << 24))
    assert some is not None
    print(f"list-id (all attrs): {median_ms(lambda: to_json(some, every), 101) * 1000:.1f} us")

    # the command's side: format 1000 jobs in the default format
    shown = [JobInfo(job) for job in index.list(default_attrs, max_entries=1000)]
    fmt = JobFormat(NAMED_FORMATS["default"][1])

    def render() -> None:
        for job in shown:
            job._memo.clear()
        out = fmt.filtered(shown)
        "".join(out.format(job) for job in shown)

    print(f"pflux jobs formatting of 1000 jobs: {median_ms(render):.2f} ms")


if __name__ == "__main__":
    main()
