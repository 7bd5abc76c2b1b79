"""The scheduler's clock: real time, or the simulator's.

Every decision the scheduler takes at "now" depends on it: R's starttime and
expiration, and whether a job can backfill ahead of a reservation.  In an
instance that replays a trace (``[simulator]`` in the configuration, see
``pflux.sim``) the simulator owns time: it sets this clock with
``sched.sim-time`` once everything due at that instant has reached the
scheduler, and the scheduler runs its passes only then, so one pass sees
every request of the instant, as the offline replay (``pflux.sim.replay``)
assumes.
"""

from __future__ import annotations

import time
from typing import Any

__all__ = ["Clock", "SimulatedClock", "clock_for"]


class Clock:
    """Real time, in seconds since the Unix epoch."""

    simulated = False

    def now(self) -> float:
        return time.time()


class SimulatedClock(Clock):
    """Time as the simulator sets it; it never goes back."""

    simulated = True

    def __init__(self) -> None:
        self._now = 0.0

    def now(self) -> float:
        return self._now

    def set(self, when: float) -> None:
        """Move the clock to ``when``; ValueError if that is earlier than now."""
        if when < self._now:
            raise ValueError(f"simulated time cannot go back from {self._now!r} to {when!r}")
        self._now = when


def clock_for(config: dict[str, Any]) -> Clock:
    """The clock an instance with ``config`` schedules by: simulated when it has ``[simulator]``."""
    return SimulatedClock() if "simulator" in config else Clock()
