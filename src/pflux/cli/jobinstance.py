"""``pflux jobs``' ``instance.*`` fields: what the nested instance a running job is
(``batch``, ``alloc``) says of itself, as ``flux jobs`` shows it (the fields and
their headings: ``_pfluxcore.jobinfo.INSTANCE_HEADINGS``).

The instance is asked once per job (``job-list.job-stats`` and
``sched.resource-status`` through ``pflux.api.Client``), when a format first needs
one of its fields; a job that runs no instance, or one that cannot be reached, shows
"" in each, as flux does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Protocol

if TYPE_CHECKING:
    from pflux.spec.resource import ResourceSet


class ListedJob(Protocol):
    """What of a listed job (``pflux.cli.jobfields.JobInfo``) the fields read: its
    fields, and the memo its instance's answers are kept in."""

    _memo: dict[str, Any]

    def get(self, field: str) -> Any: ...


_MEMO: Final = "\0instance"  # the job's memo key of its instance's answers


class _Instance:
    """One nested instance's counts and resource sets (``ok`` False: none to ask)."""

    def __init__(self, uri: str | None) -> None:
        self.ok = False
        self.stats: dict[str, Any] = {}
        self.sets: dict[str, ResourceSet] = {}
        if not uri:
            return
        from pflux import Client
        from pflux.errors import PfluxError
        from pflux.spec.resource import ResourceSet

        try:
            with Client(uri) as client:
                self.stats = client.job_stats()
                status = client.resource_status()
            sets = {
                name: ResourceSet.from_json(status[name], allow_empty=True)
                for name in ("all", "down", "allocated")
            }
        except (PfluxError, OSError, KeyError, TypeError):
            return
        sets["up"] = sets["all"].difference(sets["down"])
        sets["free"] = sets["up"].difference(sets["allocated"])
        self.sets = sets
        self.ok = True

    def value(self, field: str) -> Any:
        if not self.ok:
            return ""
        stats, states = self.stats, self.stats["job_states"]
        total = states["total"]
        if field == "instance.stats":
            failed = stats["failed"] + stats["timeout"] + stats["canceled"]
            pending = states["depend"] + states["priority"] + states["sched"]
            running = states["run"] + states["cleanup"]
            return f"PD:{pending} R:{running} CD:{stats['successful']} F:{failed}"
        if field == "instance.stats.total":
            return total
        if field == "instance.progress":
            return states["inactive"] / total if total else ""
        everything, used = self.sets["all"], self.sets["allocated"]
        if field == "instance.utilization":
            return used.ncores() / everything.ncores() if everything.ncores() else ""
        if field == "instance.gpu_utilization":
            return used.ngpus() / everything.ngpus() if everything.ngpus() else ""
        _, _, state, count = field.split(".")
        chosen = self.sets[state]
        return chosen.nnodes if count == "nnodes" else getattr(chosen, count)()


def value(job: ListedJob, field: str) -> Any:
    """``field`` of the instance the job runs ("" if it runs none now)."""
    memo = job._memo
    instance = memo.get(_MEMO)
    if instance is None:
        running = job.get("status_abbrev") == "R"
        instance = memo[_MEMO] = _Instance(str(job.get("uri")) if running else None)
    return instance.value(field)
