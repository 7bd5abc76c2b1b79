"""Jobs waiting on other jobs: the index every job-to-job dependency scheme shares.

Each edge is (antecedent, dependent, description, condition). When the
antecedent starts or becomes inactive, its edges are judged in flux-core's
terms and the dependency is removed, or the dependent gets a fatal ``depend``
exception whose note says why. The index is keyed by antecedent, so the cost
is proportional to the edges touched: no scan of all jobs, ever.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from pflux.spec.results import COMPLETED
from pflux.spec.states import State

if TYPE_CHECKING:
    from pflux.manager.job import Ended, Job
    from pflux.manager.plugins import Host


class Condition(enum.Enum):
    """What an antecedent must do to satisfy a dependency (flux-core's after types)."""

    START = "after-start"  # post a start event
    FINISH = "after-finish"  # become inactive, whatever the result
    SUCCESS = "after-success"  # become inactive, successfully
    FAILURE = "after-failure"  # become inactive, unsuccessfully
    EXCEPT = "after-except"  # become inactive, a fatal exception having ended its run


NEVER_STARTED = "job never started"
NEVER_SATISFIED = "can never be satisfied"


def verdict(condition: Condition, antecedent: Job | Ended) -> str | None:
    """None if ``antecedent`` (started, or inactive) satisfies ``condition``, else why not.

    flux-core's rule: only after-finish may be satisfied by a job that was never
    allocated resources; the others need the job to have run.
    """
    if condition is Condition.START:
        if antecedent.started:
            return None
        return NEVER_STARTED if antecedent.state is State.INACTIVE else NEVER_SATISFIED
    if condition is Condition.FINISH:
        return None
    if not antecedent.allocated:
        return NEVER_STARTED
    if condition is Condition.EXCEPT:
        return None if antecedent.ended_by_exception else NEVER_SATISFIED
    succeeded = antecedent.result == COMPLETED
    if condition is Condition.SUCCESS:
        return None if succeeded else NEVER_SATISFIED
    return None if not succeeded else NEVER_SATISFIED


def decided(condition: Condition, antecedent: Job | Ended) -> bool:
    """Whether ``antecedent`` has done what can decide ``condition`` either way."""
    if condition is Condition.START and antecedent.started:
        return True
    return antecedent.state is State.INACTIVE


class Antecedents:
    """Edges from antecedents to the jobs that wait on them."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self._edges: dict[int, list[tuple[Job, str, Condition]]] = {}

    def add(
        self, antecedent: Job | Ended, dependent: Job, description: str, condition: Condition
    ) -> None:
        """Make ``dependent`` wait on ``antecedent``, or settle it now if it can be."""
        if description in dependent.satisfied:
            return  # satisfied before a restart: nothing to reacquire
        self.host.dependency_add(dependent, description)
        if decided(condition, antecedent):
            self._settle(antecedent, dependent, description, condition)
        else:
            self._edges.setdefault(antecedent.id, []).append((dependent, description, condition))

    def started(self, antecedent: Job | Ended) -> None:
        """``antecedent`` posted start: settle what waited for that."""
        edges = self._edges.get(antecedent.id)
        if not edges:
            return
        waiting = [edge for edge in edges if edge[2] is not Condition.START]
        for dependent, description, condition in edges:
            if condition is Condition.START:
                self._settle(antecedent, dependent, description, condition)
        if waiting:
            self._edges[antecedent.id] = waiting
        else:
            del self._edges[antecedent.id]

    def finished(self, antecedent: Job | Ended) -> None:
        """``antecedent`` is inactive: settle every edge from it."""
        for dependent, description, condition in self._edges.pop(antecedent.id, ()):
            self._settle(antecedent, dependent, description, condition)

    def _settle(
        self, antecedent: Job | Ended, dependent: Job, description: str, condition: Condition
    ) -> None:
        if dependent.state is not State.DEPEND or description not in dependent.dependencies:
            return  # canceled meanwhile, or settled already
        why = verdict(condition, antecedent)
        if why is None:
            self.host.dependency_remove(dependent, description)
        else:
            self.host.raise_exception(dependent, "depend", f"dependency {description} {why}")
