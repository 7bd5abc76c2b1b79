"""Build an RFC 25 jobspec from a command and counts, exactly as flux-core does.

A Flux user who types the same options must get the same jobspec, so this
follows flux-core's ``JobspecV1.from_command`` and its setters
(``flux/job/Jobspec.py``) in shape, defaults, key order and messages; the
resource section is ``_pfluxcore.builder``'s, which the flux package's
``JobspecV1`` builds with too; ``duration`` is 0 (unlimited) unless given.

It is pure: the caller passes the environment, working directory and any file
contents, so the same call always gives the same jobspec.  Errors raise
JobspecError with flux-core's wording.
"""

from __future__ import annotations

import math

# the class collections.abc re-exports, without the collections package (a command
# that loads it pays for OrderedDict, Counter, ChainMap...)
from _collections_abc import Sequence

from _pfluxcore import builder as resources
from _pfluxcore import submitopts

from pflux.errors import JobspecError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, NoReturn

__all__ = ["attribute_path", "from_command", "per_resource", "set_attr", "set_shell_option"]

SLOT_LABEL = resources.SLOT_LABEL


def from_command(
    command: Sequence[str],
    *,
    num_tasks: int = 1,
    cores_per_task: int = 1,
    gpus_per_task: int | None = None,
    num_nodes: int | None = None,
    exclusive: bool = False,
    duration: float | None = None,
    environment: Mapping[str, str] | None = None,
    cwd: str | None = None,
    name: str | None = None,
    input: str | None = None,
    output: str | None = None,
    error: str | None = None,
    label_io: bool = False,
    unbuffered: bool = False,
    queue: str | None = None,
    bank: str | None = None,
) -> dict[str, Any]:
    """The version 1 jobspec running ``command`` as ``num_tasks`` tasks.

    ``duration`` is in seconds (None or 0: no limit); ``environment`` None
    leaves the job's environment out.  ``output`` and ``error`` of ``none`` or
    ``kvs`` keep the stream in the KVS; ``label_io`` labels redirected output
    with task ranks; ``unbuffered`` asks the shell to pass output on at once.
    """
    _check_command(command)
    top, count = _resources(num_tasks, cores_per_task, gpus_per_task, num_nodes, exclusive)
    system: dict[str, Any] = {"duration": 0 if duration is None else _duration(duration)}
    return _jobspec(
        command,
        top,
        count,
        system,
        environment=environment,
        cwd=cwd,
        name=name,
        input=input,
        output=output,
        error=error,
        label_io=label_io,
        unbuffered=unbuffered,
        queue=queue,
        bank=bank,
    )


