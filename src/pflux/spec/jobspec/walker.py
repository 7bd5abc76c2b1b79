"""RFC 25 jobspec version 1: the walker, the judge of what is valid.

One hand-written pass over the document checks RFC 25's JSON Schema and every
rule of its prose, and collects *all* problems as ``(path, message)`` pairs.
The RFC's own schema (``jobspec_v1.schema.json``) is kept as a test oracle:
whatever this module accepts, it accepts too.

Where the RFC, its schema and flux-core differ, pflux decides as follows (the
tests pin each one):
- extra top-level keys are rejected, as flux-core's ``jobspec1.c`` (strict
  unpack) and ``Jobspec.py`` (``Extraneous key``) do; the schema is silent;
- ``exclusive`` (boolean) is accepted on node and slot vertices: the prose
  says a node MAY carry it and flux-core's ``--exclusive`` writes it there,
  although the schema's ``node_vertex`` omits it;
- a gpu count of 0 is accepted (flux-core's ``valid/gpu_count_zero.yaml``);
- a slot's ``with`` holds one core and at most one gpu, in either order: RFC 25
  describes edges of a graph, which have no order, and flux-core accepts both;
- ``command`` must be a list: the schema's type admits a string, but RFC 14
  and flux-core's corpus (``task_command_not_array.yaml``) reject it;
- integers are Python ints, never bools or integral floats (``1.0``), as
  jansson's ``i`` format in flux-core demands; they must fit in 64 bits;
- ``environment`` maps names to strings (flux-core's shell sets each value as a
  string); ``shell.options`` and ``job`` are mappings and ``job.name`` a string
  (flux-core's ``jobspec1.c`` and job-list); ``constraints`` must be a mapping
  (RFC 31's inner grammar is the scheduler's business);
- every value must be JSON data (string keys, finite numbers, no lone
  surrogates, bounded nesting), so that any valid jobspec can be encoded.
"""

from __future__ import annotations

import math

from pflux.errors import JobspecError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any, Final

INT64_MAX: Final = 2**63 - 1
_DATA_INT_MIN: Final = -(2**63)  # the range orjson (and so dumps) can encode
_DATA_INT_MAX: Final = 2**64 - 1
_MAX_DEPTH: Final = 64  # nesting allowed inside a free-form value (orjson encodes 254)
_MAX_NODES: Final = 100_000  # values visited in free-form data (YAML alias bombs)

_TOP_KEYS: Final = frozenset({"version", "resources", "tasks", "attributes"})
_TOP_REQUIRED: Final = ("version", "resources", "tasks", "attributes")
# exclusive is not in the schema's node_vertex; RFC 25's prose allows it (see above)
_NODE_KEYS: Final = frozenset({"type", "count", "unit", "with", "exclusive"})
_SLOT_KEYS: Final = frozenset({"type", "count", "unit", "label", "exclusive", "with"})
_LEAF_KEYS: Final = frozenset({"type", "count", "unit"})
_TASK_KEYS: Final = frozenset({"command", "slot", "count"})
_TASK_COUNT_KEYS: Final = frozenset({"per_slot", "total"})
_ATTRIBUTES_KEYS: Final = frozenset({"system", "user"})


class Problems(list[tuple[str, str]]):
    """The problems found so far, and how many free-form values may still be visited."""

    __slots__ = ("nodes_left",)

    def __init__(self) -> None:
        super().__init__()
        self.nodes_left = _MAX_NODES


# ---------------------------------------------------------------- descriptions


