"""job-list's ``job-stats`` counts: jobs by state (NEW not counted), the inactive ones
by ending (a canceled or timed-out job is not ``failed``), purged jobs, and the same
per named queue, as flux-core's job-list counts them."""

from __future__ import annotations

from typing import Any

from joblist_entries import Story, jobspec

from pflux.joblist.index import JobIndex
from pflux.joblist.stats import JobCounts


def purge(jobid: int) -> dict[str, Any]:
    return {"id": jobid, "seq": -1, "entry": {"timestamp": 2000.0, "name": "purge", "context": {}}}


def stats(index: JobIndex) -> dict[str, Any]:
    answer = index.job_counts.answer()
    recount = JobCounts()  # the kept counts are those a count from scratch gives
    for summary in index.jobs.values():
        recount.update(summary)
    fresh = recount.answer()
    assert fresh["job_states"] == answer["job_states"]
    assert [q["job_states"] for q in fresh["queues"]] == [
        q["job_states"] for q in answer["queues"] if q["job_states"]["total"]
    ]
    return answer


def counts(**nonzero: int) -> dict[str, int]:
    states = dict.fromkeys(("depend", "priority", "sched", "run", "cleanup", "inactive"), 0)
    states.update(nonzero)
    return {**states, "total": sum(states.values())}


def test_jobs_are_counted_by_state_and_by_how_they_ended() -> None:
    index = JobIndex()
    index.feed(Story(1).submit().entries)  # NEW: not counted
    index.feed(Story(2).submit().event("validate").entries)  # DEPEND
    index.feed(Story(3).pending().entries)  # SCHED
    index.feed(Story(4).running().entries)
    index.feed(Story(5).completed().entries)
    index.feed(Story(6).completed(status=256).entries)
    index.feed(Story(7).running().exception("cancel").finish(15).entries)
    index.feed(Story(8).running().exception("timelimit").finish(9).entries)
    index.feed(Story(9).running().exception("exec").finish(0).entries)
    index.settle()
    assert stats(index) == {
        "job_states": counts(depend=1, sched=1, run=1, inactive=5),
        "successful": 1,
        "failed": 2,
        "canceled": 1,
        "timeout": 1,
        "inactive_purged": 0,
        "queues": [],
    }
    assert list(stats(index)) == [  # flux-core's order
        "job_states",
        "successful",
        "failed",
        "canceled",
        "timeout",
        "inactive_purged",
        "queues",
    ]


def test_each_named_queue_has_its_counts_and_purged_jobs_are_counted() -> None:
    index = JobIndex()
    index.feed(Story(1).completed(spec=jobspec(queue="batch")).entries)
    index.feed(Story(2).completed(spec=jobspec(queue="batch")).entries)
    index.feed(Story(3).running(spec=jobspec(queue="debug")).entries)
    index.feed(Story(4).completed(status=1).entries)  # no queue: in the totals only
    index.settle()
    index.feed([purge(1)])
    answer = stats(index)
    assert answer["job_states"] == counts(run=1, inactive=2)
    assert (answer["successful"], answer["failed"], answer["inactive_purged"]) == (1, 1, 1)
    batch, debug = answer["queues"]
    assert batch == {
        "name": "batch",
        "job_states": counts(inactive=1),
        "successful": 1,
        "failed": 0,
        "canceled": 0,
        "timeout": 0,
        "inactive_purged": 1,
    }
    assert list(batch)[-1] == "name"  # last, as flux-core's
    assert debug["name"] == "debug"
    assert debug["job_states"] == counts(run=1)


def test_a_queue_change_moves_the_job_between_queues_counts() -> None:
    index = JobIndex()
    story = Story(1).pending(spec=jobspec(queue="batch"))
    index.feed(story.entries)
    index.settle()
    assert [(q["name"], q["job_states"]["sched"]) for q in stats(index)["queues"]] == [("batch", 1)]
    index.feed(story.event("jobspec-update", {"attributes.system.queue": "debug"}).entries[-1:])
    queues = [(q["name"], q["job_states"]["sched"]) for q in stats(index)["queues"]]
    assert queues == [("batch", 0), ("debug", 1)]  # a queue once named keeps its entry
    index.feed(story.event("alloc").entries[-1:])
    assert stats(index)["job_states"]["run"] == 1


def test_jobs_taken_from_the_cache_are_counted() -> None:
    cached = JobIndex()
    story = Story(1).completed()
    cached.feed(story.entries)
    index = JobIndex()
    index.preload({1: cached.jobs[1]})
    assert index.digest([[1, len(story.entries)]]) == []
    index.settle()
    assert stats(index)["job_states"] == counts(inactive=1)
    assert stats(index)["successful"] == 1
