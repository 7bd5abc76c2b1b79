"""flux-core's ``flux.resource``: ``resource_list`` and its resource sets."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from flux.resource.list import ResourceSet, SchedResourceList, resource_list

__all__ = ["ResourceSet", "SchedResourceList", "resource_list"]


def __getattr__(name: str) -> Any:
    """Load ``flux.resource.list`` when one of its names is first used."""
    if name in __all__:
        from flux.resource import list as _list

        return getattr(_list, name)
    if name == "list":
        import importlib

        return importlib.import_module("flux.resource.list")
    raise AttributeError(f"module 'flux.resource' has no attribute {name!r}")
