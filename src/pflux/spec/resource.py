"""R, the resource set (RFC 20, version 1).

The scheduler writes R for every job it allocates, the execution system and
the job shell read it, and the free pool is kept as one: parsing, building
and combining R are on the per-job path, so a :class:`ResourceSet` keeps each
execution target's cores and GPUs as :class:`~pflux.spec.idset.IdSet` ranges
and validates once, at the boundary (:meth:`ResourceSet.from_json`,
:meth:`ResourceSet.build`).

Decisions where RFC 20 and flux-core's librlist leave room:

- ``nodelist`` is required (RFC 20 says so; flux-core tolerates its absence),
  and must name exactly one host per execution target, in rank order.
- ``children`` holds ``core`` (required, possibly empty) and ``gpu``
  (optional); other resource types are rejected, since RFC 20 reserves them
  (flux-core would accept any name).  A target with neither cores nor GPUs is
  rejected: flux-core never writes one.
- A rank may appear in only one ``R_lite`` entry (flux-core merges repeats).
- ``nslots`` is kept (a conforming scheduler writes it in allocations) and
  must be a positive integer; 0 means absent.
- ``expiration`` must be greater than ``starttime`` when both are set, as
  RFC 20 says; 0 means unset.
- Properties naming no rank are dropped; others must name ranks of R_lite.
- Unknown keys are rejected everywhere except inside ``scheduling``, which is
  opaque and kept as given.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, NoReturn

from pflux.errors import HostlistError, IdsetError, ResourceError
from pflux.spec import hostlist
from pflux.spec.idset import MAX_ID, IdSet

__all__ = ["MAX_TARGETS", "ResourceSet", "Target"]

MAX_TARGETS = 1 << 20
"""The most execution targets one R may name (bounds what a document can expand to)."""

_PROPERTY_FORBIDDEN = "!&'\"^`|()"
_TOP_KEYS = frozenset({"version", "execution", "scheduling"})
_EXECUTION_KEYS = frozenset(
    {"R_lite", "nodelist", "nslots", "starttime", "expiration", "properties"}
)
_ENTRY_KEYS = frozenset({"rank", "children"})
_CHILD_KEYS = frozenset({"core", "gpu"})
_EMPTY = IdSet()
_MISSING: Any = object()


class Target(NamedTuple):
    """One execution target (broker rank): its host, and the cores and GPUs it holds."""

    hostname: str
    cores: IdSet
    gpus: IdSet


def _fail(path: str, rule: str) -> NoReturn:
    raise ResourceError(f"{path}: {rule}" if path else rule)


_JSON_TYPES: dict[type, str] = {
    dict: "object",
    list: "array",
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
}


def _kind(value: object) -> str:
    """The JSON name of a value's type, for messages."""
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _check_keys(obj: dict[Any, Any], allowed: frozenset[str], path: str, what: str) -> None:
    if not obj.keys() <= allowed:
        key = next(key for key in obj if key not in allowed)
        _fail(f"{path}.{key}" if path else str(key), f"unknown {what}")


def _required(obj: dict[Any, Any], key: str, path: str) -> Any:
    value = obj.get(key, _MISSING)
    if value is _MISSING:
        _fail(path, "required key is missing")
    return value


def _object(value: object, path: str) -> dict[Any, Any]:
    if not isinstance(value, dict):
        _fail(path, f"must be an object, not {_kind(value)}")
    return value


def _idset(value: object, path: str) -> IdSet:
    if not isinstance(value, str):
        _fail(path, f"must be an idset string, not {_kind(value)}")
    try:
        return IdSet.decode(value)
    except IdsetError as err:
        raise ResourceError(f"{path}: invalid {err}") from err


