"""RFC 26's simple dependencies: after, afterany, afterok, afternotok (plus flux's
afterstart and afterexcept).

The value is the antecedent's job id in any FLUID encoding. Submission is
refused, with flux-core's words, for an id that does not parse or names no
job, for another user's job (unless the submitter owns the instance), and for
an antecedent already inactive that can never satisfy the dependency. The
dependency's description is ``after-start=VALUE`` (after, afterstart),
``after-finish`` (afterany), ``after-success`` (afterok), ``after-failure``
(afternotok) or ``after-except`` (afterexcept: the antecedent ran and a fatal
exception, not its end, took it to CLEANUP), with VALUE the id as the user
wrote it. ``after`` is flux-core's deprecated name for ``afterstart``: a job
using it gets a non-fatal ``depend`` exception saying so, as in flux-core.
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Any

from pflux.errors import JobIDError, RPCError
from pflux.manager.plugins import Host, Plugin
from pflux.manager.plugins.antecedents import NEVER_STARTED, Antecedents, Condition, verdict
from pflux.spec.fluid import JobID
from pflux.spec.states import State

if TYPE_CHECKING:
    from pflux.manager.job import Ended, Job
    from pflux.spec.eventlog import Event


DEPRECATED = "dependency scheme 'after' is deprecated, use 'afterstart'"


def _refuse(message: str) -> RPCError:
    return RPCError(errno.EINVAL, message)


class AfterScheme(Plugin):
    """One after* scheme: its condition, its submit-time checks, its edges."""

    condition: Condition
    events = frozenset(("start", "clean"))

    def __init__(self, host: Host) -> None:
        super().__init__(host)
        self.edges = Antecedents(host)

    def _antecedent(self, job: Job, dependency: dict[str, Any]) -> Job | Ended:
        scheme, value = dependency["scheme"], dependency["value"]
        try:
            jobid = JobID.parse(value)
        except JobIDError:
            raise _refuse(f'dependency: {scheme}: "{value}" is not a valid jobid') from None
        antecedent = self.host.lookup(jobid)
        if antecedent is None:
            raise _refuse(f"dependency: {scheme}: id {value}: job not found")
        if job.userid not in (antecedent.userid, self.host.owner):
            raise RPCError(errno.EPERM, f"{scheme}: Permission denied for job {value}")
        return antecedent

    def validate_dependency(self, job: Job, dependency: dict[str, Any]) -> None:
        antecedent = self._antecedent(job, dependency)
        if dependency["scheme"] == "after":
            self.host.raise_exception(job, "depend", DEPRECATED, severity=3)
        if antecedent.state is not State.INACTIVE:
            return
        why = verdict(self.condition, antecedent)
        value = dependency["value"]
        if why == NEVER_STARTED:
            raise _refuse(f"dependency: after: {value} never started")
        if why is not None and self.condition is Condition.SUCCESS:
            raise _refuse(f"dependency: afterok: job {value} failed or was canceled")
        if why is not None and self.condition is Condition.EXCEPT:
            raise _refuse(f"dependency: afterexcept: job {value}: no exception")
        if why is not None:
            raise _refuse(f"dependency: afternotok: job {value} succeeded")

    def depend(self, job: Job, dependency: dict[str, Any]) -> None:
        antecedent = self.host.lookup(JobID.parse(dependency["value"]))
        description = f"{self.condition.value}={dependency['value']}"
        if antecedent is None:  # purged since submit
            if description not in job.satisfied:  # satisfied before a restart: nothing to do
                self.host.raise_exception(job, "depend", f"dependency {description} job not found")
            return
        self.edges.add(antecedent, job, description, self.condition)

    def event(self, job: Job | Ended, event: Event) -> None:
        if event.name == "start":
            self.edges.started(job)
        else:
            self.edges.finished(job)


class After(AfterScheme):
    name = "after"
    schemes = ("after", "afterstart")
    condition = Condition.START


class AfterAny(AfterScheme):
    name = "afterany"
    schemes = ("afterany",)
    condition = Condition.FINISH


class AfterOk(AfterScheme):
    name = "afterok"
    schemes = ("afterok",)
    condition = Condition.SUCCESS


class AfterNotOk(AfterScheme):
    name = "afternotok"
    schemes = ("afternotok",)
    condition = Condition.FAILURE


class AfterExcept(AfterScheme):
    name = "afterexcept"
    schemes = ("afterexcept",)
    condition = Condition.EXCEPT