def _describe(value: object) -> str:
    """Say what was found, briefly: scalars as JSON, containers by kind."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        import json  # only on the error path

        text = value if len(value) <= 40 else value[:37] + "..."
        return json.dumps(text, ensure_ascii=not is_unicode(text))
    if isinstance(value, float) or (isinstance(value, int) and abs(value) < 10**30):
        return repr(value)
    if isinstance(value, int):
        return "a very large integer"
    if isinstance(value, list):
        return f"a list of {len(value)}" if value else "an empty list"
    if isinstance(value, dict):
        return "a mapping" if value else "an empty mapping"
    name = type(value).__name__
    return f"an {name}" if name[0] in "aeiou" else f"a {name}"


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _join(path: str, key: object) -> str:
    name = key if is_text(key) else _describe(key)
    return f"{path}.{name}" if path else f"{name}"


def is_unicode(text: str) -> bool:
    """True unless ``text`` holds lone surrogates, which UTF-8 (and JSON) cannot carry."""
    if text.isascii():
        return True
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def is_text(value: object) -> bool:
    return isinstance(value, str) and (value.isascii() or is_unicode(value))


def texts(values: Iterable[object]) -> bool:
    """Whether every item is a string of valid Unicode text: one join, no Python loop."""
    try:
        joined = "".join(values)  # type: ignore[arg-type]
    except TypeError:  # an item that is not a string
        return False
    return joined.isascii() or is_unicode(joined)


# ------------------------------------------------------------------ primitives


def _check_keys(
    obj: dict[Any, Any],
    path: str,
    allowed: frozenset[str],
    required: tuple[str, ...],
    problems: Problems,
) -> None:
    if not obj.keys() <= allowed:
        names = ", ".join(sorted(allowed))
        for key in obj:
            if key not in allowed:
                problems.append((_join(path, key), f"unknown key (allowed: {names})"))
    for key in required:
        if key not in obj:
            problems.append((_join(path, key), "required key is missing"))


def _check_int(value: object, path: str, minimum: int, problems: Problems) -> None:
    if type(value) is int and minimum <= value <= INT64_MAX:
        return
    if isinstance(value, int) and not isinstance(value, bool) and value > INT64_MAX:
        problems.append((path, f"must be an integer >= {minimum} that fits in 64 bits"))
    else:
        problems.append((path, f"must be an integer >= {minimum}, got {_describe(value)}"))


def _check_text(value: object, path: str, problems: Problems) -> None:
    if not is_text(value):
        problems.append((path, f"must be a string, got {_describe(value)}"))


def _check_bool(value: object, path: str, problems: Problems) -> None:
    if not isinstance(value, bool):
        problems.append((path, f"must be a boolean, got {_describe(value)}"))


def check_data(value: object, path: str, problems: Problems) -> None:
    """Check that a free-form value is JSON data that ``dumps`` can encode."""
    left = _plain_data(value, problems.nodes_left, 0)
    if left >= 0:
        problems.nodes_left = left
        return
    stack: list[tuple[object, str, int]] = [(value, path, 0)]
    while stack:
        item, where, depth = stack.pop()
        problems.nodes_left -= 1
        if problems.nodes_left < 0:
            problems.append((where, f"too large: more than {_MAX_NODES} values"))
            return
        if not isinstance(item, list | dict):
            _check_scalar(item, where, problems)
        elif depth >= _MAX_DEPTH:
            problems.append((where, f"nested too deeply (more than {_MAX_DEPTH} levels)"))
        elif isinstance(item, list):
            stack.extend((v, f"{where}[{i}]", depth + 1) for i, v in enumerate(item))
        else:
            for key, v in item.items():
                if is_text(key):
                    stack.append((v, f"{where}.{key}", depth + 1))
                else:
                    problems.append((where, f"keys must be strings, got {_describe(key)}"))


def _plain_data(value: Any, left: int, depth: int) -> int:
    """``left`` less the values in ``value`` if it is plain JSON data, else -1.

    ``check_data``'s pathless twin for the common case: exact built-in types,
    counted and nested as ``check_data`` counts and nests them, so whatever it
    passes ``check_data`` passes too, leaving the same budget; anything else
    (a subclass, a problem, too many values) returns -1 for the full walk.
    """
    kind = type(value)
    if kind is list:
        items: Iterable[Any] = value
    elif kind is dict:
        if not texts(value):
            return -1
        items = value.values()
    else:  # a scalar: check it as the only item of a list that is not counted
        return _plain_data([value], left + 1, depth - 1)
    if depth >= _MAX_DEPTH:
        return -1
    left -= 1
    for item in items:
        kind = type(item)
        if kind is dict or kind is list:
            left = _plain_data(item, left, depth + 1)
        elif kind is str:
            left = left - 1 if item.isascii() or is_unicode(item) else -1
        elif kind is int:
            left = left - 1 if _DATA_INT_MIN <= item <= _DATA_INT_MAX else -1
        elif kind is float:
            left = left - 1 if -math.inf < item < math.inf else -1
        else:
            left = left - 1 if kind is bool or item is None else -1
        if left < 0:
            return -1
    return left


def _check_scalar(item: object, where: str, problems: Problems) -> None:
    if isinstance(item, str):
        if not is_unicode(item):
            problems.append((where, "must be valid Unicode text, got lone surrogates"))
    elif isinstance(item, bool) or item is None:
        pass
    elif isinstance(item, int):
        if not _DATA_INT_MIN <= item <= _DATA_INT_MAX:
            problems.append((where, "must be an integer that fits in 64 bits"))
    elif isinstance(item, float):
        if not math.isfinite(item):
            problems.append((where, f"must be a finite number, got {item!r}"))
    else:
        problems.append((where, f"must be JSON data, got {_describe(item)}"))


def _check_mapping(value: object, path: str, problems: Problems) -> bool:
    if isinstance(value, dict):
        return True
    problems.append((path, f"must be a mapping, got {_describe(value)}"))
    return False


# ------------------------------------------------------------------- resources


def _check_type(vertex: dict[Any, Any], path: str, expected: str, problems: Problems) -> None:
    """Report a vertex whose ``type`` is missing or not ``expected``.

    Its other keys cannot be judged without a type, but a count, unit or
    exclusive flag that is wrong for every type is reported too.
    """
    if "type" not in vertex:
        problems.append((f"{path}.type", "required key is missing"))
    else:
        got = _describe(vertex["type"])
        problems.append((f"{path}.type", f"must be {expected}, got {got}"))
    _check_vertex_values(vertex, path, 0, problems)


def _check_vertex_common(
    vertex: dict[Any, Any],
    path: str,
    allowed: frozenset[str],
    required: tuple[str, ...],
    problems: Problems,
    *,
    minimum: int,
) -> None:
    _check_keys(vertex, path, allowed, required, problems)
    _check_vertex_values(vertex, path, minimum, problems)


def _check_vertex_values(
    vertex: dict[Any, Any], path: str, minimum: int, problems: Problems
) -> None:
    if "count" in vertex:
        _check_int(vertex["count"], f"{path}.count", minimum, problems)
    if "unit" in vertex:
        _check_text(vertex["unit"], f"{path}.unit", problems)
    if "exclusive" in vertex:
        _check_bool(vertex["exclusive"], f"{path}.exclusive", problems)


def _check_resources(resources: object, problems: Problems) -> str | None:
    """Check the resource graph; return the slot's label for the task check."""
    if not isinstance(resources, list):
        problems.append(
            ("resources", f"must be a list holding one node or slot, got {_describe(resources)}")
        )
        return None
    if len(resources) != 1:
        got = _plural(len(resources), "vertex", "vertices")
        problems.append(
            ("resources", f"must hold exactly one vertex (a node or a slot), got {got}")
        )
    label = None
    for i, vertex in enumerate(resources):
        path = f"resources[{i}]"
        if not isinstance(vertex, dict):
            problems.append((path, f"must be a resource vertex mapping, got {_describe(vertex)}"))
            continue
        kind = vertex.get("type")
        if isinstance(kind, str) and kind == "node":
            found = _check_node(vertex, path, problems)
        elif isinstance(kind, str) and kind == "slot":
            found = _check_slot(vertex, path, problems)
        else:
            _check_type(vertex, path, '"node" or "slot"', problems)
            continue
        label = found if label is None else label
    return label


