"""The resource section of a version 1 jobspec, laid out as flux-core lays it out.

``pflux.spec.builder`` and the flux package's ``JobspecV1`` both build it from
``from_command``'s counts (tasks, cores and GPUs per task, nodes) or
``per_resource``'s (cores, nodes, GPUs per node): one slot labelled ``task``,
under nodes when a node count is given.  Each face checks each count by its
own rules and words its own errors first; what is left here, the rules
between counts, raises ValueError with flux-core's reason.
"""

from __future__ import annotations

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing (several ms)
if TYPE_CHECKING:
    from typing import Any

SLOT_LABEL = "task"


def task_resources(
    num_tasks: int,
    cores_per_task: int,
    gpus_per_task: int | None,
    num_nodes: int | None,
    exclusive: bool,
) -> tuple[dict[str, Any], dict[str, int]]:
    """``from_command``'s resource vertex and task count.

    With a node count, ``ceil(tasks / nodes)`` slots per node and, when tasks do
    not divide evenly, a ``total`` task count (the last node's spare slots stay
    idle); ``exclusive`` on the node.
    """
    children = _slot_children(cores_per_task, gpus_per_task)
    if num_nodes is None:
        if exclusive:
            raise ValueError("exclusive can only be set with a node count")
        return _slot(num_tasks, children), {"per_slot": 1}
    if num_nodes > num_tasks:
        raise ValueError("node count must not be greater than task count")
    slot = _slot(-(-num_tasks // num_nodes), children)
    count = {"total": num_tasks} if num_tasks % num_nodes else {"per_slot": 1}
    return _node(num_nodes, slot, exclusive), count


def per_resource_option(kind: Any, count: Any) -> dict[str, Any] | None:
    """``per_resource``'s ``per-resource`` shell option, ``{type, count}``: the type
    (node or core) and the count go together, both or neither (None)."""
    if kind is not None and count is not None:
        if kind not in ("node", "core"):
            raise ValueError(f"Invalid per_resource_type='{kind}' specified")
        return {"type": kind, "count": count}
    if kind is not None:
        raise ValueError("must specify a per_resource_count with per_resource_type")
    if count is not None:
        raise ValueError("must specify a per_resource_type with per_resource_count")
    return None


def per_resource_resources(
    ncores: int | None, nnodes: int | None, gpus_per_node: int | None, exclusive: bool
) -> dict[str, Any]:
    """``per_resource``'s resource vertex: a slot of ``ncores / nnodes`` cores per
    node, or ``ncores`` slots of one core, or with whole nodes a slot of one core
    per node (the shell then runs the tasks the ``per-resource`` option asks for)."""
    if nnodes and ncores:
        if ncores < nnodes:
            raise ValueError("number of cores cannot be less than nnodes")
        if ncores % nnodes:
            raise ValueError("number of cores must be evenly divisible by node count")
        nslots, slot_size = 1, ncores // nnodes
    elif ncores:
        nslots, slot_size = ncores, 1
    elif nnodes:
        if not exclusive:
            raise ValueError("Specifying nnodes also requires ncores or exclusive")
        nslots, slot_size = 1, 1
    else:
        raise ValueError("must specify node or core count with per_resource")
    slot = _slot(nslots, _slot_children(slot_size, gpus_per_node))
    return _node(nnodes, slot, exclusive) if nnodes else slot


def _slot_children(cores: int, gpus: int | None) -> list[dict[str, Any]]:
    children: list[dict[str, Any]] = [{"type": "core", "count": cores}]
    if gpus:
        children.append({"type": "gpu", "count": gpus})
    return children


def _slot(count: int, children: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "slot", "count": count, "with": children, "label": SLOT_LABEL}


def _node(count: int, slot: dict[str, Any], exclusive: bool) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "node", "count": count}
    if exclusive:
        node["exclusive"] = True
    node["with"] = [slot]
    return node


#: the job shell options ``--unbuffered`` sets: output passed on at once, input too
UNBUFFERED = (
    ("output.stdout.buffer.type", "none"),
    ("output.stderr.buffer.type", "none"),
    ("output.batch-timeout", 0.05),
    ("input.batch-timeout", 0.0),
)
# stdio that stays in the KVS (flux-core's ``--output=kvs``): nothing to redirect
_NOT_A_FILE = ("none", "kvs")


def stdio_options(
    stdin: str | None, stdout: str | None, stderr: str | None, label: bool
) -> list[tuple[str, Any]]:
    """The job shell options, as (dotted key, value), redirecting stdio to files
    (``none`` and ``kvs`` keep a stream in the KVS); ``label`` labels each
    redirected output line with its task's rank."""
    options: list[tuple[str, Any]] = []
    if stdin is not None:
        options += [("input.stdin.type", "file"), ("input.stdin.path", stdin)]
    for stream, path in (("stdout", stdout), ("stderr", stderr)):
        if path is not None and path not in _NOT_A_FILE:
            options += [(f"output.{stream}.type", "file"), (f"output.{stream}.path", path)]
            if label:
                options.append((f"output.{stream}.label", True))
    return options
