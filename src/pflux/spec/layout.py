"""Which task runs where: tasks over the slots of R, and each slot's cores and GPUs.

Pure: job-exec (``pflux.exec.plan``, for each job's shell) and the simulator call it with
the jobspec and R and gets every task's rank, node and resources. The rules:

- R's targets are cut into slots of the jobspec's cores per slot (a target
  with fewer cores than one slot still holds one slot); with a node level,
  at most the jobspec's slots per node are taken from each target; the first
  ``nslots`` slots in rank order are the job's.
- The jobspec's task count (``per_slot`` × slots, or ``total``) is spread
  evenly over the slots in order, in blocks of consecutive task ranks, so
  ``per_slot: N`` puts N tasks in every slot and ``total: 3`` over 4 slots
  fills the first three.
- A task is bound to its slot's cores; its GPUs are its slot's share of the
  target's GPUs, or all of them when the jobspec asks for none (an exclusive
  allocation may still hold GPUs).
- With the ``per-resource`` shell option (``--tasks-per-node``,
  ``--tasks-per-core``), the task count is flux-core's instead: ``count``
  tasks on every target of R, bound to all its cores, or ``count`` on each of
  its cores, bound to that core.
- Task ranks go to the targets by the ``taskmap`` shell option, as flux-core's
  shell maps them: ``block`` (the default: each target's tasks consecutive)
  or ``cyclic[:N]`` (N ranks to each target in turn while it has tasks left).
  The RFC 34 task map is built as flux-core's builds it, block by block
  (``pflux.spec.taskmap``).

R is read with :func:`targets`, which takes only what placement needs from
``R_lite``: the scheduler wrote R and validated it, and this runs for every
job on the broker's busy core, so the full
:class:`~pflux.spec.resource.ResourceSet` is not built here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from pflux.errors import IdsetError, ResourceError
from pflux.spec.idset import IdSet
from pflux.spec.jobspec import JobspecView
from pflux.spec.shell_options import taskmap_scheme
from pflux.spec.taskmap import Taskmap

__all__ = ["Layout", "LayoutTarget", "TaskPlace", "cpu_set", "layout", "targets"]


class LayoutTarget(NamedTuple):
    """One execution target of R: its broker rank and the ids of its cores and GPUs."""

    rank: int
    cores: tuple[int, ...]
    gpus: tuple[int, ...]


class TaskPlace(NamedTuple):
    """Where one task runs: its ranks and the R ids of its cores and GPUs."""

    rank: int  # FLUX_TASK_RANK: 0..ntasks-1 across the job
    local_id: int  # FLUX_TASK_LOCAL_ID: its index among the tasks of its node
    node: int  # the index of its execution target within R (0..nnodes-1)
    broker_rank: int  # that execution target's broker rank
    cores: tuple[int, ...]
    gpus: tuple[int, ...]


class Layout(NamedTuple):
    """Every task's place (in rank order), how many tasks each node of R runs, and the
    RFC 34 task map's blocks: ``[first node, nodes, tasks per node, repeat]``."""

    tasks: tuple[TaskPlace, ...]
    per_node: tuple[int, ...]
    blocks: tuple[tuple[int, int, int, int], ...]

    @property
    def nnodes(self) -> int:
        return len(self.per_node)

    def taskmap(self) -> dict[str, Any]:
        """The RFC 34 task map, as the ``shell.start`` event carries it."""
        return {"version": 1, "map": [list(block) for block in self.blocks]}


def targets(R: Mapping[str, Any]) -> list[LayoutTarget]:  # noqa: N803 (R is the RFC's name)
    """R's execution targets in rank order; ResourceError if ``R_lite`` cannot be read."""
    try:
        by_rank = {}
        for entry in R["execution"]["R_lite"]:
            children = entry["children"]
            cores = tuple(IdSet.decode(children.get("core", "")))
            gpus = tuple(IdSet.decode(children.get("gpu", "")))
            for rank in IdSet.decode(entry["rank"]):
                by_rank[rank] = LayoutTarget(rank, cores, gpus)
    except (KeyError, TypeError, AttributeError, IdsetError) as exc:
        raise ResourceError(f"R: execution.R_lite cannot be read: {exc!r}") from None
    if not by_rank:
        raise ResourceError("R: execution.R_lite names no execution target")
    return [by_rank[rank] for rank in sorted(by_rank)]


Slot = tuple[int, int, tuple[int, ...], tuple[int, ...]]