def _check_node(node: dict[Any, Any], path: str, problems: Problems) -> str | None:
    _check_vertex_common(node, path, _NODE_KEYS, ("count", "with"), problems, minimum=1)
    if "with" not in node:
        return None
    children = node["with"]
    wpath = f"{path}.with"
    if not isinstance(children, list):
        problems.append((wpath, f"must be a list holding one slot, got {_describe(children)}"))
        return None
    if len(children) != 1:
        got = _plural(len(children), "vertex", "vertices")
        problems.append((wpath, f"must hold exactly one slot, got {got}"))
    label = None
    for i, child in enumerate(children):
        cpath = f"{wpath}[{i}]"
        if not isinstance(child, dict):
            problems.append((cpath, f"must be a slot vertex mapping, got {_describe(child)}"))
        elif isinstance(child.get("type"), str) and child["type"] == "slot":
            found = _check_slot(child, cpath, problems)
            label = found if label is None else label
        else:
            _check_type(child, cpath, '"slot"', problems)
    return label


def _check_slot(slot: dict[Any, Any], path: str, problems: Problems) -> str | None:
    _check_vertex_common(slot, path, _SLOT_KEYS, ("count", "label", "with"), problems, minimum=1)
    label = slot.get("label")
    if "label" in slot and not is_text(label):
        problems.append((f"{path}.label", f"must be a string, got {_describe(label)}"))
        label = None
    if "with" in slot:
        _check_slot_children(slot["with"], f"{path}.with", problems)
    return label if isinstance(label, str) else None


