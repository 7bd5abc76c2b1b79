"""``job-list.job-stats``' counts: how many jobs are in each state and how the inactive
ones ended, over all jobs and per named queue, as flux-core's job-list counts them.

``JobCounts`` keeps them as jobs move (the index tells it of each job whose state or
queue changed, and of each job dropped or purged), so an answer costs the number of
distinct (state, queue, ending) triples, not the number of jobs: a client asking
again and again does not hold job-list up.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Final

from pflux.joblist.summary import JobSummary
from pflux.spec.resultcodes import RESULT_CANCELED, RESULT_COMPLETED, RESULT_TIMEOUT
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

Key = tuple[str, str | None, str | None]  # (state, queue, ending once inactive)


def _key(summary: JobSummary) -> Key | None:
    name = _STATE_NAMES.get(summary.state)
    if name is None:
        return None
    ending = _ENDINGS.get(summary.result, "failed") if summary.state is State.INACTIVE else None
    return (name, summary.queue, ending)


class _Counts:
    """One set of counts: the states, then the endings of the inactive jobs."""

    __slots__ = ("endings", "purged", "states")

    def __init__(self) -> None:
        self.states = dict.fromkeys(_STATE_NAMES.values(), 0)
        self.endings = dict.fromkeys(("successful", "failed", "canceled", "timeout"), 0)
        self.purged = 0

    def add(self, key: Key, count: int) -> None:
        state, _, ending = key
        self.states[state] += count
        if ending is not None:
            self.endings[ending] += count

    def to_json(self) -> dict[str, Any]:
        return {
            "job_states": {**self.states, "total": sum(self.states.values())},
            **self.endings,
            "inactive_purged": self.purged,
        }


class JobCounts:
    """The jobs listed, counted by (state, queue, ending), and the purged ones."""

    def __init__(self) -> None:
        self._keys: dict[int, Key] = {}
        self._counts: Counter[Key] = Counter()
        self._purged: Counter[str | None] = Counter()  # by queue (None: no queue)
        self._queues: set[str] = set()  # every queue a job has named: kept, as flux-core's

    def update(self, summary: JobSummary) -> None:
        """The job is listed as it is now (its state or queue may have changed)."""
        key = _key(summary)
        old = self._keys.get(summary.id)
        if old == key:
            return
        if old is not None:
            self._take(old)
        if key is None:
            self._keys.pop(summary.id, None)
        else:
            self._keys[summary.id] = key
            self._counts[key] += 1
            if key[1] is not None:
                self._queues.add(key[1])

    def update_inactive(self, summaries: list[JobSummary]) -> None:
        """``update`` for many inactive jobs not listed before (a restart's cached jobs), a
        million in a loop of its own."""
        keys, counts, queues, endings = self._keys, self._counts, self._queues, _ENDINGS
        made: dict[tuple[str | None, int], Key] = {}  # one key per queue and result
        for summary in summaries:
            queue, result = summary.queue, summary.result
            key = made.get((queue, result))
            if key is None:
                key = made[queue, result] = ("inactive", queue, endings.get(result, "failed"))
                if queue is not None:
                    queues.add(queue)
            old = keys.get(summary.id)
            if old is not None:
                self._take(old)
            keys[summary.id] = key
            counts[key] += 1

    def add_inactive(self, jobs: Counter[tuple[str | None, int]]) -> None:
        """Inactive jobs kept without a summary (job-list's snapshot), counted by (queue,
        result)."""
        for (queue, result), count in jobs.items():
            self._counts["inactive", queue, _ENDINGS.get(result, "failed")] += count
            if queue is not None:
                self._queues.add(queue)

    def remove_inactive(self, job: tuple[str | None, int], *, purged: bool = False) -> None:
        """``remove`` for a job counted by ``add_inactive``, given its (queue, result)."""
        queue, result = job
        self._take(("inactive", queue, _ENDINGS.get(result, "failed")))
        if purged:
            self._purged[queue] += 1

    def remove(self, summary: JobSummary, *, purged: bool = False) -> None:
        """The job is gone from the listing (``purged``: counted as an inactive job
        purged, as flux-core counts them)."""
        old = self._keys.pop(summary.id, None)
        if old is None:
            return
        self._take(old)
        if purged and old[0] == "inactive":
            self._purged[old[1]] += 1

    def _take(self, key: Key) -> None:
        self._counts[key] -= 1
        if not self._counts[key]:
            del self._counts[key]

    def answer(self) -> dict[str, Any]:
        """flux-core's answer: every job's counts, then ``queues``, one entry per queue a
        job has named (its ``name`` last, as flux-core's)."""
        every = _Counts()
        queues = {name: _Counts() for name in self._queues}
        for key, count in self._counts.items():
            every.add(key, count)
            if key[1] is not None:
                queues.setdefault(key[1], _Counts()).add(key, count)
        for queue, count in self._purged.items():
            every.purged += count
            if queue is not None:
                queues.setdefault(queue, _Counts()).purged += count
        answer = every.to_json()
        answer["queues"] = [
            {**counts.to_json(), "name": name} for name, counts in sorted(queues.items())
        ]
        return answer
