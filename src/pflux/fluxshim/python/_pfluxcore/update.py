"""What RFC 21's update events do to the object they update.

A ``jobspec-update`` event's context maps period-delimited keys to values, each
set in the jobspec at the path its key names (``attributes.system.duration``),
making the objects that path crosses where they are missing or not objects; a
``resource-update`` sets R's ``execution.expiration`` the same way. The job
manager, job-list and pflux's commands apply them to jobspecs and memos, and the
flux package's ``job_kvs_lookup`` to what it reads back.
"""

from __future__ import annotations

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing (several ms)
if TYPE_CHECKING:
    from typing import Any


def set_path(obj: dict[str, Any], path: str, value: Any) -> None:
    """Set ``value`` at the period-delimited ``path`` in ``obj``."""
    *parents, leaf = path.split(".")
    for part in parents:
        child = obj.get(part)
        if not isinstance(child, dict):
            child = obj[part] = {}
        obj = child
    obj[leaf] = value


def apply(obj: dict[str, Any], updates: dict[str, Any]) -> None:
    """Set each of an update's period-delimited keys in ``obj``."""
    for path, value in updates.items():
        set_path(obj, path, value)