def _check_slot_children(children: object, path: str, problems: Problems) -> None:
    """A slot holds one core and, optionally, one gpu (in either order)."""
    rule = "one core and optionally one gpu"
    if not isinstance(children, list):
        problems.append((path, f"must be a list holding {rule}, got {_describe(children)}"))
        return
    if not 1 <= len(children) <= 2:
        got = _plural(len(children), "vertex", "vertices")
        problems.append((path, f"must hold {rule}, got {got}"))
    counts = {"core": 0, "gpu": 0}
    for i, child in enumerate(children):
        cpath = f"{path}[{i}]"
        if not isinstance(child, dict):
            problems.append(
                (cpath, f"must be a core or gpu vertex mapping, got {_describe(child)}")
            )
            continue
        kind = child.get("type")
        if isinstance(kind, str) and kind in counts:
            counts[kind] += 1
            # flux-core accepts a gpu count of 0 (valid/gpu_count_zero.yaml)
            minimum = 1 if kind == "core" else 0
            _check_vertex_common(child, cpath, _LEAF_KEYS, ("count",), problems, minimum=minimum)
        else:
            _check_type(child, cpath, '"core" or "gpu"', problems)
    cores, gpus = counts["core"], counts["gpu"]
    if 1 <= len(children) <= 2 and cores + gpus == len(children) and (cores != 1 or gpus > 1):
        got = f"{_plural(cores, 'core', 'cores')} and {_plural(gpus, 'gpu', 'gpus')}"
        problems.append((path, f"must hold {rule}, got {got}"))


# ----------------------------------------------------------------------- tasks


def _check_tasks(tasks: object, label: str | None, problems: Problems) -> None:
    if not isinstance(tasks, list):
        problems.append(("tasks", f"must be a list holding one task, got {_describe(tasks)}"))
        return
    if len(tasks) != 1:
        problems.append(
            ("tasks", f"must hold exactly one task, got {_plural(len(tasks), 'task', 'tasks')}")
        )
    for i, task in enumerate(tasks):
        _check_task(task, f"tasks[{i}]", label, problems)


def _check_task(task: object, path: str, label: str | None, problems: Problems) -> None:
    if not isinstance(task, dict):
        problems.append((path, f"must be a task mapping, got {_describe(task)}"))
        return
    _check_keys(task, path, _TASK_KEYS, ("command", "slot", "count"), problems)
    if "command" in task:
        _check_command(task["command"], f"{path}.command", problems)
    if "slot" in task:
        slot = task["slot"]
        if not is_text(slot):
            problems.append((f"{path}.slot", f"must be a string, got {_describe(slot)}"))
        elif label is not None and slot != label:
            problems.append(
                (
                    f"{path}.slot",
                    f"must name the slot's label {_describe(label)}, got {_describe(slot)}",
                )
            )
    if "count" in task:
        _check_task_count(task["count"], f"{path}.count", problems)


def _check_command(command: object, path: str, problems: Problems) -> None:
    # RFC 25's schema also admits a string; RFC 14 and flux-core's corpus do not
    if not isinstance(command, list) or not command:
        problems.append((path, f"must be a non-empty list of strings, got {_describe(command)}"))
        return
    for i, arg in enumerate(command):
        if not is_text(arg):
            problems.append((f"{path}[{i}]", f"must be a string, got {_describe(arg)}"))


def _check_task_count(count: object, path: str, problems: Problems) -> None:
    rule = "exactly one of per_slot or total"
    if not isinstance(count, dict):
        problems.append((path, f"must be a mapping holding {rule}, got {_describe(count)}"))
        return
    _check_keys(count, path, _TASK_COUNT_KEYS, (), problems)
    present = [key for key in ("per_slot", "total") if key in count]
    if len(present) != 1:
        problems.append((path, f"must hold {rule}, got {'both' if present else 'neither'}"))
    for key in present:
        _check_int(count[key], f"{path}.{key}", 1, problems)


# ------------------------------------------------------------------ attributes


def check_attributes(attributes: object, problems: Problems) -> None:
    path = "attributes"
    if not isinstance(attributes, dict):
        got = _describe(attributes)
        problems.append(
            (path, f"must be a mapping holding system (and optionally user), got {got}")
        )
        return
    _check_keys(attributes, path, _ATTRIBUTES_KEYS, ("system",), problems)
    if "user" in attributes and _check_mapping(attributes["user"], "attributes.user", problems):
        check_data(attributes["user"], "attributes.user", problems)
    if "system" in attributes:
        _check_system(attributes["system"], problems)


