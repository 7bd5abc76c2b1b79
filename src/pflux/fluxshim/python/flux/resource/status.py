"""``flux.resource.status``: each rank's state, as ``flux resource status`` shows it.

pflux's scheduler answers for the resource service too: ``sched.resource-status`` holds
R, the online and offline ranks, the drained ranks with their time and reason, and what
is allocated. pflux excludes no rank and has no torpid ranks, so those sets are empty.
"""

from __future__ import annotations

from flux.idset import IDset
from flux.resource.list import SchedResourceList
from flux.resource.ResourceSet import ResourceSet
from flux.rpc import RPC

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NamedTuple

    from flux.core.handle import Flux

    class DrainInfo(NamedTuple):
        ranks: IDset
        timestamp: float
        reason: str

else:
    from collections import namedtuple

    DrainInfo = namedtuple("DrainInfo", ["ranks", "timestamp", "reason"])
    DrainInfo.__doc__ = "Drained ranks that share a time and reason."

__all__ = ["DrainInfo", "ResourceStatus", "ResourceStatusRPC", "resource_status"]


class ResourceStatus:
    """Rank sets by state: ``all``, ``online``, ``offline``, ``exclude``, ``torpid``,
    ``allocated``, ``housekeeping`` (not filtered), ``drained`` (drained, nothing
    running), ``draining`` (drained, a job still there), ``avail`` (neither excluded,
    drained nor torpid), ``drain_info``."""

    def __init__(
        self,
        rstatus: dict[str, Any] | None = None,
        allocated_ranks: IDset | None = None,
        housekeeping_ranks: IDset | None = None,
    ) -> None:
        if rstatus is None:
            rstatus = {"R": None, "offline": "", "online": "", "exclude": "", "drain": {}}
        self.rstatus = rstatus
        self.rset = ResourceSet(rstatus.get("R"))
        self.nodelist = self.rset.nodelist
        self.allocated_ranks = IDset() if allocated_ranks is None else allocated_ranks
        self.housekeeping_ranks = IDset() if housekeeping_ranks is None else housekeeping_ranks
        self._recalculate()

    def filter(self, include: Any) -> None:
        """Keep only the ranks ``include`` names: an idset, or a hostlist of hosts."""
        try:
            ranks = IDset(include)
        except ValueError:
            ranks = IDset(self.rset.host_ranks(include, ignore_nomatch=True))
        self._recalculate(ranks)

    def _recalculate(self, include: IDset | None = None) -> None:
        sets = {
            "all": self.rset.ranks,
            "offline": IDset(self.rstatus.get("offline", "")),
            "online": IDset(self.rstatus.get("online", "")),
            "exclude": IDset(self.rstatus.get("exclude", "")),
            "torpid": IDset(self.rstatus.get("torpid", "")),
            "allocated": self.allocated_ranks.copy(),
        }
        if include is not None:
            sets = {name: ids.intersect(include) for name, ids in sets.items()}
        self.all = sets["all"]
        self.offline, self.online = sets["offline"], sets["online"]
        self.exclude, self.torpid = sets["exclude"], sets["torpid"]
        self.allocated = sets["allocated"]
        self.housekeeping = self.housekeeping_ranks
        self.drained = IDset()
        self.drain_info: list[DrainInfo] = []
        self._drain_lookup: dict[int, DrainInfo] = {}
        for text, entry in self.rstatus.get("drain", {}).items():
            ranks = IDset(text)
            if include is not None:
                ranks = ranks.intersect(include)
            self.drained.add(ranks)
            info = DrainInfo(ranks, entry["timestamp"], entry["reason"])
            self.drain_info.append(info)
            for rank in ranks:
                self._drain_lookup[rank] = info
        self.draining = self.drained.intersect(self.allocated)
        self.drained.subtract(self.draining)
        self.avail = self.all.difference(self.get_idset("exclude", "drained", "draining", "torpid"))

    def __getitem__(self, state: str) -> IDset:
        ids: IDset = getattr(self, state)
        return ids

    def get_idset(self, *args: str) -> IDset:
        """The union of the named states' ranks."""
        ids = IDset()
        for state in args:
            ids.add(self[state])
        return ids

    def get_drain_info(self, rank: int) -> DrainInfo | None:
        """The DrainInfo of ``rank`` (None if it is not drained)."""
        if rank not in self.all:
            raise ValueError(f"invalid rank {rank}")
        return self._drain_lookup.get(rank)


class ResourceStatusRPC(RPC):
    """The scheduler's answer; ``get()`` gives a ResourceStatus."""

    def get(self) -> ResourceStatus:
        """The ranks' states, once answered."""
        reply: dict[str, Any] = super().get()
        drains: dict[tuple[float, str], IDset] = {}
        for rank, entry in reply.get("drain", {}).items():
            key = (float(entry["timestamp"]), str(entry["reason"]))
            drains.setdefault(key, IDset()).set(int(rank))
        rstatus = {
            "R": reply.get("all"),
            "online": reply.get("online", ""),
            "offline": reply.get("offline", ""),
            "exclude": "",
            "torpid": "",
            "drain": {
                ids.encode(): {"timestamp": when, "reason": why}
                for (when, why), ids in drains.items()
            },
        }
        allocated = SchedResourceList(reply).allocated.ranks
        return ResourceStatus(rstatus, allocated)


def resource_status(flux_handle: Flux) -> ResourceStatusRPC:
    """Ask for each rank's state; ``.get()`` gives a ResourceStatus."""
    return ResourceStatusRPC(flux_handle, "sched.resource-status", {}, nodeid=0)
