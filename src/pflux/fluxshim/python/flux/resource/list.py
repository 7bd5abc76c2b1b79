"""``flux.resource.list.resource_list``: the scheduler's view of the resources.

``sched.resource-status`` answers three RFC 20 R objects (``all``, ``allocated``,
``down``); ``SchedResourceList`` gives them, and ``up`` and ``free``, as
``ResourceSet`` objects with the counts and names tools read: ``nnodes``,
``ncores``, ``ngpus``, ``nodelist``, ``ranks``, ``rlist``.
"""

from __future__ import annotations

import re

from flux.rpc import RPC

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, Iterable, Set

    from flux.core.handle import Flux

    Ranks = Dict[int, Dict[str, Set[int]]]  # rank -> {"core": {ids}, "gpu": {ids}}

_HOST = re.compile(r"^(.*?)\[([0-9,\-]+)\](.*)$")


def idset_decode(text: str) -> set[int]:
    """The ids of an RFC 22 idset (``0-3,7``, brackets allowed)."""
    ids: set[int] = set()
    text = text.strip().strip("[]")
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        ids.update(range(int(lo), int(hi or lo) + 1))
    return ids


def idset_encode(ids: Iterable[int], brackets: bool = False) -> str:
    """RFC 22 ranges (``0-3,7``); with ``brackets``, ``[...]`` around more than one id."""
    ordered = sorted(ids)
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    text = ",".join(parts)
    if brackets and len(ordered) > 1:
        return f"[{text}]"
    return text


def hostlist_expand(hostlists: Iterable[str]) -> list[str]:
    """The hosts of RFC 29 hostlists (``node[0-3],login``), in order."""
    hosts: list[str] = []
    for hostlist in hostlists:
        for host in re.findall(r"[^,\[]+(?:\[[^\]]*\][^,]*)?", hostlist):
            match = _HOST.match(host)
            if match is None:
                hosts.append(host)
                continue
            prefix, ranges, suffix = match.groups()
            for part in ranges.split(","):
                lo, _, hi = part.partition("-")
                width = len(lo)
                hosts.extend(
                    f"{prefix}{n:0{width}d}{suffix}" for n in range(int(lo), int(hi or lo) + 1)
                )
    return hosts


def hostlist_encode(hosts: Iterable[str]) -> str:
    """A compact RFC 29 hostlist of ``hosts`` (runs of numbered names bracketed)."""
    groups: dict[tuple[str, int, str], list[int]] = {}
    order: list[Any] = []
    for host in hosts:
        match = re.match(r"^(.*?)(\d+)(\D*)$", host)
        if match is None:
            order.append(host)
            continue
        prefix, digits, suffix = match.groups()
        key = (prefix, len(digits) if digits.startswith("0") else 0, suffix)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(int(digits))
    out = []
    for item in order:
        if isinstance(item, str):
            out.append(item)
            continue
        prefix, width, suffix = item
        numbers = sorted(set(groups[item]))
        if len(numbers) == 1:
            out.append(f"{prefix}{numbers[0]:0{width}d}{suffix}")
            continue
        ranges = idset_encode(numbers)
        if width:
            ranges = ",".join(
                "-".join(f"{int(n):0{width}d}" for n in part.split("-"))
                for part in ranges.split(",")
            )
        out.append(f"{prefix}[{ranges}]{suffix}")
    return ",".join(out)


class ResourceSet:
    """An R object's resources per rank, with the hosts of those ranks (``rset``: R, as a
    dict or JSON text)."""

    def __init__(self, rset: Any = None, state: str | None = None) -> None:
        self.state = state
        self._ranks: Ranks = {}
        self._hosts: dict[int, str] = {}
        if isinstance(rset, str):
            import json

            rset = json.loads(rset)
        if not rset:
            return
        execution = rset.get("execution", {})
        ranks: list[int] = []
        for entry in execution.get("R_lite", []):
            children = entry.get("children", {})
            for rank in sorted(idset_decode(entry["rank"])):
                ranks.append(rank)
                self._ranks[rank] = {k: idset_decode(v) for k, v in children.items()}
        hosts = hostlist_expand(execution.get("nodelist", []))
        for rank, host in zip(sorted(set(ranks)), hosts):
            self._hosts[rank] = host

    def _copy(self, ranks: Ranks, state: str | None = None) -> ResourceSet:
        new = ResourceSet(state=state)
        new._ranks = {r: c for r, c in ranks.items() if any(c.values())}
        new._hosts = {r: h for r, h in self._hosts.items() if r in new._ranks}
        return new

    def __sub__(self, other: ResourceSet) -> ResourceSet:
        ranks: Ranks = {}
        for rank, children in self._ranks.items():
            theirs = other._ranks.get(rank, {})
            ranks[rank] = {k: ids - theirs.get(k, set()) for k, ids in children.items()}
        return self._copy(ranks)

    def _count(self, name: str) -> int:
        return sum(len(c.get(name, ())) for c in self._ranks.values())

    @property
    def nnodes(self) -> int:
        return len(self._ranks)

    @property
    def ncores(self) -> int:
        return self._count("core")

    @property
    def ngpus(self) -> int:
        return self._count("gpu")

    @property
    def ranks(self) -> str:
        """The ranks, as an idset string."""
        return idset_encode(self._ranks)

    @property
    def nodelist(self) -> str:
        """The hosts, as a hostlist string."""
        return hostlist_encode(self._hosts[r] for r in sorted(self._ranks) if r in self._hosts)

    @property
    def rlist(self) -> str:
        """flux-core's short form: ``rank0/core[0-3],gpu0``, ranks alike grouped."""
        groups: dict[str, list[int]] = {}
        for rank in sorted(self._ranks):
            children = self._ranks[rank]
            text = ",".join(
                f"{name}{idset_encode(children[name], brackets=True)}"
                for name in ("core", "gpu")
                if children.get(name)
            )
            groups.setdefault(text, []).append(rank)
        return " ".join(
            f"rank{idset_encode(ranks, brackets=True)}/{text}" for text, ranks in groups.items()
        )

    def __str__(self) -> str:
        return self.rlist

    def dumps(self) -> str:
        return self.rlist


class SchedResourceList:
    """The scheduler's ``all``, ``down`` and ``allocated`` resources, and ``up``, ``free``."""

    def __init__(self, resp: dict[str, Any]) -> None:
        self.all = ResourceSet(resp.get("all"), "all")
        self.down = ResourceSet(resp.get("down"), "down")
        self.allocated = ResourceSet(resp.get("allocated"), "allocated")
        self.up = self.all - self.down
        self.up.state = "up"
        self.free = self.up - self.allocated
        self.free.state = "free"

    def __getitem__(self, item: str) -> ResourceSet:
        value: ResourceSet = getattr(self, item)
        return value


class ResourceListRPC(RPC):
    def get(self) -> SchedResourceList:
        """The resources, once answered."""
        return SchedResourceList(super().get())


def resource_list(flux_handle: Flux) -> ResourceListRPC:
    """Ask the scheduler for its resources; ``.get()`` gives a SchedResourceList."""
    return ResourceListRPC(flux_handle, "sched.resource-status", {}, nodeid=0)
