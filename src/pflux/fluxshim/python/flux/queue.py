"""flux-core's ``flux.queue``: the instance's queues, their state, limits and resources.

``QueueList(handle)`` asks for the configuration (``config.get``), the resources
(``resource_list``) and each queue's state (``job-manager.queue-status``). With no
``[queues]`` table there is one anonymous queue, named ``""``; limits and defaults come
from ``[queues.NAME.policy]`` or else ``[policy]``, ``inf`` where none is set.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from flux.resource import resource_list

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterator

    from flux.core.handle import Flux
    from flux.resource.list import SchedResourceList
    from flux.resource.ResourceSet import ResourceSet

__all__ = [
    "QueueDefaults",
    "QueueInfo",
    "QueueLimits",
    "QueueList",
    "QueueResourceCounts",
    "QueueResources",
]

_UNITS = {"": 1.0, "s": 1.0, "ms": 0.001, "m": 60.0, "h": 3600.0, "d": 86400.0}


def _fsd(value: Any) -> float:
    """Seconds of an RFC 23 duration (``"1h"``, ``"inf"``) or a number of seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip()
        if text in ("inf", "infinity", "INF", "INFINITY"):
            return math.inf
        number = text.rstrip("smhd")
        unit = text[len(number) :]
        if unit not in _UNITS:
            raise ValueError(f"invalid Flux standard duration '{value}'")
        try:
            seconds = float(number) * _UNITS[unit]
        except ValueError:
            raise ValueError(f"invalid Flux standard duration '{value}'") from None
    else:
        raise TypeError(f"invalid type {type(value)} for a duration")
    if seconds < 0 or math.isnan(seconds):
        raise ValueError(f"invalid Flux standard duration '{value}'")
    return seconds


@dataclass
class QueueResourceCounts:
    """Counts of nodes, cores and GPUs (``inf`` for no maximum)."""

    nnodes: float
    ncores: float
    ngpus: float


@dataclass
class QueueLimits:
    """A queue's job size minimums and maximums, and its duration limit in seconds."""

    min: QueueResourceCounts
    max: QueueResourceCounts
    duration: float

    @property
    def timelimit(self) -> float:
        """The duration limit (``flux queue list``'s name for it)."""
        return self.duration


@dataclass
class QueueDefaults:
    """A queue's default job duration in seconds."""

    duration: float

    @property
    def timelimit(self) -> float:
        """The default duration (``flux queue list``'s name for it)."""
        return self.duration


class QueueResources:
    """The resources of a queue (those with its ``requires`` properties), by state:
    ``all``, ``up``, ``down``, ``allocated``, ``free``, each a ResourceSet."""

    def __init__(self, name: str, resources: SchedResourceList, config: dict[str, Any]) -> None:
        requires = config.get("queues", {}).get(name, {}).get("requires") if name else None
        self._resources = resources
        self._requires = requires

    def __getattr__(self, attr: str) -> ResourceSet:
        if attr.startswith("_"):
            raise AttributeError(attr)
        rset: ResourceSet = self._resources[attr]
        if self._requires is not None:
            rset = rset.copy_constraint({"properties": self._requires})
        return rset


class QueueInfo:
    """One queue: ``name`` (``""`` for the anonymous queue), ``is_default``, ``enabled``,
    ``started``, ``resources``, ``defaults`` and ``limits``."""

    def __init__(
        self,
        name: str | None,
        config: dict[str, Any],
        resources: SchedResourceList,
        enabled: bool,
        started: bool,
        default: bool,
    ) -> None:
        self.name = name or ""
        self.config = config
        self.is_default = default
        self.enabled = enabled
        self.started = started
        self.resources = QueueResources(self.name, resources, config)
        self.defaults = QueueDefaults(
            duration=_fsd(self._lookup("jobspec", "defaults", "system", "duration"))
        )
        self.limits = QueueLimits(
            min=QueueResourceCounts(*(self._size(key, "min") for key in _SIZES)),
            max=QueueResourceCounts(*(self._size(key, "max") for key in _SIZES)),
            duration=_fsd(self._lookup("limits", "duration")),
        )

    def _lookup(self, *path: str, default: Any = "inf") -> Any:
        """``policy.PATH`` of this queue's table, else of the instance's, else ``default``."""
        tables = [self.config.get("queues", {}).get(self.name, {}), self.config]
        for table in tables:
            value: Any = table.get("policy", {})
            for key in path:
                value = value.get(key) if isinstance(value, dict) else None
            if value is not None:
                return value
        return default

    def _size(self, key: str, which: str) -> float:
        fallback = math.inf if which == "max" else 0
        value = self._lookup("limits", "job-size", which, key, default=fallback)
        return math.inf if value < 0 else value


_SIZES = ("nnodes", "ncores", "ngpus")


class QueueList:
    """The instance's queues (``queues``: only these names; ValueError for one that is not
    configured). Iterate for QueueInfo objects, or index by name (``""`` or None: the
    anonymous queue)."""

    def __init__(self, handle: Flux, queues: Any = None) -> None:
        pending = resource_list(handle), handle.rpc("config.get")
        resources: SchedResourceList = pending[0].get()
        config: dict[str, Any] = pending[1].get() or {}
        configured: dict[str, Any] = config.get("queues", {})
        try:
            self.default_queue: str = config["policy"]["jobspec"]["defaults"]["system"]["queue"]
        except (KeyError, TypeError):
            self.default_queue = ""
        names = list(queues) if queues else list(configured)
        for name in names:
            if name not in configured:
                raise ValueError(f"No such queue: {name}")
        self._anonymous: QueueInfo | None = None
        if not configured:
            status = handle.rpc("job-manager.queue-status", {}).get()
            self._anonymous = QueueInfo(
                None, config, resources, status["enable"], status["start"], True
            )
            self._queues = {"": self._anonymous}
            return
        replies = {n: handle.rpc("job-manager.queue-status", {"name": n}) for n in names}
        self._queues = {}
        for name, rpc in replies.items():
            status = rpc.get()
            self._queues[name] = QueueInfo(
                name,
                config,
                resources,
                status["enable"],
                status["start"],
                name == self.default_queue,
            )

    def __getattr__(self, attr: str) -> QueueInfo:
        if attr.startswith("_"):
            raise AttributeError(attr)
        try:
            return self._queues[attr]
        except KeyError:
            raise AttributeError(f"no queue {attr!r}") from None

    def __getitem__(self, item: str | None) -> QueueInfo:
        if item is None:
            if self._anonymous is None:
                raise KeyError(item)
            return self._anonymous
        return self._queues[item]

    def __iter__(self) -> Iterator[QueueInfo]:
        return iter(list(self._queues.values()))
