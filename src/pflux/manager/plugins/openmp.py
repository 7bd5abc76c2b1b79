"""RFC 26's OpenMP-style dependencies: the ``string`` and ``fluid`` schemes.

Both take ``type`` (in, out, inout) and ``scope`` (user, global). A job that
declares ``out`` or ``inout`` on a value *produces* it; a later job that
declares ``in`` or ``inout`` on the same value, within scope, depends on every
producer of it that is still active, so:

- a chain of ``inout`` jobs runs one after another (RFC 26 example 1);
- A ``out: A``; B, B, B ``in: A, out: B``; C ``in: B`` runs as A → B B B → C
  (example 3): C waits for every B, not only the last.

For ``fluid`` the value is a job id, and every job produces its own id (the
automatic ``out`` of RFC 26), so ``in`` on an id waits for that job (example 2).
A dependent runs once its producers have *succeeded*: a failed producer makes
the dependency one that can never be satisfied (RFC 26 leaves the result open;
failing the data-flow successor is what a workflow wants, as afterok does).
Scope: ``user`` sees only the submitter's jobs; ``global`` sees everyone's, and
only the instance owner may declare ``out`` or ``inout`` there.

Descriptions: ``string-in=VALUE@ƒID`` / ``fluid-in=VALUE``, one per edge.
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Any

from pflux.errors import JobIDError, RPCError
from pflux.manager.plugins import Host, Plugin
from pflux.manager.plugins.antecedents import Antecedents, Condition
from pflux.spec.fluid import JobID
from pflux.spec.jobspec import system_attributes
from pflux.spec.states import State

if TYPE_CHECKING:
    from pflux.manager.job import Ended, Job
    from pflux.spec.eventlog import Event

TYPES = ("in", "out", "inout")
SCOPES = ("user", "global")


def _options(job: Job, dependency: dict[str, Any], owner: int) -> tuple[str, str]:
    scheme = dependency["scheme"]
    dtype, scope = dependency.get("type"), dependency.get("scope")
    if dtype not in TYPES:
        raise RPCError(
            errno.EINVAL, f"dependency: {scheme}: type must be in, out or inout, got {dtype!r}"
        )
    if scope not in SCOPES:
        raise RPCError(
            errno.EINVAL, f"dependency: {scheme}: scope must be user or global, got {scope!r}"
        )
    if scope == "global" and dtype != "in" and job.userid != owner:
        raise RPCError(
            errno.EPERM,
            f"dependency: {scheme}: only the instance owner may declare {dtype} in scope global",
        )
    return dtype, scope


class _OpenMP(Plugin):
    events = frozenset(("clean",))

    def __init__(self, host: Host) -> None:
        super().__init__(host)
        self.edges = Antecedents(host)

    def event(self, job: Job | Ended, event: Event) -> None:
        self.edges.finished(job)

    def _wait(self, antecedent: Job | Ended, job: Job, description: str) -> None:
        self.edges.add(antecedent, job, description, Condition.SUCCESS)


class String(_OpenMP):
    """Symbolic data-flow dependencies between jobs."""

    name = "string"
    schemes = ("string",)

    def __init__(self, host: Host) -> None:
        super().__init__(host)
        # (scope, userid or None for global, value) -> active producers, in submit order
        self.producers: dict[tuple[str, int | None, str], dict[int, None]] = {}
        self._keys: dict[int, list[tuple[str, int | None, str]]] = {}  # producer -> its keys

    def _key(self, job: Job, scope: str, value: str) -> tuple[str, int | None, str]:
        return (scope, job.userid if scope == "user" else None, value)

    def validate_dependency(self, job: Job, dependency: dict[str, Any]) -> None:
        _options(job, dependency, self.host.owner)

    def depend(self, job: Job, dependency: dict[str, Any]) -> None:
        dtype, scope = _options(job, dependency, self.host.owner)
        key = self._key(job, scope, dependency["value"])
        if dtype in ("in", "inout"):
            for producer_id in list(self.producers.get(key, ())):
                if producer_id >= job.id:
                    break  # submitted after this job (ids grow with submission)
                producer = self.host.lookup(producer_id)
                if producer is not None:
                    description = f"string-{dtype}={dependency['value']}@{JobID(producer_id)}"
                    self._wait(producer, job, description)
        if dtype in ("out", "inout"):
            self._produce(job, key)

    def _produce(self, job: Job, key: tuple[str, int | None, str]) -> None:
        self.producers.setdefault(key, {})[job.id] = None
        self._keys.setdefault(job.id, []).append(key)

    def restarted(self, job: Job) -> None:
        """Past DEPEND, an active job still produces its values for later jobs."""
        if job.state is State.DEPEND or job.state is State.NEW:
            return  # depend() will register it
        for dependency in system_attributes(job.jobspec).get("dependencies", []):
            if dependency.get("scheme") == "string" and dependency.get("type") in ("out", "inout"):
                self._produce(job, self._key(job, dependency.get("scope", ""), dependency["value"]))

    def event(self, job: Job | Ended, event: Event) -> None:
        super().event(job, event)
        for key in self._keys.pop(job.id, ()):
            producers = self.producers.get(key)
            if producers is not None:
                producers.pop(job.id, None)
                if not producers:
                    del self.producers[key]


class Fluid(_OpenMP):
    """Dependencies on job ids: every job produces its own id."""

    name = "fluid"
    schemes = ("fluid",)

    def _antecedent(self, job: Job, dependency: dict[str, Any], scope: str) -> Job | Ended:
        value = dependency["value"]
        try:
            jobid = JobID.parse(value)
        except JobIDError:
            raise RPCError(
                errno.EINVAL, f'dependency: fluid: "{value}" is not a valid jobid'
            ) from None
        antecedent = self.host.lookup(jobid)
        if antecedent is None:
            raise RPCError(errno.EINVAL, f"dependency: fluid: id {value}: job not found")
        if scope == "user" and antecedent.userid != job.userid:
            raise RPCError(errno.EPERM, f"fluid: job {value} is not in scope user")
        return antecedent

    def validate_dependency(self, job: Job, dependency: dict[str, Any]) -> None:
        dtype, scope = _options(job, dependency, self.host.owner)
        if dtype != "out":
            antecedent = self._antecedent(job, dependency, scope)
            if antecedent.state is State.INACTIVE and not antecedent.success:
                raise RPCError(
                    errno.EINVAL,
                    f"dependency: fluid: job {dependency['value']} failed or was canceled",
                )

    def depend(self, job: Job, dependency: dict[str, Any]) -> None:
        dtype, scope = _options(job, dependency, self.host.owner)
        if dtype == "out":
            return  # every job already produces its own id
        antecedent = self._antecedent(job, dependency, scope)
        self._wait(antecedent, job, f"fluid-{dtype}={dependency['value']}")
