"""``pflux jobs``' ``instance.*`` fields: what the nested instance a running job is
(``batch``, ``alloc``) says of itself, as ``flux jobs`` shows it.

The instance is asked once per job (``job-list.job-stats`` and
``sched.resource-status`` through ``pflux.api.Client``), when a format first needs
one of its fields; a job that runs no instance, or one that cannot be reached, shows
"" in each, as flux does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from pflux.cli.jobfields import JobInfo
    from pflux.spec.resource import ResourceSet

_STATES: Final = ("all", "up", "down", "allocated", "free")
_COUNTS: Final = ("ncores", "ngpus", "nnodes")
_ALL_HEADINGS: Final = {"ncores": "CORES", "ngpus": "GPUS", "nnodes": "NODES"}
_STATE_HEADINGS: Final = {"up": "UP", "down": "DOWN", "allocated": "USED", "free": "FREE"}
#: every instance field, with its heading (flux-core's)
HEADINGS: Final[dict[str, str]] = {
    "instance.stats": "STATS",
    "instance.stats.total": "NJOBS",
    "instance.utilization": "CORE%",
    "instance.gpu_utilization": "GPU%",
    "instance.progress": "PROG",
    **{f"instance.resources.all.{count}": _ALL_HEADINGS[count] for count in _COUNTS},
    **{
        f"instance.resources.{state}.{count}": heading
        for state, heading in _STATE_HEADINGS.items()
        for count in _COUNTS
    },
}
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


def value(job: JobInfo, field: str) -> Any:
    """``field`` of the instance the job runs ("" if it runs none now)."""
    memo = job._memo
    instance = memo.get(_MEMO)
    if instance is None:
        running = job.get("status_abbrev") == "R"
        instance = memo[_MEMO] = _Instance(str(job.get("uri")) if running else None)
    return instance.value(field)
