"""RFC 26's begin-time dependency: a job waits until the clock reaches a timestamp.

The value is seconds since the Unix epoch. The dependency (``begin-time=%.3f``,
flux-core's description) is removed by a timer, never by polling; a time in
the past is satisfied at once. After a restart the timer is set again from the
eventlog's outstanding dependency.
"""

from __future__ import annotations

import errno
import math
import time
from typing import TYPE_CHECKING, Any

from pflux.errors import RPCError
from pflux.manager.plugins import Plugin
from pflux.spec.states import State

if TYPE_CHECKING:
    from pflux.manager.job import Job


def _timestamp(value: Any) -> float:
    try:
        stamp = float(value)
    except (TypeError, ValueError):
        stamp = math.nan
    if not math.isfinite(stamp) or stamp < 0:
        raise RPCError(errno.EINVAL, f"Invalid begin-time={value}")
    return stamp


class BeginTime(Plugin):
    name = "begin-time"
    schemes = ("begin-time",)

    def validate_dependency(self, job: Job, dependency: dict[str, Any]) -> None:
        _timestamp(dependency["value"])

    def depend(self, job: Job, dependency: dict[str, Any]) -> None:
        begin = _timestamp(dependency["value"])
        description = f"begin-time={begin:.3f}"
        if description in job.satisfied:
            return
        self.host.dependency_add(job, description)
        self._arm(job, description, begin)

    def _arm(self, job: Job, description: str, begin: float) -> None:
        self.host.loop.call_later(max(0.0, begin - time.time()), self._due, job, description, begin)

    def _due(self, job: Job, description: str, begin: float) -> None:
        if time.time() < begin:
            # the loop's clock is monotonic, the timestamp is wall-clock time: a timer
            # can fire a hair early, never the dependency
            self._arm(job, description, begin)
        elif job.state is State.DEPEND and description in job.dependencies:
            self.host.dependency_remove(job, description)
