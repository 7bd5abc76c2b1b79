"""``pflux start --test-size=N``: N brokers on this machine, as flux-core's test instances.

Rank 0 is the ``pflux start`` process; ranks 1..N-1 are child processes of it
(``pflux.broker.rankmain``), each told its ``Boot`` on its stdin, whose end
(rank 0 going away) stops it. They talk over ipc:// endpoints in a private
directory of rank 0's, with one CURVE certificate made for this run, and each
offers its share of this machine's cores (``nodeinfo.core_share``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from pflux.broker.boot import Boot, Cert

__all__ = ["RankProcesses", "Tbon", "boot_to_json", "test_size_boots"]

log = logging.getLogger("pflux.broker")

STOP_TIMEOUT = 10.0  # seconds a rank has to stop once told, before SIGKILL


@dataclass(frozen=True)
class Tbon:
    """The tree's settings (flux-core's ``tbon.*`` and ``broker.quorum-timeout``)."""

    fanout: int = 2
    heartbeat: float = 1.0  # seconds between heartbeats
    timeout: float = 5.0  # seconds of silence after which a peer is lost
    quorum_timeout: float = 60.0  # how long rank 0 waits for every rank before going on

    def attrs(self, fanout: int) -> dict[str, str]:
        """The broker attributes that say them, with the tree's actual ``fanout``."""
        return {
            "tbon.fanout": str(fanout),
            "tbon.heartbeat": f"{self.heartbeat:g}s",
            "tbon.timeout": f"{self.timeout:g}s",
            "broker.quorum-timeout": f"{self.quorum_timeout:g}s",
        }


def test_size_boots(size: int, rundir: Path, fanout: int, hosts: Sequence[str]) -> list[Boot]:
    """Every rank's Boot: a k-ary tree of ``fanout`` over ipc:// endpoints in ``rundir``,
    rank r on host ``hosts[r]``, one instance certificate made now."""
    import zmq  # only an instance of ranks loads ZeroMQ

    public, secret = (key.decode() for key in zmq.curve_keypair())
    cert = Cert(public, secret)
    boots = []
    for rank in range(size):
        first_child = rank * fanout + 1
        parent = None if rank == 0 else (rank - 1) // fanout
        boots.append(
            Boot(
                rank=rank,
                size=size,
                hostnames=tuple(hosts),
                fanout=fanout,
                bind=f"ipc://{rundir.absolute()}/tbon-{rank}" if first_child < size else None,
                parent=None if parent is None else f"ipc://{rundir.absolute()}/tbon-{parent}",
                cert=cert,
                parent_key=public,
                allowed=frozenset((public,)),
            )
        )
    return boots


test_size_boots.__test__ = False  # type: ignore[attr-defined]  # not a test for pytest


def boot_to_json(boot: Boot) -> dict[str, Any]:
    """``boot`` as JSON's types (``rankmain`` reads it back)."""
    return {
        "rank": boot.rank,
        "size": boot.size,
        "hostnames": list(boot.hostnames),
        "fanout": boot.fanout,
        "bind": boot.bind,
        "parent": boot.parent,
        "cert": {"public": boot.cert.public, "secret": boot.cert.secret},
        "parent_key": boot.parent_key,
        "allowed": sorted(boot.allowed),
    }


def boot_from_json(obj: dict[str, Any]) -> Boot:
    return Boot(
        rank=obj["rank"],
        size=obj["size"],
        hostnames=tuple(obj["hostnames"]),
        fanout=obj["fanout"],
        bind=obj["bind"],
        parent=obj["parent"],
        cert=Cert(**obj["cert"]),
        parent_key=obj["parent_key"],
        allowed=frozenset(obj["allowed"]),
    )


class RankProcesses:
    """Ranks 1..N-1 as child processes of rank 0; one that exits unasked is reported to
    ``on_exit(rank, status)`` (rank 0's overlay then marks it down at once)."""

    def __init__(self, on_exit: Callable[[int, int], None], *, wrap: Sequence[str] = ()) -> None:
        self.on_exit = on_exit
        self.wrap = tuple(wrap)  # each rank's broker runs under these arguments (--wrap)
        self.procs: dict[int, asyncio.subprocess.Process] = {}
        self._watchers: set[asyncio.Task[None]] = set()
        self._stopping = False

    async def spawn(self, rank: int, setup: dict[str, Any]) -> None:
        """Start rank ``rank`` with ``setup`` (its boot, rundir, hello, attributes) on its stdin,
        which stays open: its end tells the rank that rank 0 is gone."""
        proc = await asyncio.create_subprocess_exec(
            *self.wrap,
            sys.executable,
            "-m",
            "pflux.broker.rankmain",
            stdin=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        assert proc.stdin is not None
        proc.stdin.write(orjson.dumps(setup) + b"\n")
        self.procs[rank] = proc
        task = asyncio.get_running_loop().create_task(self._watch(rank, proc))
        self._watchers.add(task)
        task.add_done_callback(self._watchers.discard)

    async def _watch(self, rank: int, proc: asyncio.subprocess.Process) -> None:
        status = await proc.wait()
        if not self._stopping:
            log.error("rank %d's broker (pid %d) exited with status %d", rank, proc.pid, status)
            self.on_exit(rank, status)

    async def stop(self) -> None:
        """Wait for the ranks to stop (rank 0 sent overlay.shutdown); SIGTERM, then SIGKILL,
        the ones that do not."""
        self._stopping = True
        procs = list(self.procs.values())
        for proc in procs:
            if proc.stdin is not None:
                proc.stdin.close()
        waits = [asyncio.ensure_future(proc.wait()) for proc in procs]
        if not waits:
            return
        _, late = await asyncio.wait(waits, timeout=STOP_TIMEOUT)
        for proc in procs:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGKILL if late else signal.SIGTERM)
        await asyncio.gather(*waits)