def _check_system(system: object, problems: Problems) -> None:
    path = "attributes.system"
    if not _check_mapping(system, path, problems):
        return
    assert isinstance(system, dict)
    if "duration" not in system:
        problems.append(("attributes.system.duration", "required key is missing"))
    for key, value in system.items():
        check = SYSTEM_CHECKS.get(key)
        if check is None:
            if not is_text(key):
                problems.append((path, f"keys must be strings, got {_describe(key)}"))
                continue
            check = check_data
        check(value, f"{path}.{key}", problems)


def _check_duration(value: object, path: str, problems: Problems) -> None:
    kind = type(value)
    if kind is float:
        assert isinstance(value, float)
        if value >= 0.0 and value != math.inf:  # NaN fails the first test
            return
    elif kind is int:
        assert isinstance(value, int)
        if 0 <= value <= INT64_MAX:
            return
    problems.append((path, f"must be a finite number >= 0, got {_describe(value)}"))


def _check_environment(value: object, path: str, problems: Problems) -> None:
    if not _check_mapping(value, path, problems):
        return
    assert isinstance(value, dict)
    if texts(value) and texts(value.values()):
        return
    for name, setting in value.items():
        if not is_text(name):
            problems.append((path, f"names must be strings, got {_describe(name)}"))
        elif not is_text(setting):
            problems.append((f"{path}.{name}", f"must be a string, got {_describe(setting)}"))


def _check_free_mapping(value: object, path: str, problems: Problems) -> None:
    if _check_mapping(value, path, problems):
        check_data(value, path, problems)


def _check_dependencies(value: object, path: str, problems: Problems) -> None:
    """RFC 26: a list of objects with string ``scheme`` and ``value``, extra keys allowed."""
    if not isinstance(value, list):
        problems.append((path, f"must be a list of dependency mappings, got {_describe(value)}"))
        return
    for i, dependency in enumerate(value):
        dpath = f"{path}[{i}]"
        if not _check_mapping(dependency, dpath, problems):
            continue
        assert isinstance(dependency, dict)
        for key in ("scheme", "value"):
            if key not in dependency:
                problems.append((f"{dpath}.{key}", "required key is missing"))
            else:
                _check_text(dependency[key], f"{dpath}.{key}", problems)
        check_data(dependency, dpath, problems)


def _check_shell(value: object, path: str, problems: Problems) -> None:
    if not _check_mapping(value, path, problems):
        return
    assert isinstance(value, dict)
    if "options" in value and _check_mapping(value["options"], f"{path}.options", problems):
        from pflux.spec.shell_options import check

        for name, why in check(value["options"]):
            problems.append((f"{path}.options.{name}", why))
    check_data(value, path, problems)


def _check_job(value: object, path: str, problems: Problems) -> None:
    if not _check_mapping(value, path, problems):
        return
    assert isinstance(value, dict)
    if "name" in value:
        _check_text(value["name"], f"{path}.name", problems)
    check_data(value, path, problems)


SYSTEM_CHECKS: Final = {
    "duration": _check_duration,
    "cwd": _check_text,
    "queue": _check_text,
    "environment": _check_environment,
    "constraints": _check_free_mapping,
    "dependencies": _check_dependencies,
    "shell": _check_shell,
    "job": _check_job,
}


# ---------------------------------------------------------------------- the whole


def collect(obj: Any) -> Problems:
    """Every ``(path, message)`` problem of ``obj`` as a version 1 jobspec; empty if valid."""
    found = Problems()
    if not isinstance(obj, dict):
        found.append(("", f"jobspec must be a mapping, got {_describe(obj)}"))
        return found
    _check_keys(obj, "", _TOP_KEYS, _TOP_REQUIRED, found)
    if "version" in obj:
        version = obj["version"]
        if not (type(version) is int and version == 1):
            found.append(("version", f"must be 1, got {_describe(version)}"))
    label = _check_resources(obj["resources"], found) if "resources" in obj else None
    if "tasks" in obj:
        _check_tasks(obj["tasks"], label, found)
    if "attributes" in obj:
        check_attributes(obj["attributes"], found)
    return found


def raise_problems(obj: Any) -> None:
    """Raise JobspecError with every problem of ``obj``, if it has any."""
    found = collect(obj)
    if found:
        raise JobspecError(found)
