"""Jobs whose constraints (``--requires``, ``system.constraints``) this instance cannot
meet are refused before they are submitted, as the scheduler would deny them."""

from __future__ import annotations

from pflux.errors import SpecError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

    from pflux import Client
    from pflux.spec.resource import ResourceSet


def refuse_unmet(client: Client, jobspecs: Iterable[Mapping[str, Any]]) -> None:
    """Raise SpecError for the first constraint of ``jobspecs`` the instance cannot meet
    (one resource query, and only when some job has constraints)."""
    check = UnmetCheck(client)
    for jobspec in jobspecs:
        check.check(jobspec)


class UnmetCheck:
    """Each jobspec's constraints checked as it is taken, for jobs built one by one: the
    resources are asked for once, at the first job with constraints, and each distinct
    constraint is judged once."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self._resources: ResourceSet | None = None
        self._met: set[str] = set()

    def check(self, jobspec: Mapping[str, Any]) -> None:
        """Raise SpecError if the instance cannot meet ``jobspec``'s constraints."""
        system = jobspec["attributes"]["system"]
        if "constraints" not in system:
            return
        import json

        key = json.dumps(system["constraints"], sort_keys=True)
        if key in self._met:
            return
        from pflux.spec.constraint import unmet
        from pflux.spec.resource import ResourceSet

        if self._resources is None:
            status = self.client.resource_status()["all"]
            self._resources = ResourceSet.from_json(status, allow_empty=True)
        why = unmet(system["constraints"], self._resources)
        if why is not None:
            raise SpecError(why)
        self._met.add(key)
