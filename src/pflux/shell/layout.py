"""Which task runs where: tasks over the slots of R, and each slot's cores and GPUs.

Pure: job-exec calls it (``pflux.shell.plan``), for each job's shell, with
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
from pflux.spec.jobspec import Jobspec

__all__ = ["Layout", "Target", "TaskPlace", "cpu_set", "layout", "targets"]


class Target(NamedTuple):
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
    """Every task's place, and how many tasks each node of R runs."""

    tasks: tuple[TaskPlace, ...]
    per_node: tuple[int, ...]

    @property
    def nnodes(self) -> int:
        return len(self.per_node)

    def taskmap(self) -> dict[str, Any]:
        """The RFC 34 task map: ``[first node, nodes, tasks per node, repeat]`` blocks."""
        blocks: list[list[int]] = []
        for node, count in enumerate(self.per_node):
            if not count:
                continue
            last = blocks[-1] if blocks else None
            if last is not None and last[2] == count and last[0] + last[1] == node:
                last[1] += 1
            else:
                blocks.append([node, 1, count, 1])
        return {"version": 1, "map": blocks}


def targets(R: Mapping[str, Any]) -> list[Target]:  # noqa: N803 (R is the RFC's name)
    """R's execution targets in rank order; ResourceError if ``R_lite`` cannot be read."""
    try:
        by_rank = {}
        for entry in R["execution"]["R_lite"]:
            children = entry["children"]
            cores = tuple(IdSet.decode(children.get("core", "")))
            gpus = tuple(IdSet.decode(children.get("gpu", "")))
            for rank in IdSet.decode(entry["rank"]):
                by_rank[rank] = Target(rank, cores, gpus)
    except (KeyError, TypeError, AttributeError, IdsetError) as exc:
        raise ResourceError(f"R: execution.R_lite cannot be read: {exc!r}") from None
    if not by_rank:
        raise ResourceError("R: execution.R_lite names no execution target")
    return [by_rank[rank] for rank in sorted(by_rank)]


Slot = tuple[int, int, tuple[int, ...], tuple[int, ...]]


def _slots(jobspec: Jobspec, nodes: Sequence[Target]) -> list[Slot]:
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


def layout(jobspec: Jobspec, nodes: Sequence[Target]) -> Layout:
    """Place the jobspec's tasks on R's ``nodes`` (see the module docstring for the rules)."""
    slots = _slots(jobspec, nodes)
    ntasks = jobspec.ntasks
    base, extra = divmod(ntasks, len(slots))
    per_node = [0] * len(nodes)
    tasks = []
    rank = 0
    for index, (node, broker_rank, cores, gpus) in enumerate(slots):
        for _ in range(base + (index < extra)):
            tasks.append(TaskPlace(rank, per_node[node], node, broker_rank, cores, gpus))
            per_node[node] += 1
            rank += 1
    return Layout(tuple(tasks), tuple(per_node))


def cpu_set(cores: Sequence[int], cpus: Sequence[int]) -> set[int]:
    """The CPUs for R core ids: core i is the i-th of ``cpus`` (the instance's), modulo its size.

    An instance may be told it has more cores than the machine: ids then wrap
    around, so a task is still bound to a CPU it may use.
    """
    n = len(cpus)
    return {cpus[core % n] for core in cores}
