"""flux-core's ``flux.resource.ResourceSet``: an R object (RFC 20, version 1) to count,
combine and filter.

A set holds, per rank, the ids of its cores and GPUs, the rank's host, the properties
each rank has (``execution.properties``) and R's start and expiration times. ``encode``
gives R back as JSON text; ``dumps`` gives flux's short form, ``rank[0-1]/core[0-3]``.
"""

from __future__ import annotations

import json

from flux.hostlist import Hostlist
from flux.idset import IDSET_FLAG_BRACKETS, IDSET_FLAG_RANGE, IDset

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Dict

    Children = Dict[str, IDset]  # "core" / "gpu" -> ids

__all__ = ["ResourceSet", "Rlist"]

_BRACKETED = IDSET_FLAG_RANGE | IDSET_FLAG_BRACKETS
_CHILDREN = ("core", "gpu")
_OPERATORS = ("properties", "hostlist", "ranks", "and", "or", "not")


def _invalid(why: str) -> ValueError:
    return ValueError(f"Rlist: invalid argument: {why}")


def _ids(value: Any, where: str) -> IDset:
    if not isinstance(value, str):
        raise _invalid(f"{where} must be an idset string")
    try:
        return IDset(value)
    except ValueError:
        raise _invalid(f"{where}: {value!r} is not an idset") from None


