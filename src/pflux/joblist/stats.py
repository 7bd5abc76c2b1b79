"""``job-list.job-stats``'s answer: how many jobs are in each state and how the
inactive ones ended, over all jobs and per named queue, as flux-core's job-list
counts them.

Counted from the index on each request rather than kept as running totals, so a
job whose queue a ``jobspec-update`` changes is never counted under the old one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from pflux.joblist.codes import RESULT_CANCELED, RESULT_COMPLETED, RESULT_TIMEOUT
from pflux.joblist.summary import JobSummary
from pflux.spec.states import State

# flux-core's job_states keys, in its order (NEW is not counted)
_STATE_NAMES: Final[dict[State, str]] = {
    State.DEPEND: "depend",
    State.PRIORITY: "priority",
    State.SCHED: "sched",
    State.RUN: "run",
    State.CLEANUP: "cleanup",
    State.INACTIVE: "inactive",
}
_ENDINGS: Final[dict[int, str]] = {
    RESULT_COMPLETED: "successful",
    RESULT_CANCELED: "canceled",
    RESULT_TIMEOUT: "timeout",
}


class _Counts:
    """One set of counts: the states, then the endings of the inactive jobs."""

    __slots__ = ("endings", "states")

    def __init__(self) -> None:
        self.states = dict.fromkeys(_STATE_NAMES.values(), 0)
        self.endings = dict.fromkeys(("successful", "failed", "canceled", "timeout"), 0)

    def add(self, summary: JobSummary) -> None:
        name = _STATE_NAMES.get(summary.state)
        if name is None:
            return
        self.states[name] += 1
        if summary.state is State.INACTIVE:
            self.endings[_ENDINGS.get(summary.result, "failed")] += 1

    def to_json(self, purged: int) -> dict[str, Any]:
        return {
            "job_states": {**self.states, "total": sum(self.states.values())},
            **self.endings,
            "inactive_purged": purged,
        }


def job_stats(
    jobs: Iterable[JobSummary], purged: int, queue_purged: dict[str, int]
) -> dict[str, Any]:
    """The answer: every job's counts, then ``queues``, one entry per queue a job
    names (with its ``name`` last, as flux-core's); ``purged`` and ``queue_purged``
    count the purged jobs."""
    every = _Counts()
    queues: dict[str, _Counts] = {}
    for summary in jobs:
        every.add(summary)
        if summary.queue is not None:
            counts = queues.get(summary.queue)
            if counts is None:
                counts = queues[summary.queue] = _Counts()
            counts.add(summary)
    for name in queue_purged:
        queues.setdefault(name, _Counts())
    answer = every.to_json(purged)
    answer["queues"] = [
        {**counts.to_json(queue_purged.get(name, 0)), "name": name}
        for name, counts in sorted(queues.items())
    ]
    return answer