def _slots(jobspec: JobspecView, nodes: Sequence[LayoutTarget]) -> list[Slot]:
    """(node, broker rank, cores, gpus) of each slot, in rank order."""
    per_core = max(jobspec.cores_per_slot, 1)
    per_gpu = jobspec.gpus_per_slot
    node_limit = jobspec.slots_per_node if jobspec.nnodes is not None else None
    slots = []
    for node, (rank, cores, gpus) in enumerate(nodes):
        count = max(len(cores) // per_core, 1)
        if node_limit is not None:
            count = min(count, node_limit)
        for k in range(count):
            slot_cores = cores[k * per_core : (k + 1) * per_core] or cores
            slot_gpus = gpus[k * per_gpu : (k + 1) * per_gpu] if per_gpu else gpus
            slots.append((node, rank, slot_cores, slot_gpus))
    return slots[: jobspec.nslots]


def layout(jobspec: JobspecView, nodes: Sequence[LayoutTarget]) -> Layout:
    """Place the jobspec's tasks on R's ``nodes`` (see the module docstring for the rules).

    Its ``per-resource`` and ``taskmap`` shell options were checked at ingest
    (``pflux.spec.shell_options``): they are only read here."""
    options = jobspec.shell_options
    if not options.keys() & _PLACEMENT_OPTIONS and jobspec.ntasks == 1:
        return _one_task(jobspec, nodes)  # most jobs: nothing to spread or map
    per_node = _per_resource(options.get("per-resource"), nodes)
    if per_node is None:
        per_node = _by_slots(jobspec, nodes)
    appends = _map(options.get("taskmap"), [len(places) for places in per_node])
    tasks: list[TaskPlace] = []
    taken = [0] * len(nodes)
    for node, count in appends:
        for _ in range(count):
            cores, gpus = per_node[node][taken[node]]
            tasks.append(TaskPlace(len(tasks), taken[node], node, nodes[node].rank, cores, gpus))
            taken[node] += 1
    return Layout(tuple(tasks), tuple(taken), _blocks(appends))


_PLACEMENT_OPTIONS = frozenset(("per-resource", "taskmap"))


def _one_task(jobspec: JobspecView, nodes: Sequence[LayoutTarget]) -> Layout:
    """``layout`` of a job of one task placed by its slots: the first slot's."""
    node, rank, cores, gpus = _slots(jobspec, nodes)[0]
    per_node = [0] * len(nodes)
    per_node[node] = 1
    return Layout((TaskPlace(0, 0, node, rank, cores, gpus),), tuple(per_node), ((node, 1, 1, 1),))


Place = tuple[tuple[int, ...], tuple[int, ...]]  # a task's cores and GPUs


def _by_slots(jobspec: JobspecView, nodes: Sequence[LayoutTarget]) -> list[list[Place]]:
    """Each node's tasks: the jobspec's spread over its slots in blocks."""
    slots = _slots(jobspec, nodes)
    base, extra = divmod(jobspec.ntasks, len(slots))
    per_node: list[list[Place]] = [[] for _ in nodes]
    for index, (node, _, cores, gpus) in enumerate(slots):
        per_node[node] += [(cores, gpus)] * (base + (index < extra))
    return per_node


def _per_resource(option: Any, nodes: Sequence[LayoutTarget]) -> list[list[Place]] | None:
    """Each node's tasks by the ``per-resource`` shell option (checked at ingest by
    ``pflux.spec.shell_options``); None without it."""
    if option is None:
        return None
    count = option.get("count", 1)
    if option["type"] == "node":
        return [[(target.cores, target.gpus)] * count for target in nodes]
    return [
        [((core,), target.gpus) for core in target.cores for _ in range(count)] for target in nodes
    ]


def _map(option: object, counts: list[int]) -> list[tuple[int, int]]:
    """The ``taskmap`` shell option's ranks (node, consecutive ranks) in rank order; the
    option was checked at ingest by the same ``taskmap_scheme``."""
    scheme, stride = taskmap_scheme(option)
    if scheme == "block":
        return [(node, count) for node, count in enumerate(counts) if count]
    left = list(counts)
    appends = []
    while any(left):
        for node, avail in enumerate(left):
            if avail:
                appends.append((node, min(stride, avail)))
                left[node] -= appends[-1][1]
    return appends


def _blocks(appends: list[tuple[int, int]]) -> tuple[tuple[int, int, int, int], ...]:
    """RFC 34 blocks of the ranks given to nodes in turn, appended as flux-core appends them."""
    taskmap = Taskmap()
    for node, ppn in appends:
        taskmap.append(node, 1, ppn)
    return tuple((a, b, c, d) for a, b, c, d in taskmap.blocks)


def cpu_set(cores: Sequence[int], cpus: Sequence[int]) -> set[int]:
    """The CPUs for R core ids: core i is the i-th of ``cpus`` (the instance's), modulo its size.

    An instance may be told it has more cores than the machine: ids then wrap
    around, so a task is still bound to a CPU it may use.
    """
    n = len(cpus)
    return {cpus[core % n] for core in cores}
