"""The default priority plugin: priority follows urgency (flux-core's rule).

Urgency 0 holds a job (priority 0: never scheduled), 31 expedites it (the
largest priority), anything between is the priority itself.
"""

from __future__ import annotations

from pflux.manager.states import PRIORITY_MAX, URGENCY_EXPEDITE, URGENCY_HOLD


def priority(urgency: int) -> int:
    """The priority of a job of this urgency."""
    if urgency == URGENCY_HOLD:
        return 0
    if urgency == URGENCY_EXPEDITE:
        return PRIORITY_MAX
    return urgency
