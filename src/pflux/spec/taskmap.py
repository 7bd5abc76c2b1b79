"""RFC 34 task maps: which node each task of a job runs on, as blocks
``[first node, nodes, tasks per node, repeat]`` (tasks are numbered node after
node through a block, the block ``repeat`` times).

Decoded from the RFC's JSON (an object ``{version: 1, map}`` or the bare list),
from a *raw* map (``0-3;4-7``: the task ids of each node, nodes separated by
``;``) or from MPICH's ``PMI_process_mapping`` (``(vector,(0,2,4))``); encoded
to each of them. Blocks are appended as flux-core's libtaskmap appends them
(a block that continues the last one merges into it, an identical one repeats
it), so a map decoded from any form encodes as flux-core's would.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from pflux.errors import IdsetError, SpecError
from pflux.spec.idset import IdSet

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any


class TaskmapError(SpecError):
    """A task map that cannot be decoded, or a question it cannot answer."""


class Taskmap:
    """The blocks, and what they say of each node and task."""

    def __init__(self) -> None:
        self.blocks: list[list[int]] = []  # [start, nnodes, ppn, repeat]

    # --- building ------------------------------------------------------------------

    def append(self, nodeid: int, nnodes: int, ppn: int) -> None:
        """Tasks ``ppn`` per node on ``nnodes`` nodes from ``nodeid``, after the others."""
        if nodeid < 0 or nnodes <= 0 or ppn <= 0:
            raise TaskmapError(f"invalid block ({nodeid},{nnodes},{ppn})")
        if self.blocks:
            last = self.blocks[-1]
            start, count, per, repeat = last
            if nodeid == start + count and ppn == per and repeat == 1:
                last[1] += nnodes
                self._merge_repeats()
                return
            if start == nodeid and count == 1 and nnodes == 1:
                last[2] += ppn
                self._merge_repeats()
                return
            if (start, count, per) == (nodeid, nnodes, ppn):
                last[3] += 1
                return
        self.blocks.append([nodeid, nnodes, ppn, 1])

    def _merge_repeats(self) -> None:
        merged: list[list[int]] = []
        for block in self.blocks:
            if merged and merged[-1][:3] == block[:3]:
                merged[-1][3] += block[3]
            else:
                merged.append(block)
        self.blocks = merged

    # --- reading -------------------------------------------------------------------

    def _placements(self) -> Iterator[tuple[int, int]]:
        """(node, tasks placed there) in task order."""
        for start, nnodes, ppn, repeat in self.blocks:
            for _ in range(repeat):
                for node in range(start, start + nnodes):
                    yield node, ppn

    @property
    def nnodes(self) -> int:
        return max((start + count for start, count, _, _ in self.blocks), default=0)

    @property
    def total_ntasks(self) -> int:
        return sum(count * ppn * repeat for _, count, ppn, repeat in self.blocks)

    def taskids(self, nodeid: int) -> IdSet:
        """The tasks on node ``nodeid``; TaskmapError if it runs none."""
        ids: list[int] = []
        task = 0
        for node, ppn in self._placements():
            if node == nodeid:
                ids.extend(range(task, task + ppn))
            task += ppn
        if not ids:
            raise TaskmapError(f"No taskids for node {nodeid}")
        return IdSet.from_sorted(ids)

    def ntasks(self, nodeid: int) -> int:
        """How many tasks node ``nodeid`` runs; TaskmapError if none."""
        count = sum(ppn for node, ppn in self._placements() if node == nodeid)
        if not count:
            raise TaskmapError(f"failed to get task count for node {nodeid}")
        return count

    def nodeid(self, taskid: int) -> int:
        """The node task ``taskid`` runs on; TaskmapError if there is no such task."""
        task = 0
        if taskid >= 0:
            for node, ppn in self._placements():
                task += ppn
                if taskid < task:
                    return node
        raise TaskmapError(f"failed to get nodeid for task {taskid}")

    # --- encoding ------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {"version": 1, "map": [list(block) for block in self.blocks]}

    def encode(self) -> str:
        """RFC 34's JSON text, compact."""
        return json.dumps(self.to_json(), separators=(",", ":"))

    def encode_raw(self) -> str:
        """The task ids of each node, ``;`` between nodes; TaskmapError when a node
        below the last runs none (the raw form cannot say so)."""
        try:
            return ";".join(self.taskids(node).encode() for node in range(self.nnodes))
        except TaskmapError:
            raise TaskmapError("failed to convert taskmap to raw") from None

    def encode_pmi(self) -> str:
        if not self.blocks:
            return ""
        triples = [
            f"({start},{count},{ppn})"
            for start, count, ppn, repeat in self.blocks
            for _ in range(repeat)
        ]
        return f"(vector,{','.join(triples)})"


