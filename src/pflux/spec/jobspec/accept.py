"""RFC 25 jobspec version 1: ``validate``, a fast accept of the common shapes first.

``validate`` first asks ``accepts``: a check without paths of the common
shapes (node>slot or a lone slot, holding a core and perhaps a gpu, without
``unit``; one task; duration, cwd, environment and shell options of resource
limits alone; any other system key, and ``attributes.user``, get the walker's
own checks) on exact built-in types.
It answers True only for a document that the walker accepts (the property
tests hold it to that); False sends the document to the walker, which
accepts the rarer shapes and reports every problem with its path.  It is
flat on purpose: each call or generator here costs as much as a rule.
"""

from __future__ import annotations

import math

from pflux.spec.jobspec.walker import (
    INT64_MAX,
    SYSTEM_CHECKS,
    Problems,
    check_attributes,
    check_data,
    is_text,
    is_unicode,
    raise_problems,
    texts,
)
from pflux.spec.shell_options import RLIMIT_NAMES

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Final


def accepts(obj: Any) -> bool:
    """True only if ``obj`` is a valid jobspec of a common shape (see above)."""
    if type(obj) is not dict or len(obj) != 4:
        return False
    try:  # a missing key, a wrong type, any surprise: ask the walker
        version, resources, tasks = obj["version"], obj["resources"], obj["tasks"]
        if type(version) is not int or version != 1 or type(tasks) is not list:
            return False
        if type(resources) is not list or len(resources) != 1 or len(tasks) != 1:
            return False
        label, task = _plain_slot_label(resources[0]), tasks[0]
        if label is None or type(task) is not dict or len(task) != 3:
            return False
        command, slot, count = task["command"], task["slot"], task["count"]
        if type(slot) is not str or slot != label or type(count) is not dict or len(count) != 1:
            return False
        total = count["per_slot"] if "per_slot" in count else count["total"]
        if type(total) is not int or not 1 <= total <= INT64_MAX:
            return False
        if type(command) is not list or not command or not texts(command):
            return False
        return _plain_attributes(obj["attributes"])
    except Exception:  # the walker then judges, and explains
        return False


def _plain_slot_label(vertex: Any) -> str | None:
    """The slot's label if ``vertex`` is a plain node>slot or slot graph, else None."""
    if type(vertex) is not dict:
        return None
    if _is_kind(vertex, "node"):
        count, slots = vertex["count"], vertex["with"]
        if len(vertex) != 3 and not _plain_exclusive(vertex, 4):
            return None
        if type(count) is not int or not 1 <= count <= INT64_MAX:
            return None
        if type(slots) is not list or len(slots) != 1 or type(slots[0]) is not dict:
            return None
        vertex = slots[0]
    count, label, children = vertex["count"], vertex["label"], vertex["with"]
    if len(vertex) != 4 and not _plain_exclusive(vertex, 5):
        return None
    if not _is_kind(vertex, "slot") or type(count) is not int or not 1 <= count <= INT64_MAX:
        return None
    if type(label) is not str or not (label.isascii() or is_unicode(label)):
        return None
    return label if _plain_slot_children(children) else None


def _plain_slot_children(children: Any) -> bool:
    """Whether ``children`` is one core, or a core and a gpu in either order, without units."""
    if type(children) is not list or not 1 <= len(children) <= 2:
        return False
    core, gpu = children if len(children) == 2 else (children[0], None)
    if type(core) is dict and _is_kind(core, "gpu"):
        core, gpu = gpu, core
    if type(core) is not dict or len(core) != 2 or not _is_kind(core, "core"):
        return False
    count = core["count"]
    if type(count) is not int or not 1 <= count <= INT64_MAX:
        return False
    if len(children) == 1:
        return True
    if type(gpu) is not dict or len(gpu) != 2 or not _is_kind(gpu, "gpu"):
        return False
    count = gpu["count"]  # may be 0 (see the walker's docstring)
    return type(count) is int and 0 <= count <= INT64_MAX


def _is_kind(vertex: dict[str, Any], kind: str) -> bool:
    """Whether the vertex's type is the string ``kind`` (no other object's ``==`` is trusted)."""
    found = vertex["type"]
    return type(found) is str and found == kind


def _plain_exclusive(vertex: dict[str, Any], size: int) -> bool:
    """Whether ``vertex`` has ``size`` keys, one of them a boolean ``exclusive``."""
    return len(vertex) == size and type(vertex.get("exclusive")) is bool


_PLAIN_SYSTEM_KEYS: Final = frozenset({"duration", "cwd", "environment"})


def _plain_attributes(attributes: Any) -> bool:
    """Whether ``attributes`` is valid: the usual system keys checked here, others by the walker.

    Any other system key gets the walker's own check for it, as ``_check_system``
    would run it; ``attributes.user`` sends the whole of ``attributes`` there.
    """
    if type(attributes) is not dict or len(attributes) != 1:
        return _walker_accepts(check_attributes, attributes)
    system = attributes["system"]
    if type(system) is not dict:
        return False
    duration, cwd, environment = (
        system["duration"],
        system.get("cwd", ""),
        system.get("environment", {}),
    )
    kind = type(duration)
    if not (
        (kind is float and 0.0 <= duration < math.inf)
        or (kind is int and 0 <= duration <= INT64_MAX)
    ):
        return False
    if type(cwd) is not str or not (cwd.isascii() or is_unicode(cwd)):
        return False
    if type(environment) is not dict or not (texts(environment) and texts(environment.values())):
        return False
    if system.keys() <= _PLAIN_SYSTEM_KEYS:
        return True
    problems = Problems()
    for key, value in system.items():
        if key not in _PLAIN_SYSTEM_KEYS:
            if key == "shell" and _plain_shell(value, problems):
                continue
            check = SYSTEM_CHECKS.get(key)
            if check is None and not is_text(key):
                return False
            (check or check_data)(value, key, problems)
    return not problems


def _plain_shell(shell: Any, problems: Problems) -> bool:
    """Whether ``shell`` is ``{"options": {"rlimit": {NAME: LIMIT, ...}}}`` and valid: the
    shell options ``pflux submit`` writes by default (the submitter's resource limits),
    known limit names with integers from -1 to INT64_MAX. Its values count against
    ``problems``' budget as the walker's ``check_data`` counts them; anything else is
    left to the walker (False)."""
    if type(shell) is not dict or len(shell) != 1:
        return False
    options = shell.get("options")
    if type(options) is not dict or len(options) != 1:
        return False
    limits = options.get("rlimit")
    if type(limits) is not dict or not limits.keys() <= RLIMIT_NAMES:
        return False
    for limit in limits.values():
        if type(limit) is not int or not -1 <= limit <= INT64_MAX:
            return False
    left = problems.nodes_left - 3 - len(limits)  # shell, options, rlimit and each limit
    if left < 0:
        return False
    problems.nodes_left = left
    return True


def _walker_accepts(check: Callable[[Any, Problems], None], value: Any) -> bool:
    problems = Problems()
    check(value, problems)
    return not problems


def validate(obj: Any) -> None:
    """Raise JobspecError with every problem unless ``obj`` is a valid version 1 jobspec."""
    if not accepts(obj):
        raise_problems(obj)
