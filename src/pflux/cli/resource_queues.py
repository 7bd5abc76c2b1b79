"""``pflux resource``'s view of the configured queues, as flux-resource's.

A queue (``[queues.NAME]``) holds a rank that has every property its ``requires``
names; a queue with no ``requires`` holds every rank. ``-q/--queue`` keeps only
the ranks of the named queues (a name not configured: ``--queue: NAME: no such
queue``). ``list`` splits each state's resources into lines of ranks with the same
properties, then merges the lines that print the same ``{state}``, ``{queue}``,
``{properties}`` and ``{propertiesx}``, so that a line's ``{queue}`` names the queues
its ranks belong to (only those named by ``-q``, if given) and ``{propertiesx}`` its
properties less the queue names. A state with no resources gets a line per queue.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from pflux.errors import PfluxError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from pflux.spec.queues import QueueConfig
    from pflux.spec.resource import ResourceSet

# the fields whose values split ``list``'s lines (with ``state``), as flux's
SPLITTING = ("properties", "propertiesx", "queue")


def wanted(options: Sequence[str]) -> list[str]:
    """The queue names of ``-q`` options (each ``NAME,...``), once each, in order."""
    names: list[str] = []
    for option in options:
        names.extend(name for name in option.split(",") if name not in names)
    return names


def ranks_of(
    queues: QueueConfig, names: Sequence[str], resources: ResourceSet, every: Collection[int]
) -> set[int]:
    """The ranks of ``resources`` in any of the queues ``names``; ``every``: the ranks a
    queue with no ``requires`` holds. PfluxError for a name not configured."""
    ranks: set[int] = set()
    for name in names:
        queue = queues.queues.get(name)
        if queue is None:
            raise PfluxError(f"--queue: {name}: no such queue")
        if not queue.requires:
            ranks.update(every)
            continue
        having = [resources.properties.get(prop) for prop in queue.requires]
        ranks.update(set(resources.targets).intersection(*(ids or () for ids in having)))
    return ranks


def restrict(resources: ResourceSet, ranks: Collection[int]) -> ResourceSet:
    """``resources`` on ``ranks`` only, with their properties."""
    from pflux.spec.resource import ResourceSet

    mask = ResourceSet({r: t for r, t in resources.targets.items() if r in ranks})
    return resources & mask


@dataclass
class Line:
    """Resources in one state that print as one line, and the queues they belong to."""

    state: str
    resources: ResourceSet
    queues: list[str]

    def fields(self, queues: QueueConfig | None) -> dict[str, Any]:
        """The queue and property fields of the line."""
        names = queues.queues if queues is not None else {}
        properties = list(self.resources.properties)
        return {
            "queue": ",".join(self.queues),
            "properties": ",".join(properties),
            "propertiesx": ",".join(p for p in properties if p not in names),
        }


def lines(
    sets: dict[str, Any],
    states: Sequence[str],
    splitting: Sequence[str],
    queues: QueueConfig | None,
    names: Sequence[str],
) -> list[Line]:
    """The lines of ``states``, in that order then by first rank: each state's
    resources split by properties and merged where ``state`` and the ``splitting``
    fields print alike. ``names``: the queues of ``-q`` (none: every queue)."""
    order = list(queues.queues) if queues is not None else []
    shown = [name for name in order if name in names] if names else order
    merged: dict[tuple[str, ...], Line] = {}
    for state in states:
        for line in _split(state, sets[state], queues, shown):
            values = line.fields(queues)
            key = (state, *(values[name] for name in splitting))
            kept = merged.get(key)
            if kept is None:
                merged[key] = line
                continue
            kept.resources = kept.resources | line.resources
            kept.queues = [name for name in order if name in kept.queues or name in line.queues]
    position = {state: index for index, state in enumerate(states)}
    return sorted(
        merged.values(),
        key=lambda line: (position[line.state], min(line.resources.targets, default=math.inf)),
    )


def _split(
    state: str, resources: ResourceSet, queues: QueueConfig | None, shown: Sequence[str]
) -> list[Line]:
    """A line per set of properties the ranks have, or, with no resources, one per queue."""
    if not resources:
        return [Line(state, resources, [name]) for name in shown] or [Line(state, resources, [])]
    having: dict[int, set[str]] = {rank: set() for rank in resources.targets}
    for prop, ids in resources.properties.items():
        for rank in ids:
            having[rank].add(prop)
    groups: dict[frozenset[str], list[int]] = {}
    for rank, names in having.items():
        groups.setdefault(frozenset(names), []).append(rank)
    found = []
    for props, ranks in groups.items():
        members = [
            name
            for name in shown
            if queues is not None and set(queues.queues[name].requires or ()) <= props
        ]
        found.append(Line(state, restrict(resources, ranks), members))
    return found
