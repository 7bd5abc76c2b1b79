"""flux-core's ``flux.resource``: resource sets, and the instance's resources and their
states (``resource_list``, ``resource_status``).

``ResourceSet`` is imported at once, as flux-core does, so that the name is the class
and not its module; the rest loads when first used.
"""

from __future__ import annotations

from flux.resource.ResourceSet import ResourceSet, Rlist

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from flux.resource.journal import ResourceJournalConsumer
    from flux.resource.list import SchedResourceList, resource_list
    from flux.resource.status import ResourceStatus, resource_status

_WHERE = {
    "ResourceJournalConsumer": "flux.resource.journal",
    "SchedResourceList": "flux.resource.list",
    "resource_list": "flux.resource.list",
    "ResourceStatus": "flux.resource.status",
    "resource_status": "flux.resource.status",
}
_SUBMODULES = frozenset(("journal", "list", "status"))

__all__ = [
    "ResourceJournalConsumer",
    "ResourceSet",
    "ResourceStatus",
    "Rlist",
    "SchedResourceList",
    "resource_list",
    "resource_status",
]


def __getattr__(name: str) -> Any:
    """Load the submodule that holds ``name`` when it is first used."""
    import importlib

    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    if name in _SUBMODULES:
        return importlib.import_module(f"flux.resource.{name}")
    raise AttributeError(f"module 'flux.resource' has no attribute {name!r}")