def _time(value: Any, name: str) -> float:
    """A time of R's ``execution`` (seconds since the epoch, not negative)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(f"{name} must be a number of seconds, not negative: {value!r}")
    return float(value)


def _check_constraint(constraint: Any) -> None:
    """ValueError naming what is wrong in an RFC 31 constraint."""
    if not isinstance(constraint, dict):
        raise ValueError("copy_constraint: constraint must be an object")
    for op, values in constraint.items():
        if op not in _OPERATORS:
            raise ValueError(f"copy_constraint: unknown constraint operator: {op}")
        if not isinstance(values, list):
            raise ValueError(f'copy_constraint: "{op}" operator value must be an array')
        for value in values:
            if op in ("and", "or", "not"):
                _check_constraint(value)
            elif not isinstance(value, str) or not value.lstrip("^"):
                raise ValueError(f"copy_constraint: {op}: invalid value {value!r}")
            elif op == "hostlist":
                Hostlist(value)
            elif op == "ranks":
                IDset(value)


class ResourceSet:
    """An R object: from JSON text, a decoded dict, or nothing (an empty set)."""

    def __init__(self, arg: Any = None, version: int = 1) -> None:
        self._state: str | None = None
        self.version = 1
        self._ranks: dict[int, Children] = {}
        self._hosts: dict[int, str] = {}
        self._properties: dict[str, IDset] = {}
        self._starttime = 0.0
        self._expiration = 0.0
        if isinstance(arg, ResourceSet):
            self._take(arg)
            return
        if isinstance(arg, str):
            arg = json.loads(arg)
        if isinstance(arg, dict):
            version = arg["version"]
        elif arg is not None:
            raise TypeError(f"ResourceSet cannot be instantiated from {type(arg)}")
        if version != 1:
            raise ValueError(f"R version {version} not supported")
        if arg is not None:
            self._load(arg)

    def _take(self, other: ResourceSet) -> None:
        self._ranks = {r: {k: v.copy() for k, v in c.items()} for r, c in other._ranks.items()}
        self._hosts = dict(other._hosts)
        self._properties = {k: v.copy() for k, v in other._properties.items()}
        self._starttime, self._expiration = other._starttime, other._expiration

    def _load(self, rset: dict[str, Any]) -> None:
        execution = rset.get("execution", {})
        if not isinstance(execution, dict):
            raise _invalid("execution must be an object")
        entries = execution.get("R_lite", [])
        if not isinstance(entries, list):
            raise _invalid("R_lite must be an array")
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict) or not isinstance(entry.get("children"), dict):
                raise _invalid(f"R_lite[{i}] must be an object with children")
            children = {
                name: _ids(ids, f"R_lite[{i}].children.{name}")
                for name, ids in entry["children"].items()
            }
            for rank in _ids(entry.get("rank"), f"R_lite[{i}].rank"):
                self._ranks[rank] = {k: v.copy() for k, v in children.items()}
        hosts = Hostlist(execution.get("nodelist", []))
        if len(hosts) and len(hosts) != len(self._ranks):
            raise _invalid(f"nodelist has {len(hosts)} hosts for {len(self._ranks)} ranks")
        self._hosts = dict(zip(sorted(self._ranks), hosts))
        properties = execution.get("properties", {})
        if not isinstance(properties, dict):
            raise _invalid("properties must be an object")
        for name, ranks in properties.items():
            self._properties[name] = _ids(ranks, f"properties.{name}")
        self._starttime = float(execution.get("starttime", 0) or 0)
        self._expiration = float(execution.get("expiration", 0) or 0)

    def _derive(self, ranks: dict[int, Children]) -> ResourceSet:
        """A set of ``ranks`` (empty ranks dropped) with this set's hosts, properties,
        times."""
        new = ResourceSet()
        new._ranks = {r: ranks[r] for r in sorted(ranks) if any(len(v) for v in ranks[r].values())}
        new._hosts = {r: h for r, h in self._hosts.items() if r in new._ranks}
        kept = IDset(new._ranks)
        for name, ids in self._properties.items():
            within = ids.intersect(kept)
            if len(within):
                new._properties[name] = within
        new._starttime, new._expiration = self._starttime, self._expiration
        return new

    def __str__(self) -> str:
        return self.dumps()

    def __and__(self, arg: Any) -> ResourceSet:
        return self.intersect(arg)

    def __sub__(self, arg: Any) -> ResourceSet:
        return self.diff(arg)

    def __or__(self, arg: Any) -> ResourceSet:
        return self.union(arg)

    def dumps(self) -> str:
        """flux's short form: ``rank[0-1]/core[0-3],gpu0``, ranks alike grouped."""
        groups: dict[str, list[int]] = {}
        for rank in sorted(self._ranks):
            children = self._ranks[rank]
            text = ",".join(
                f"{name}{children[name].encode(_BRACKETED)}"
                for name in (*_CHILDREN, *sorted(set(children) - set(_CHILDREN)))
                if name in children and len(children[name])
            )
            groups.setdefault(text, []).append(rank)
        return " ".join(
            f"rank{IDset(ranks).encode(_BRACKETED)}/{text}" for text, ranks in groups.items()
        )

    def to_dict(self) -> dict[str, Any]:
        """R as a dict (version 1)."""
        groups: dict[str, Any] = {}
        for rank in sorted(self._ranks):
            children = {k: v.encode() for k, v in sorted(self._ranks[rank].items()) if len(v)}
            key = json.dumps(children, sort_keys=True)
            groups.setdefault(key, (IDset(), children))[0].set(rank)
        execution: dict[str, Any] = {
            "R_lite": [{"rank": ranks.encode(), "children": c} for ranks, c in groups.values()],
            "starttime": self._starttime,
            "expiration": self._expiration,
        }
        if self._ranks and len(self._hosts) == len(self._ranks):
            execution["nodelist"] = [
                Hostlist([self._hosts[r] for r in sorted(self._ranks)]).encode()
            ]
        else:
            execution["nodelist"] = []
        if self._properties:
            execution["properties"] = {k: v.encode() for k, v in self._properties.items()}
        return {"version": 1, "execution": execution}

    def encode(self) -> str:
        """R as JSON text."""
        return json.dumps(self.to_dict(), separators=(",", ":"))

    def count(self, name: str) -> int:
        """How many resources of type ``name`` (``core``, ``gpu``, ``node``) the set has."""
        if name == "node":
            return self.nnodes
        return sum(len(c[name]) for c in self._ranks.values() if name in c)

    def copy(self) -> ResourceSet:
        """An independent copy (the state is not copied, as flux-core's)."""
        new = ResourceSet()
        new._take(self)
        return new

    @staticmethod
    def _of(arg: Any) -> ResourceSet:
        return arg if isinstance(arg, ResourceSet) else ResourceSet(arg)

    def add(self, *args: Any) -> ResourceSet:
        """Add the resources of each argument (a ResourceSet or R) to this set, in place."""
        self._take(self.union(*args))
        return self

    def append(self, *args: Any) -> ResourceSet:
        """Add the ranks of each argument, which must not already be in this set."""
        for arg in args:
            other = self._of(arg)
            shared = IDset(self._ranks).intersect(IDset(other._ranks))
            if len(shared):
                raise ValueError(f"append: rank {shared} is in both sets")
            self._ranks = dict(sorted({**self._ranks, **other.copy()._ranks}.items()))
            self._hosts.update(other._hosts)
            self._merge_properties(other)
        return self

    def _merge_properties(self, other: ResourceSet) -> None:
        for name, ids in other._properties.items():
            self._properties[name] = self._properties.get(name, IDset()).union(ids)

    def _run_op(self, op: Callable[[IDset, IDset], IDset], args: Any) -> ResourceSet:
        result = self.copy()
        for arg in args:
            other = self._of(arg)
            ranks: dict[int, Children] = {}
            for rank in set(result._ranks) | set(other._ranks):
                mine = result._ranks.get(rank, {})
                theirs = other._ranks.get(rank, {})
                ranks[rank] = {
                    name: op(mine.get(name, IDset()), theirs.get(name, IDset()))
                    for name in set(mine) | set(theirs)
                }
            hosts = {**other._hosts, **result._hosts}
            merged = result
            if op is IDset.union:
                merged = result.copy()
                merged._hosts = hosts
                merged._merge_properties(other)
            result = merged._derive(ranks)
        return result

    def union(self, *args: Any) -> ResourceSet:
        """A new set: the resources in this set or any of ``args``."""
        return self._run_op(IDset.union, args)

    def diff(self, *args: Any) -> ResourceSet:
        """A new set: the resources in this set and in none of ``args``."""
        return self._run_op(IDset.difference, args)

    def intersect(self, *args: Any) -> ResourceSet:
        """A new set: the resources in this set and in every one of ``args``."""
        return self._run_op(IDset.intersect, args)

    def copy_ranks(self, ranks: Any) -> ResourceSet:
        """A copy holding only ``ranks`` (an IDset, idset string or int)."""
        keep = ranks if isinstance(ranks, IDset) else IDset(str(ranks))
        return self._derive({r: c for r, c in self.copy()._ranks.items() if r in keep})

    def remove_ranks(self, ranks: Any) -> ResourceSet:
        """Remove ``ranks`` (an IDset, idset string or int) from this set."""
        drop = ranks if isinstance(ranks, IDset) else IDset(str(ranks))
        self._take(self._derive({r: c for r, c in self._ranks.items() if r not in drop}))
        return self

    def host_ranks(self, hosts: Any, ignore_nomatch: bool = False) -> list[int]:
        """The ranks of ``hosts`` (a Hostlist or hostlist string), in the hosts' order;
        FileNotFoundError naming hosts not in the set unless ``ignore_nomatch``."""
        ranks = sorted(r for r in self._ranks if r in self._hosts)
        return [ranks[i] for i in self.nodelist.index(hosts, ignore_nomatch)]

    def copy_constraint(self, constraint: Any) -> ResourceSet:
        """A copy holding only the ranks that match an RFC 31 constraint (a dict or its
        JSON text): ``properties``, ``hostlist``, ``ranks``, ``and``, ``or``, ``not``."""
        if isinstance(constraint, str):
            try:
                constraint = json.loads(constraint)
            except ValueError as exc:
                raise ValueError(f"copy_constraint: {exc}") from None
        _check_constraint(constraint)
        keep = [r for r in sorted(self._ranks) if self._matches(constraint, r)]
        return self._derive({r: c for r, c in self.copy()._ranks.items() if r in keep})

    def _matches(self, constraint: dict[str, list[Any]], rank: int) -> bool:
        """True if ``rank`` meets every operator of a checked constraint."""
        return all(self._operator(op, values, rank) for op, values in constraint.items())

    def _operator(self, op: str, values: list[Any], rank: int) -> bool:
        if op == "properties":
            return all(
                (rank in self._properties.get(name.lstrip("^"), IDset())) != name.startswith("^")
                for name in values
            )
        if op == "hostlist":
            return self._hosts.get(rank) in Hostlist(values)
        if op == "ranks":
            return any(rank in IDset(v) for v in values)
        if op == "and":
            return all(self._matches(c, rank) for c in values)
        if op == "or":
            return any(self._matches(c, rank) for c in values)
        return not all(self._matches(c, rank) for c in values)  # "not"

    def set_property(self, name: str, ranks: Any = None) -> ResourceSet:
        """Give property ``name`` to ``ranks`` (all ranks if None)."""
        if not isinstance(name, str) or not name or any(c in name for c in "^&'\"`|()"):
            raise ValueError(f"set_property: invalid property name '{name}'")
        try:
            ids = IDset(self._ranks) if ranks is None else IDset(str(ranks))
        except ValueError:
            raise ValueError(f"set_property: invalid ranks '{ranks}'") from None
        if len(ids.difference(IDset(self._ranks))):
            raise ValueError(f"set_property: ranks {ids} not all in the set")
        self._properties[name] = self._properties.get(name, IDset()).union(ids)
        return self

    def get_properties(self) -> str:
        """The properties as JSON text: ``{"NAME": "RANKS", ...}``."""
        return json.dumps({k: v.encode() for k, v in self._properties.items()})

    @property
    def properties(self) -> str:
        """The names of the set's properties, comma-separated."""
        return ",".join(self._properties)

    @property
    def starttime(self) -> float:
        """R's ``execution.starttime`` (0: not set)."""
        return self._starttime

    @starttime.setter
    def starttime(self, value: float) -> None:
        self._starttime = _time(value, "starttime")

    @property
    def expiration(self) -> float:
        """R's ``execution.expiration`` (0: none)."""
        return self._expiration

    @expiration.setter
    def expiration(self, value: float) -> None:
        self._expiration = _time(value, "expiration")

    @property
    def nodelist(self) -> Hostlist:
        """The hosts of the set's ranks, in rank order."""
        return Hostlist([self._hosts[r] for r in sorted(self._ranks) if r in self._hosts])

    @property
    def state(self) -> str | None:
        """What these resources are, if known (``up``, ``free``, ...)."""
        return self._state

    @state.setter
    def state(self, value: str | None) -> None:
        self._state = value

    @property
    def ranks(self) -> IDset:
        """The set's ranks."""
        return IDset(self._ranks)

    @property
    def nnodes(self) -> int:
        return len(self._ranks)

    @property
    def ncores(self) -> int:
        return self.count("core")

    @property
    def ngpus(self) -> int:
        return self.count("gpu")

    @property
    def rlist(self) -> str:
        return self.dumps()


class Rlist(ResourceSet):
    """A ResourceSet built rank by rank, as flux-core's ``Rlist`` is."""

    def add_rank(self, rank: int, hostname: str | None = None, cores: str = "0") -> Rlist:
        """Add ``rank`` on ``hostname`` (this host's name if None) with ``cores``."""
        if hostname is None:
            import socket

            hostname = socket.gethostname()
        self._ranks[rank] = {"core": IDset(cores)}
        self._hosts[rank] = hostname
        self._ranks = dict(sorted(self._ranks.items()))
        return self

    def add_child(self, rank: int, name: str, ids: str) -> Rlist:
        """Give ``rank`` the resources ``name`` (``gpu``) with ``ids``."""
        if rank not in self._ranks:
            raise ValueError(f"add_child: rank {rank} is not in the set")
        self._ranks[rank][name] = self._ranks[rank].get(name, IDset()).union(ids)
        return self
