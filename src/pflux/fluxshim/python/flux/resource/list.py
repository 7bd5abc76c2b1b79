"""``flux.resource.list``: the scheduler's view of the instance's resources.

``sched.resource-status`` answers three R objects (``all``, ``allocated``, ``down``);
``SchedResourceList`` gives them, and ``up`` and ``free`` worked out from them, as
``ResourceSet`` objects.
"""

from __future__ import annotations

from flux.idset import IDset
from flux.resource.ResourceSet import ResourceSet
from flux.rpc import RPC

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from flux.core.handle import Flux

__all__ = ["ResourceListRPC", "SchedResourceList", "resource_list"]

_STATES = ("all", "down", "allocated")


class SchedResourceList:
    """The scheduler's ``all``, ``down`` and ``allocated`` resources, and ``up`` (not down)
    and ``free`` (up and not allocated); each also as ``self[state]``."""

    def __init__(self, resp: dict[str, Any]) -> None:
        self._sets: dict[str, ResourceSet] = {}
        for state in _STATES:
            rset = resp.get(state)
            rset = rset.copy() if isinstance(rset, ResourceSet) else ResourceSet(rset)
            rset.state = state
            self._sets[state] = rset
        self._derive()

    def _derive(self) -> None:
        up = self._sets["all"] - self._sets["down"]
        up.state = "up"
        free = up - self._sets["allocated"]
        free.state = "free"
        self._sets.update(up=up, free=free)

    def __getattr__(self, attr: str) -> ResourceSet:
        sets = self.__dict__.get("_sets", {})
        if attr in sets:
            rset: ResourceSet = sets[attr]
            return rset
        raise AttributeError(f"Invalid SchedResourceList attr {attr}")

    def __getitem__(self, item: str) -> ResourceSet:
        return self.__getattr__(item)

    def filter(self, include: Any) -> None:
        """Keep only the ranks ``include`` names: an idset, or a hostlist of hosts."""
        try:
            ranks = IDset(include)
        except ValueError:
            ranks = IDset(self._sets["all"].host_ranks(include, ignore_nomatch=True))
        for state in _STATES:
            kept = self._sets[state].copy_ranks(ranks)
            kept.state = state
            self._sets[state] = kept
        self._derive()


class ResourceListRPC(RPC):
    """The scheduler's answer; ``get()`` gives a SchedResourceList."""

    def get(self) -> SchedResourceList:
        """The resources, once answered."""
        return SchedResourceList(super().get())


def resource_list(flux_handle: Flux) -> ResourceListRPC:
    """Ask the scheduler for its resources; ``.get()`` gives a SchedResourceList."""
    return ResourceListRPC(flux_handle, "sched.resource-status", {}, nodeid=0)