def decode(text: str) -> Taskmap:
    """A task map from RFC 34 JSON, raw or PMI text, told apart as flux-core does."""
    if not text or "vector," in text:
        return decode_pmi(text)
    if not re.search(r"[(){}\[\]]", text):
        return decode_raw(text)
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise TaskmapError(str(exc)) from None
    return from_json(value)


def from_json(value: Any) -> Taskmap:
    """RFC 34's object ``{version: 1, map: [...]}``, or the bare list of blocks."""
    if isinstance(value, dict):
        version, blocks = value.get("version"), value.get("map")
        if type(version) is not int or not isinstance(blocks, list):
            raise TaskmapError("taskmap must have an integer version and a map array")
        if version != 1:
            raise TaskmapError(f"expected version=1, got {version}")
    elif isinstance(value, list):
        blocks = value
    else:
        raise TaskmapError("taskmap must be an object or array")
    taskmap = Taskmap()
    for index, block in enumerate(blocks):
        if not isinstance(block, list):
            raise TaskmapError(f"entry {index} in taskmap is not an array")
        if len(block) != 4 or any(type(n) is not int for n in block):
            raise TaskmapError(f"error in taskmap entry {index}: expected 4 integers")
        start, nnodes, ppn, repeat = block
        if start < 0 or nnodes <= 0 or ppn <= 0 or repeat <= 0:
            raise TaskmapError(f"invalid entry [{start},{nnodes},{ppn},{repeat}]")
        for _ in range(repeat):
            taskmap.append(start, nnodes, ppn)
    return taskmap


_PMI_BLOCK = re.compile(r"(\d+),(\d+),(\d+)\)")


def decode_pmi(text: str) -> Taskmap:
    """MPICH's ``(vector,(node,nodes,ppn),...)``; empty text is an empty map."""
    taskmap = Taskmap()
    if not text:
        return taskmap
    vector = False
    for piece in text.split("("):
        token = piece.lstrip()
        if token.startswith("vector,"):
            vector = True
        elif token:
            if not vector:
                raise TaskmapError("vector prefix must precede blocklist")
            match = _PMI_BLOCK.match(token)
            if match is None:
                raise TaskmapError(f"unable to parse block: ({token}")
            nodeid, count, ppn = (int(n) for n in match.groups())
            if count <= 0 or ppn <= 0:
                raise TaskmapError(f"invalid number in block: ({token}")
            taskmap.append(nodeid, count, ppn)
    if taskmap.total_ntasks == 0:
        raise TaskmapError("no tasks found in PMI_process_mapping")
    return taskmap


def decode_raw(text: str) -> Taskmap:
    """``IDS;IDS;...``: node N runs the tasks of the Nth idset (empty ones are skipped, as
    flux-core's strtok skips them); every task from 0 to the last must be named once."""
    runs: list[tuple[int, int, int]] = []  # (first task, tasks, node)
    for nodeid, ids in enumerate(ids for ids in text.split(";") if ids):
        try:
            idset = IdSet.decode(ids)
        except IdsetError as exc:
            raise TaskmapError(str(exc)) from None
        runs.extend((lo, hi - lo + 1, nodeid) for lo, hi in idset.ranges)
    if not runs:
        raise TaskmapError("Invalid argument")
    runs.sort()
    taskmap = Taskmap()
    following = 0  # the task id the next run must start at
    for first, count, nodeid in runs:
        last = first + count - 1
        if first < following:
            end = min(following - 1, last)
            if end == first:
                raise TaskmapError(f"duplicate taskid specified: {first}")
            raise TaskmapError(f"duplicate taskids specified: {first}-{end}")
        if first > following:
            if first - 1 == following:
                raise TaskmapError(f"missing taskid: {following}")
            raise TaskmapError(f"missing taskids: {following}-{first - 1}")
        taskmap.append(nodeid, 1, count)
        following = last + 1
    return taskmap