def _time(value: object, path: str) -> float:
    """Seconds since the epoch, or 0 for unset."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        _fail(path, f"must be a number, not {_kind(value)}")
    try:
        seconds = float(value)
    except OverflowError:
        _fail(path, "is out of range")
    if not math.isfinite(seconds) or seconds < 0:
        _fail(path, f"must be a non-negative number of seconds, not {value}")
    return seconds


def _times(starttime: object, expiration: object, path: str) -> tuple[float, float]:
    start = _time(starttime, f"{path}starttime")
    end = _time(expiration, f"{path}expiration")
    if start and end and end <= start:
        _fail(f"{path}expiration", f"must be later than starttime ({end} <= {start})")
    return start, end


def _nslots(value: object, path: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        _fail(path, f"must be an integer of at least {minimum}, not {value!r}")
    return value


def _property_name(name: object, path: str) -> str:
    if not isinstance(name, str) or not name:
        _fail(path, f"property name must be a non-empty string, not {name!r}")
    bad = next((c for c in name if c in _PROPERTY_FORBIDDEN), None)
    if bad is not None:
        _fail(f"{path}.{name}", f"invalid character {bad!r} in property name")
    return name


def _subset_of(ids: IdSet, ranks: IdSet, path: str) -> None:
    if not ids.issubset(ranks):
        _fail(path, f"ranks {ids - ranks} are not execution targets of this R")


def _hosts(entries: Sequence[object], limit: int, path: str) -> list[str]:
    """Expand a list of hostlists, stopping early once past ``limit`` hosts."""
    hosts: list[str] = []
    for i, item in enumerate(entries):
        if not isinstance(item, str):
            _fail(f"{path}[{i}]", f"must be a hostlist string, not {_kind(item)}")
        try:
            hosts.extend(hostlist.decode(item))
        except HostlistError as err:
            raise ResourceError(f"{path}[{i}]: invalid {err}") from err
        if len(hosts) > limit:
            break
    if len(hosts) > limit:  # counting stopped early
        _fail(path, f"names more than {limit} hosts for {limit} execution targets")
    if len(hosts) < limit:
        _fail(path, f"names {len(hosts)} hosts for {limit} execution targets")
    return hosts


@dataclass(frozen=True, slots=True)
class ResourceSet:
    """A validated RFC 20 resource set; immutable.

    ``targets`` maps each rank, ascending, to its :class:`Target`.  Times are
    seconds since the epoch, 0 for unset; ``nslots`` is 0 when absent;
    ``properties`` maps a name to the ranks that have it; ``scheduling`` is
    the opaque scheduler object, or None.  Create instances with
    :meth:`from_json` or :meth:`build`, which validate; the constructor
    trusts its arguments.
    """

    targets: Mapping[int, Target] = field(hash=False)
    starttime: float = 0.0
    expiration: float = 0.0
    nslots: int = 0
    properties: Mapping[str, IdSet] = field(default_factory=dict, hash=False)
    scheduling: Mapping[str, Any] | None = field(default=None, hash=False)

    # parsing and building

    @classmethod
    def from_json(cls, obj: Any, *, allow_empty: bool = False) -> ResourceSet:
        """Validate a parsed R document; ResourceError names the path and the rule.

        An R_lite that names no target is an error unless ``allow_empty``
        (for replies that may describe nothing, such as the free resources).
        """
        if not isinstance(obj, dict):
            _fail("", f"R must be a JSON object, not {_kind(obj)}")
        _check_keys(obj, _TOP_KEYS, "", "key")
        version = _required(obj, "version", "version")
        if version != 1 or isinstance(version, bool) or not isinstance(version, int):
            _fail("version", f"unsupported R version {version!r} (only 1 is defined)")
        execution = _object(_required(obj, "execution", "execution"), "execution")
        _check_keys(execution, _EXECUTION_KEYS, "execution", "key")

        r_lite = _required(execution, "R_lite", "execution.R_lite")
        if not isinstance(r_lite, list):
            _fail("execution.R_lite", f"must be an array, not {_kind(r_lite)}")
        if not r_lite and not allow_empty:
            _fail("execution.R_lite", "must name at least one execution target")
        entries, ranks = _parse_r_lite(r_lite)

        nodelist = _required(execution, "nodelist", "execution.nodelist")
        if not isinstance(nodelist, list):
            _fail("execution.nodelist", f"must be an array, not {_kind(nodelist)}")
        hosts = _hosts(nodelist, len(ranks), "execution.nodelist")
        if len(entries) == 1:
            _, cores, gpus = entries[0]
            targets = {
                rank: Target(host, cores, gpus) for rank, host in zip(ranks, hosts, strict=True)
            }
        else:
            by_rank = {rank: (cores, gpus) for ids, cores, gpus in entries for rank in ids}
            targets = {
                rank: Target(host, *by_rank[rank]) for rank, host in zip(ranks, hosts, strict=True)
            }

        nslots = execution.get("nslots", _MISSING)
        nslots = 0 if nslots is _MISSING else _nslots(nslots, "execution.nslots", 1)
        start, end = _times(
            execution.get("starttime", 0.0), execution.get("expiration", 0.0), "execution."
        )
        properties = _parse_properties(execution.get("properties", _MISSING), ranks)
        scheduling = obj.get("scheduling")
        if "scheduling" in obj:
            scheduling = _object(scheduling, "scheduling")
        return cls(targets, start, end, nslots, properties, scheduling)

    @classmethod
    def build(
        cls,
        children: Mapping[int, tuple[IdSet, IdSet]],
        nodelist: str | Sequence[str],
        starttime: float = 0.0,
        expiration: float = 0.0,
        *,
        nslots: int = 0,
        properties: Mapping[str, IdSet] | None = None,
        scheduling: Mapping[str, Any] | None = None,
    ) -> ResourceSet:
        """A resource set from ``{rank: (cores, gpus)}`` and the hosts of those ranks.

        ``nodelist`` is a hostlist, or a sequence of hostnames or hostlists,
        giving one host per rank in ascending rank order, e.g.
        ``build({0: (IdSet.range(0, 1), IdSet())}, ["node0"])``.
        """
        targets = _build_targets(children, nodelist)
        start, end = _times(starttime, expiration, "")
        props: dict[str, IdSet] = {}
        if properties is not None:
            props = _build_properties(properties, IdSet(targets))
        if scheduling is not None and not isinstance(scheduling, Mapping):
            _fail("scheduling", f"must be an object, not {_kind(scheduling)}")
        return cls(targets, start, end, _nslots(nslots, "nslots", 0), props, scheduling)

    def with_times(self, starttime: float, expiration: float) -> ResourceSet:
        """This set valid from ``starttime`` to ``expiration`` (0 = unset)."""
        start, end = _times(starttime, expiration, "")
        return ResourceSet(self.targets, start, end, self.nslots, self.properties, self.scheduling)

    # encoding

    def _groups(self) -> Iterator[tuple[IdSet, IdSet, IdSet]]:
        """(ranks, cores, gpus) for each distinct (cores, gpus), by lowest rank."""
        groups: dict[tuple[IdSet, IdSet], list[int]] = {}
        last: Target | None = None
        ranks: list[int] = []
        for rank, target in self.targets.items():
            # neighbours parsed from one R_lite entry share IdSet objects: skip hashing them
            if last is None or target.cores is not last.cores or target.gpus is not last.gpus:
                ranks = groups.setdefault((target.cores, target.gpus), [])
                last = target
            ranks.append(rank)
        for (cores, gpus), members in groups.items():
            yield IdSet.from_sorted(members), cores, gpus  # targets are in rank order

    def to_json(self) -> dict[str, Any]:
        """The canonical R document: ranks with identical children share an entry."""
        return self.encode()[0]

    def summary(self) -> str:
        """A short description like flux's ``rank[0-3]/core[0-3],gpu0``.

        This is the form sched-simple posts as ``sched.resource_summary``
        (flux-core's ``rlist_dumps``).
        """
        return self.encode()[1]

    def encode(self) -> tuple[dict[str, Any], str]:
        """``to_json()`` and ``summary()`` from one grouping and one encoding of each
        idset: the scheduler sends both for every job it allocates."""
        r_lite: list[dict[str, Any]] = []
        parts = []
        for ranks, cores, gpus in self._groups():
            core_text = cores.encode()
            children = {"core": core_text}
            kinds = [f"core{cores.bracket(core_text)}"] if cores else []
            if gpus:
                gpu_text = children["gpu"] = gpus.encode()
                kinds.append(f"gpu{gpus.bracket(gpu_text)}")
            rank_text = ranks.encode()
            r_lite.append({"rank": rank_text, "children": children})
            parts.append(f"rank{ranks.bracket(rank_text)}/{','.join(kinds)}")
        execution: dict[str, Any] = {
            "R_lite": r_lite,
            "nodelist": [hostlist.encode(self.nodelist)] if self.targets else [],
        }
        if self.nslots:
            execution["nslots"] = self.nslots
        execution["starttime"] = self.starttime
        execution["expiration"] = self.expiration
        if self.properties:
            execution["properties"] = {name: ids.encode() for name, ids in self.properties.items()}
        doc: dict[str, Any] = {"version": 1, "execution": execution}
        if self.scheduling is not None:
            doc["scheduling"] = self.scheduling
        return doc, " ".join(parts)

    # queries

    def __bool__(self) -> bool:
        return bool(self.targets)

    @property
    def nnodes(self) -> int:
        """The number of execution targets."""
        return len(self.targets)

    @property
    def nodelist(self) -> tuple[str, ...]:
        """One hostname per execution target, in rank order."""
        return tuple(target.hostname for target in self.targets.values())

    def ranks(self) -> IdSet:
        """The ranks of the execution targets."""
        return IdSet(self.targets)

    def cores(self, rank: int) -> IdSet:
        """The cores held on ``rank`` (empty if the rank is not in this set)."""
        target = self.targets.get(rank)
        return target.cores if target is not None else _EMPTY

    def gpus(self, rank: int) -> IdSet:
        """The GPUs held on ``rank`` (empty if the rank is not in this set)."""
        target = self.targets.get(rank)
        return target.gpus if target is not None else _EMPTY

    def ncores(self, rank: int | None = None) -> int:
        """Cores on ``rank``, or in the whole set."""
        if rank is not None:
            return len(self.cores(rank))
        return sum(len(target.cores) for target in self.targets.values())

    def ngpus(self, rank: int | None = None) -> int:
        """GPUs on ``rank``, or in the whole set."""
        if rank is not None:
            return len(self.gpus(rank))
        return sum(len(target.gpus) for target in self.targets.values())

    # set operations, per rank; results keep this set's times and scheduling
    # object and drop nslots, which describes one allocation

    def union(self, other: ResourceSet) -> ResourceSet:
        """Resources in either set; ResourceError if a rank has two hostnames."""
        targets = dict(self.targets)
        added = False
        for rank, theirs in other.targets.items():
            mine = targets.get(rank)
            if mine is None:
                targets[rank] = theirs
                added = True
            elif mine.hostname != theirs.hostname:
                _fail(f"rank {rank}", f"host {mine.hostname!r} conflicts with {theirs.hostname!r}")
            else:
                targets[rank] = Target(
                    mine.hostname, mine.cores | theirs.cores, mine.gpus | theirs.gpus
                )
        if added:
            targets = dict(sorted(targets.items()))
        properties = dict(self.properties)
        for name, ids in other.properties.items():
            properties[name] = properties[name] | ids if name in properties else ids
        return self._derive(targets, dict(sorted(properties.items())))

    def difference(self, other: ResourceSet) -> ResourceSet:
        """Resources in this set and not in ``other``; emptied ranks are dropped."""
        targets: dict[int, Target] = {}
        for rank, mine in self.targets.items():
            theirs = other.targets.get(rank)
            if theirs is None:
                targets[rank] = mine
            else:
                cores, gpus = mine.cores - theirs.cores, mine.gpus - theirs.gpus
                if cores or gpus:
                    targets[rank] = Target(mine.hostname, cores, gpus)
        return self._derive(targets, self._properties_within(targets))

    def intersection(self, other: ResourceSet) -> ResourceSet:
        """Resources in both sets; ranks left with nothing are dropped."""
        targets: dict[int, Target] = {}
        for rank, mine in self.targets.items():
            theirs = other.targets.get(rank)
            if theirs is not None:
                cores, gpus = mine.cores & theirs.cores, mine.gpus & theirs.gpus
                if cores or gpus:
                    targets[rank] = Target(mine.hostname, cores, gpus)
        return self._derive(targets, self._properties_within(targets))

    def is_disjoint(self, other: ResourceSet) -> bool:
        """True if no core or GPU of a rank is in both sets."""
        for rank, mine in self.targets.items():
            theirs = other.targets.get(rank)
            if theirs is not None and not (
                mine.cores.isdisjoint(theirs.cores) and mine.gpus.isdisjoint(theirs.gpus)
            ):
                return False
        return True

    def issubset(self, other: ResourceSet) -> bool:
        """True if every core and GPU of this set is in ``other`` on the same rank."""
        for rank, mine in self.targets.items():
            theirs = other.targets.get(rank)
            if (
                theirs is None
                or not mine.cores.issubset(theirs.cores)
                or not mine.gpus.issubset(theirs.gpus)
            ):
                return False
        return True

    def __or__(self, other: object) -> ResourceSet:
        if not isinstance(other, ResourceSet):
            return NotImplemented
        return self.union(other)

    def __and__(self, other: object) -> ResourceSet:
        if not isinstance(other, ResourceSet):
            return NotImplemented
        return self.intersection(other)

    def __sub__(self, other: object) -> ResourceSet:
        if not isinstance(other, ResourceSet):
            return NotImplemented
        return self.difference(other)

    def _properties_within(self, targets: Mapping[int, Target]) -> dict[str, IdSet]:
        if not self.properties:
            return {}
        ranks = IdSet(targets)
        kept = {name: ids & ranks for name, ids in self.properties.items()}
        return {name: ids for name, ids in kept.items() if ids}

    def _derive(self, targets: dict[int, Target], properties: dict[str, IdSet]) -> ResourceSet:
        return ResourceSet(targets, self.starttime, self.expiration, 0, properties, self.scheduling)


def _parse_r_lite(r_lite: list[Any]) -> tuple[list[tuple[IdSet, IdSet, IdSet]], IdSet]:
    """(ranks, cores, gpus) per entry, and all ranks; a rank may appear only once."""
    entries: list[tuple[IdSet, IdSet, IdSet]] = []
    all_ranks = _EMPTY
    for i, entry in enumerate(r_lite):
        path = f"execution.R_lite[{i}]"
        _check_keys(_object(entry, path), _ENTRY_KEYS, path, "key")
        ranks = _idset(_required(entry, "rank", f"{path}.rank"), f"{path}.rank")
        if not ranks:
            _fail(f"{path}.rank", "names no execution target")
        children = _object(_required(entry, "children", f"{path}.children"), f"{path}.children")
        _check_keys(children, _CHILD_KEYS, f"{path}.children", "resource type")
        cores = _idset(
            _required(children, "core", f"{path}.children.core"), f"{path}.children.core"
        )
        gpus = _idset(children["gpu"], f"{path}.children.gpu") if "gpu" in children else _EMPTY
        if not cores and not gpus:
            _fail(f"{path}.children", "holds no cores or gpus")
        if not all_ranks.isdisjoint(ranks):
            repeated = (all_ranks & ranks).first()
            _fail(f"{path}.rank", f"rank {repeated} already appears in an earlier entry")
        all_ranks = all_ranks | ranks
        if len(all_ranks) > MAX_TARGETS:
            _fail("execution.R_lite", f"names more than {MAX_TARGETS} execution targets")
        entries.append((ranks, cores, gpus))
    return entries, all_ranks


def _parse_properties(value: Any, ranks: IdSet) -> dict[str, IdSet]:
    if value is _MISSING:
        return {}
    properties: dict[str, IdSet] = {}
    for name, ids_text in _object(value, "execution.properties").items():
        _property_name(name, "execution.properties")
        path = f"execution.properties.{name}"
        ids = _idset(ids_text, path)
        _subset_of(ids, ranks, path)
        if ids:
            properties[name] = ids
    return dict(sorted(properties.items()))


def _build_targets(
    children: Mapping[int, tuple[IdSet, IdSet]], nodelist: str | Sequence[str]
) -> dict[int, Target]:
    if not isinstance(children, Mapping):
        _fail("children", "must map ranks to (cores, gpus) pairs")
    for rank in children:
        if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank <= MAX_ID:
            _fail("children", f"rank {rank!r} is not an integer in 0-{MAX_ID}")
    ranks = sorted(children)
    if len(ranks) > MAX_TARGETS:
        _fail("children", f"names more than {MAX_TARGETS} execution targets")
    entries = [nodelist] if isinstance(nodelist, str) else nodelist
    if not isinstance(entries, Sequence):
        _fail("nodelist", "must be a hostlist or a sequence of hostnames")
    hosts = _hosts(entries, len(ranks), "nodelist")
    targets: dict[int, Target] = {}
    for rank, host in zip(ranks, hosts, strict=True):
        pair = children[rank]
        if (
            not isinstance(pair, tuple)
            or len(pair) != 2
            or not isinstance(pair[0], IdSet)
            or not isinstance(pair[1], IdSet)
        ):
            _fail(f"children[{rank}]", "must be a (cores, gpus) pair of IdSets")
        if not pair[0] and not pair[1]:
            _fail(f"children[{rank}]", "holds no cores or gpus")
        targets[rank] = Target(host, pair[0], pair[1])
    return targets


def _build_properties(properties: Mapping[str, IdSet], ranks: IdSet) -> dict[str, IdSet]:
    if not isinstance(properties, Mapping):
        _fail("properties", "must map names to IdSets of ranks")
    props: dict[str, IdSet] = {}
    for name, ids in properties.items():
        _property_name(name, "properties")
        if not isinstance(ids, IdSet):
            _fail(f"properties.{name}", f"must be an IdSet, not {_kind(ids)}")
        _subset_of(ids, ranks, f"properties.{name}")
        if ids:
            props[name] = ids
    return dict(sorted(props.items()))
