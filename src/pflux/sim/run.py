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
from pflux.exec.testexec import MockConfig, mock_config
from pflux.spec.idset import IdSet

__all__ = ["SimRun", "plan"]


class SimRun(NamedTuple):
    """A job's simulated run.

    ``end`` is when it ends (``math.inf``: only when killed); ``releases``
    the (time, ranks) of nodes released before then, in time order;
    ``exception`` the mock exception asked for (``init``: it never starts;
    ``run``: it is killed as it starts).
    """

    end: float
    status: int
    timelimit: bool
    releases: tuple[tuple[float, IdSet], ...]
    exception: str | None


def plan(jobspec: dict[str, Any], start: float, expiration: float, ranks: Sequence[int]) -> SimRun:
    """How the job of ``jobspec`` runs from ``start`` on R's ``ranks``; PfluxError if it cannot."""
    config = mock_config(jobspec)
    if config is None:
        limit = jobspec.get("attributes", {}).get("system", {}).get("duration", 0)
        config = MockConfig(float(limit or 0))
    if config.override:
        raise PfluxError("attributes.system.exec.test.override: not supported in a simulation")
    run = config.run_duration
    end = start + run if run > 0 else math.inf
    timelimit = 0 < expiration < end
    if timelimit:
        end = expiration
    releases = tuple(
        (start + seconds, released)
        for seconds, released in config.early_releases(ranks)
        if start + seconds < end
    )
    status = int(signal.SIGALRM) if timelimit else config.wait_status
    return SimRun(end, status, timelimit, releases, config.mock_exception)
