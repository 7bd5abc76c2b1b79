"""Jobs whose constraints (``--requires``, ``system.constraints``) this instance cannot
meet are refused before they are submitted, as the scheduler would deny them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from pflux.errors import SpecError

if TYPE_CHECKING:
    from pflux.api import Client


def refuse_unmet(client: Client, jobspecs: Iterable[Mapping[str, Any]]) -> None:
    """Raise SpecError for the first constraint of ``jobspecs`` the instance cannot meet
    (one resource query, and only when some job has constraints)."""
    import json

    wanted: dict[str, Mapping[str, Any]] = {}
    for jobspec in jobspecs:
        system = jobspec["attributes"]["system"]
        if "constraints" in system:
            wanted.setdefault(json.dumps(system["constraints"], sort_keys=True), system)
    if not wanted:
        return
    from pflux.spec.constraint import unmet
    from pflux.spec.resource import ResourceSet

    resources = ResourceSet.from_json(client.resource_status()["all"], allow_empty=True)
    for system in wanted.values():
        why = unmet(system["constraints"], resources)
        if why is not None:
            raise SpecError(why)
