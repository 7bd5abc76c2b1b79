"""How a job runs in simulated time: when it ends, how, and which nodes it gives back first.

The jobspec's test-mode settings decide, as they do for job-exec's test mode
(``pflux.exec.testexec``): ``run_duration`` (by default the jobspec's
duration; 0 runs until the job is killed), ``wait_status``,
``mock_exception`` and ``node_durations``.  A job still running when its
R expires is killed then, with a ``timelimit`` exception and status 14
(SIGALRM), as job-exec's test mode ends it.  The simulator and the offline
replay both ask this module, so their times agree to the last bit.
"""

from __future__ import annotations

import math
import signal
from collections.abc import Sequence
from typing import Any, NamedTuple

from pflux.errors import PfluxError
from pflux.exec.testexec import SimulationConfig, simulation_config
from pflux.spec.idset import IdSet
from pflux.spec.jobspec import system_attributes

__all__ = ["SimRun", "plan"]


class SimRun(NamedTuple):
    """A job's simulated run, as if it had no time limit.

    ``run_end`` is when it ends by itself (``math.inf``: only when killed),
    with ``wait_status``; ``releases`` the (time, ranks) of nodes released
    before then, in time order; ``exception`` the mock exception asked for
    (``init``: it never starts; ``run``: it is killed as it starts).
    """

    run_end: float
    wait_status: int
    releases: tuple[tuple[float, IdSet], ...]
    exception: str | None

    def ending(self, expiration: float) -> tuple[float, int, bool]:
        """(when it ends, its status, whether R's ``expiration`` (0: none) ended it)."""
        if 0 < expiration < self.run_end:
            return expiration, int(signal.SIGALRM), True
        return self.run_end, self.wait_status, False


def plan(jobspec: dict[str, Any], start: float, ranks: Sequence[int]) -> SimRun:
    """How the job of ``jobspec`` runs from ``start`` on R's ``ranks``; PfluxError if it cannot."""
    config = simulation_config(jobspec)
    if config is None:
        limit = system_attributes(jobspec).get("duration", 0)
        config = SimulationConfig(float(limit or 0))
    if config.override:
        raise PfluxError("attributes.system.exec.test.override: not supported in a simulation")
    run = config.run_duration
    end = start + run if run > 0 else math.inf
    releases = tuple(
        (start + seconds, released) for seconds, released in config.early_releases(ranks)
    )
    return SimRun(end, config.wait_status, releases, config.mock_exception)