def per_resource(
    command: Sequence[str],
    *,
    ncores: int | None = None,
    nnodes: int | None = None,
    per_resource_type: str | None = None,
    per_resource_count: int | None = None,
    gpus_per_node: int | None = None,
    exclusive: bool = False,
    duration: float | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """flux-core's ``JobspecV1.per_resource``: cores or nodes, and tasks per node or core.

    One task slot (a slot of ``ncores / nnodes`` cores per node, or ``ncores``
    slots of one core, or with whole nodes one slot of a core per node), one
    task per slot, and the ``per-resource`` shell option
    ``{type, count}`` telling the shell how many tasks to run in fact.
    ``extra``: ``from_command``'s stdio, environment and other arguments.
    """
    _check_command(command)
    option = _per_resource_option(per_resource_type, per_resource_count)
    _check_per_resource_counts(ncores, nnodes, gpus_per_node, exclusive)
    try:
        top = resources.per_resource_resources(ncores, nnodes, gpus_per_node, exclusive)
    except ValueError as exc:
        _fail(str(exc))
    system: dict[str, Any] = {"duration": 0 if duration is None else _duration(duration)}
    if option is not None:  # before the environment and the rest, as flux-core orders it
        system["shell"] = {"options": {"per-resource": option}}
    return _jobspec(command, top, {"per_slot": 1}, system, **extra)


def _per_resource_option(kind: str | None, count: int | None) -> dict[str, Any] | None:
    """The ``per-resource`` shell option, checked as flux-core checks it."""
    try:
        option = resources.per_resource_option(kind, count)
    except ValueError as exc:
        _fail(str(exc))
    if option is not None:
        _check_count("per_resource_count", option["count"], 1)
    return option


def _check_per_resource_counts(
    ncores: int | None, nnodes: int | None, gpus_per_node: int | None, exclusive: bool
) -> None:
    """Each count of a per-resource request, with flux-core's rules."""
    if ncores is not None:
        _check_count("ncores", ncores, 1)
    if gpus_per_node is not None:
        _check_count("gpus_per_node", gpus_per_node, 0)
        if not nnodes:
            _fail("gpus_per_node must be specified with nnodes")
    if nnodes is not None:
        _check_count("nnodes", nnodes, 1)
    elif exclusive:
        _fail("exclusive can only be set with a node count")


def _jobspec(
    command: Sequence[str],
    top: dict[str, Any],
    count: dict[str, int],
    system: dict[str, Any],
    *,
    environment: Mapping[str, str] | None = None,
    cwd: str | None = None,
    name: str | None = None,
    input: str | None = None,
    output: str | None = None,
    error: str | None = None,
    label_io: bool = False,
    unbuffered: bool = False,
    queue: str | None = None,
    bank: str | None = None,
) -> dict[str, Any]:
    """The jobspec of one task group, with the system attributes ``from_command`` sets."""
    jobspec: dict[str, Any] = {
        "resources": [top],
        "tasks": [{"command": list(command), "slot": SLOT_LABEL, "count": count}],
        "attributes": {"system": system},
        "version": 1,
    }
    if environment is not None:
        system["environment"] = dict(environment)
    if cwd is not None:
        system["cwd"] = cwd
    if name is not None:
        set_attr(jobspec, "system.job.name", name)
    for key, value in resources.stdio_options(input, output, error, label_io):
        set_shell_option(jobspec, key, value)
    if unbuffered:
        for key, value in resources.UNBUFFERED:
            set_shell_option(jobspec, key, value)
    if queue is not None:
        system["queue"] = queue
    if bank is not None:
        system["bank"] = bank
    return jobspec


def _resources(
    num_tasks: int,
    cores_per_task: int,
    gpus_per_task: int | None,
    num_nodes: int | None,
    exclusive: bool,
) -> tuple[dict[str, Any], dict[str, int]]:
    """The resource vertex and the task count, each count checked first."""
    _check_count("task count", num_tasks, 1)
    _check_count("cores per task", cores_per_task, 1)
    if gpus_per_task is not None:
        _check_count("gpus per task", gpus_per_task, 0)
    if num_nodes is not None:
        _check_count("node count", num_nodes, 1, "(if set)")
    try:
        return resources.task_resources(
            num_tasks, cores_per_task, gpus_per_task, num_nodes, exclusive
        )
    except ValueError as exc:
        _fail(str(exc))


def _check_command(command: Sequence[str]) -> None:
    if isinstance(command, str) or not isinstance(command, Sequence):
        _fail("command must be a list of strings")
    if not command:
        _fail("command must not be empty")
    if not all(isinstance(arg, str) for arg in command):
        _fail("command must be a list of strings")


def _check_count(what: str, value: int, minimum: int, note: str = "") -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        _fail(f"{what} must be an integer >= {minimum}" + (f" {note}" if note else ""))


def _duration(seconds: float) -> float:
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        _fail("duration must be a number of seconds")
    if math.isnan(seconds) or math.isinf(seconds):
        _fail("duration must be a normal, finite value")
    if seconds < 0:
        _fail("duration must not be negative")
    return float(seconds)


def _fail(message: str) -> NoReturn:
    raise JobspecError([("", message)])


def attribute_path(key: str) -> list[str]:
    """Where ``--setattr`` puts ``key``, as a path from the jobspec root, by flux-core's
    rule (``_pfluxcore.submitopts.attribute_key``); a path with an empty part is refused."""
    key = submitopts.attribute_key(key)
    path = key.split(".")
    if "" in path:
        _fail(f'attribute key "{key}" has an empty component')
    return path


def set_attr(jobspec: dict[str, Any], key: str, value: Any) -> None:
    """Set attribute ``key`` (dotted, placed by ``attribute_path``) to ``value``."""
    _set_path(jobspec, attribute_path(key), value)


def set_shell_option(jobspec: dict[str, Any], key: str, value: Any) -> None:
    """Set job shell option ``key`` (dotted) to ``value``, under ``system.shell.options``."""
    path = key.split(".")
    if "" in path:
        _fail(f'shell option "{key}" has an empty component')
    _set_path(jobspec, ["attributes", "system", "shell", "options", *path], value)


def _set_path(jobspec: dict[str, Any], path: list[str], value: Any) -> None:
    """``jobspec[a][b]...[z] = value``, making mappings on the way as flux-core does."""
    node: Any = jobspec
    for depth, part in enumerate(path[:-1]):
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            where = ".".join(path[: depth + 1])
            _fail(f"cannot set {'.'.join(path)}: {where} is already set and is not a mapping")
    node[path[-1]] = value
