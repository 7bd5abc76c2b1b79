"""Workflows as DAGs: nodes (commands or jobspecs) and edges (dependencies) checked and ordered.

Pure: the Python API (``Client.submit_dag``) submits the levels this yields,
each level's jobs all in flight at once, every child depending on its parents
through an RFC 26 scheme (``afterok`` by default, so a failure cascades).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping

from pflux.errors import PfluxError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any


class DagError(PfluxError, ValueError):
    """Edges that name unknown nodes, or that make a cycle."""


def parents_of(
    nodes: Iterable[Hashable], edges: Iterable[tuple[Hashable, Hashable]]
) -> dict[Any, list[Any]]:
    """Each node's parents, in edge order; unknown nodes and self-loops are errors."""
    parents: dict[Any, list[Any]] = {node: [] for node in nodes}
    for parent, child in edges:
        for node in (parent, child):
            if node not in parents:
                raise DagError(f"edge ({parent!r}, {child!r}) names unknown node {node!r}")
        if parent == child:
            raise DagError(f"edge ({parent!r}, {child!r}) is a cycle of one node")
        if parent not in parents[child]:
            parents[child].append(parent)
    return parents


def levels(parents: Mapping[Any, list[Any]]) -> list[list[Any]]:
    """The nodes in dependency order, grouped so each group depends only on earlier ones.

    Kahn's algorithm: O(nodes + edges). A cycle is an error naming its nodes.
    """
    waiting = {node: len(ps) for node, ps in parents.items()}
    children: dict[Any, list[Any]] = {node: [] for node in parents}
    for node, ps in parents.items():
        for parent in ps:
            children[parent].append(node)
    level = [node for node, count in waiting.items() if count == 0]
    out: list[list[Any]] = []
    seen = 0
    while level:
        out.append(level)
        seen += len(level)
        following = []
        for node in level:
            for child in children[node]:
                waiting[child] -= 1
                if waiting[child] == 0:
                    following.append(child)
        level = following
    if seen != len(parents):
        stuck = sorted(repr(node) for node, count in waiting.items() if count > 0)
        raise DagError(f"the edges make a cycle through {', '.join(stuck)}")
    return out
