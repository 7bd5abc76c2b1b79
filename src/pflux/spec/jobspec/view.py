"""RFC 25 jobspec version 1: a validated jobspec, read through cheap accessors, and the
system attributes of any jobspec (``system_attributes``)."""

from __future__ import annotations

from types import MappingProxyType

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

_NONE: Mapping[str, Any] = MappingProxyType({})


def system_attributes(jobspec: object) -> Mapping[str, Any]:
    """A jobspec's ``attributes.system``, checked or not (one read back from the KVS at a
    restart is not): empty where it has none, or where a level is not an object. The one
    way a service reads a job's queue, dependencies, name or constraints."""
    attributes = jobspec.get("attributes") if isinstance(jobspec, dict) else None
    system = attributes.get("system") if isinstance(attributes, dict) else None
    return system if isinstance(system, dict) else _NONE


class JobspecView:
    """A validated jobspec: the decoded dict (``data``) and cheap read-only accessors.

    The constructor trusts its argument and costs nothing; use ``loads`` or
    ``validate`` first.  Accessors read ``data`` on each call, so they always
    agree with it.
    """

    __slots__ = ("data",)

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JobspecView) and self.data == other.data

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"JobspecView({self.data!r})"

    @property
    def _top(self) -> dict[str, Any]:
        vertex: dict[str, Any] = self.data["resources"][0]
        return vertex

    @property
    def _slot(self) -> dict[str, Any]:
        top = self._top
        slot: dict[str, Any] = top["with"][0] if top["type"] == "node" else top
        return slot

    @property
    def _task(self) -> dict[str, Any]:
        task: dict[str, Any] = self.data["tasks"][0]
        return task

    @property
    def _system(self) -> dict[str, Any]:
        system: dict[str, Any] = self.data["attributes"]["system"]
        return system

    @property
    def command(self) -> list[str]:
        command: list[str] = self._task["command"]
        return command

    @property
    def nnodes(self) -> int | None:
        """The node count, or None when the jobspec has no node level."""
        top = self._top
        count: int | None = top["count"] if top["type"] == "node" else None
        return count

    @property
    def slots_per_node(self) -> int:
        """The slot vertex's count (per node when there is a node level)."""
        count: int = self._slot["count"]
        return count

    @property
    def nslots(self) -> int:
        """The total number of task slots: nodes × slots per node, or the slot count."""
        nnodes = self.nnodes
        return self.slots_per_node * (1 if nnodes is None else nnodes)

    def _per_slot_count(self, kind: str) -> int:
        for child in self._slot["with"]:
            if child["type"] == kind:
                count: int = child["count"]
                return count
        return 0

    @property
    def cores_per_slot(self) -> int:
        return self._per_slot_count("core")

    @property
    def gpus_per_slot(self) -> int:
        return self._per_slot_count("gpu")

    @property
    def per_slot(self) -> int | None:
        """Tasks per slot, or None when the task count is a total."""
        per_slot: int | None = self._task["count"].get("per_slot")
        return per_slot

    @property
    def ntasks(self) -> int:
        count = self._task["count"]
        if "total" in count:
            total: int = count["total"]
            return total
        per_slot: int = count["per_slot"]
        return per_slot * self.nslots

    @property
    def exclusive(self) -> bool:
        """Whether whole nodes are requested: the node vertex's ``exclusive`` flag.

        A slot's own flag stays readable in ``data``; False without a node level.
        """
        top = self._top
        return top["type"] == "node" and top.get("exclusive", False) is True

    @property
    def duration(self) -> float:
        """The time limit in seconds; 0 means none."""
        return float(self._system["duration"])

    @property
    def cwd(self) -> str | None:
        cwd: str | None = self._system.get("cwd")
        return cwd

    @property
    def queue(self) -> str | None:
        queue: str | None = self._system.get("queue")
        return queue

    @property
    def environment(self) -> Mapping[str, str]:
        environment: Mapping[str, str] = self._system.get("environment", {})
        return environment

    @property
    def dependencies(self) -> list[dict[str, Any]]:
        dependencies: list[dict[str, Any]] = self._system.get("dependencies", [])
        return dependencies

    @property
    def shell_options(self) -> Mapping[str, Any]:
        shell = self._system.get("shell", {})
        options: Mapping[str, Any] = shell.get("options", {})
        return options

    @property
    def name(self) -> str:
        """``attributes.system.job.name``, else the command's basename (flux-core's job-list rule).

        As in flux-core, a command ending in ``/`` keeps its whole text.
        """
        name: str | None = self._system.get("job", {}).get("name")
        if name is not None:
            return name
        arg0 = self.command[0]
        base = arg0.rpartition("/")[2]
        return base or arg0
