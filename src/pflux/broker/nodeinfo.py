"""What a rank offers the instance, as its hello says: host, cores, GPUs, version.

Each broker finds its own (the CPUs it may run on, the machine's NVIDIA GPUs),
unless it is told a share (``pflux start --test-size``) or a count (``[resource]
cores``/``gpus``); rank 0's scheduler builds R from the hellos of the ranks up.
"""

from __future__ import annotations

import glob
import os
import socket
from collections.abc import Sequence
from typing import Any

from pflux import __version__
from pflux.spec.idset import IdSet

__all__ = ["core_share", "count_gpus", "hello", "node_info"]


def count_gpus() -> int:
    """NVIDIA GPUs on this machine, found cheaply (no driver library); 0 when none."""
    try:
        return len(os.listdir("/proc/driver/nvidia/gpus"))
    except OSError:
        return len(glob.glob("/dev/nvidia[0-9]*"))


def node_info(
    hostname: str | None = None,
    *,
    cores: Sequence[int] | None = None,
    gpus: Sequence[int] | None = None,
) -> dict[str, Any]:
    """A rank's hello: ``cores`` and ``gpus`` default to this process's CPUs and the
    machine's GPUs, as RFC 22 idsets of their ids."""
    if cores is None:
        cores = sorted(os.sched_getaffinity(0))
    if gpus is None:
        gpus = range(count_gpus())
    return {
        "hostname": hostname or socket.gethostname(),
        "cores": str(IdSet(cores)),
        "gpus": str(IdSet(gpus)),
        "version": __version__,
    }


def core_share(cores: Sequence[int], rank: int, size: int) -> list[int]:
    """Rank ``rank``'s share of ``cores`` among ``size`` ranks on one machine: a block of
    ``len(cores) // size`` (the first ranks one more while the rest lasts), so no core
    is given twice; with fewer cores than ranks, the last ranks get none."""
    base, extra = divmod(len(cores), size)
    start = rank * base + min(rank, extra)
    return list(cores[start : start + base + (1 if rank < extra else 0)])


def hello(
    config: dict[str, Any], hostname: str, share: tuple[int, int] | None = None
) -> dict[str, Any]:
    """A rank's hello under ``config``: the ``[resource] cores``/``gpus`` counts of them
    if given, else this process's CPUs and the machine's GPUs; of those, with ``share``
    (``(r, n)``: rank r of n brokers on one machine), rank r's share alone."""
    section = config.get("resource")
    section = section if isinstance(section, dict) else {}
    shares: dict[str, list[int]] = {}
    for name in ("cores", "gpus"):
        count = section.get(name)
        if type(count) is int and count >= 0:
            every = list(range(count))
        elif share is None:
            continue  # node_info finds them
        elif name == "cores":
            every = sorted(os.sched_getaffinity(0))
        else:
            every = list(range(count_gpus()))
        shares[name] = every if share is None else core_share(every, *share)
    return node_info(hostname, **shares)
