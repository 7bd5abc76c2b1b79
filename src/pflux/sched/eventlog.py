"""The resource eventlog: the scheduler's record of its ranks, as flux-core's
``resource.eventlog`` (RFC 18 lines at that KVS key).

``restart`` and ``resource-define`` when the scheduler starts; ``drain``/``undrain``
in the same commit as the drained ranks they change; ``online``/``offline`` as brokers
join and are lost. ``flux resource eventlog`` reads it.
"""

from __future__ import annotations

from typing import Any

from pflux.spec.eventlog import Event
from pflux.spec.kvs_keys import RESOURCE_EVENTLOG as KEY

__all__ = ["KEY", "append"]


def append(name: str, context: dict[str, Any]) -> list[str]:
    """A ``kvs.commit`` op appending the event ``name`` (now) to the resource eventlog."""
    return ["append", KEY, Event.now(name, context).to_line()]
