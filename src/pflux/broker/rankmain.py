"""A broker of rank above 0: ``python -m pflux.broker.rankmain`` (started by rank 0).

It reads one JSON line on stdin: its ``boot`` (``testsize.boot_to_json``), its
``rundir``, its ``hello`` (what it offers), the instance's shared ``attrs``, the
overlay's ``heartbeat`` and ``timeout`` and the log ``level``. It serves the
``broker`` (ping, attributes), ``config``, ``log`` and ``event`` services, the overlay, and
its own local connector socket ``<rundir>/local``, so commands and jobs on its
node talk to it; every other request goes up the tree to rank 0's services.
It holds no KVS and no state directory. It stops on ``overlay.shutdown``, on
SIGTERM/SIGINT, and when its stdin ends (rank 0, which started it, is gone).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import orjson

from pflux import __version__
from pflux.broker import access, private
from pflux.broker.boot import Boot
from pflux.broker.connector import serve
from pflux.broker.event import EventService
from pflux.broker.heap import release_large_buffers
from pflux.broker.instance import SOCKET_NAME, BrokerBasics, ConfigService, service_class
from pflux.broker.logbuf import LogRing, LogService
from pflux.broker.overlay import Overlay
from pflux.broker.router import Broker
from pflux.broker.testsize import Tbon, boot_from_json
from pflux.protocol.uri import uri_for
from pflux.spec import hostlist

log = logging.getLogger("pflux.broker")

#: the services of a rank > 0 besides the broker's own (loaded by name: the broker
#: imports no service): job-exec's agent, which runs this rank's shells
RANK_SERVICES = ("pflux.exec.node:ExecNodeService", "pflux.rexec.service:RexecService")


async def run(setup: dict[str, Any]) -> int:
    """Serve as the rank ``setup`` describes until told to stop."""
    release_large_buffers()
    boot = setup["boot"]
    if not isinstance(boot, Boot):
        boot = boot_from_json(boot)
    access.access(setup.get("config") or {})  # its connector's: refused now if bad
    rundir = Path(setup["rundir"])
    private.state_directory(rundir)
    socket_path = rundir / SOCKET_NAME
    uri = uri_for(str(socket_path))
    hello = setup["hello"]
    attrs = {
        **setup["attrs"],
        "rank": str(boot.rank),
        "size": str(boot.size),
        "hostname": hello["hostname"],
        "uri": uri,
        "local-uri": uri,
        "rundir": str(rundir),
        "pid": str(os.getpid()),
        "broker.pid": str(os.getpid()),
        "broker.starttime": f"{time.time():.6f}",
        "tbon.parent-endpoint": boot.parent or "",
    }
    broker = Broker(os.getuid(), attrs=attrs, config=setup.get("config") or {})
    broker.rank, broker.size = boot.rank, boot.size
    broker.register(BrokerBasics(broker))  # broker.shutdown and the rest: rank 0's
    broker.register(ConfigService(broker))
    ring = LogRing(rank=boot.rank)
    logging.getLogger().addHandler(ring)
    broker.register(LogService(broker, ring))
    broker.register(EventService(broker))  # its clients' subscriptions; rank 0 numbers
    for path in RANK_SERVICES:
        broker.register(service_class(path)(broker))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    lifeline = setup.get("lifeline", True)
    if lifeline:
        loop.add_reader(0, _stdin_readable, stop)
    overlay = Overlay(broker, boot, hello, heartbeat=setup["heartbeat"], timeout=setup["timeout"])
    overlay.on_shutdown = stop.set
    await broker.start()
    await overlay.start()
    attrs["tbon.endpoint"] = overlay.endpoint
    server = await serve(broker, socket_path)
    log.info("rank %d of %d serving at %s", boot.rank, boot.size, uri)
    try:
        await stop.wait()
    finally:
        server.close()
        overlay.shutdown_tree()
        await overlay.stop()
        await broker.stop()
        if lifeline:
            loop.remove_reader(0)
        with contextlib.suppress(FileNotFoundError):
            socket_path.unlink()
    return 0


def instance_attrs(boot: Boot, tbon: Tbon) -> dict[str, str]:
    """The instance's attributes a rank started on its own knows as rank 0 would."""
    return {
        "instance-owner": str(os.getuid()),
        "security.owner": str(os.getuid()),
        "version": __version__,
        "hostlist": hostlist.encode(boot.hostnames),
        "instance-level": "0",
        "jobid-path": "/",
        **tbon.attrs(boot.fanout),
    }


def _stdin_readable(stop: asyncio.Event) -> None:
    """Rank 0 keeps this rank's stdin open while it lives: its end means stop."""
    try:
        data = os.read(0, 4096)
    except BlockingIOError:
        return
    if not data:
        stop.set()


def main() -> int:
    setup = orjson.loads(sys.stdin.buffer.readline())
    rank = setup["boot"]["rank"]
    logging.basicConfig(
        format=f"%(asctime)s rank{rank} %(name)s %(levelname)s: %(message)s",
        level=setup.get("level", logging.WARNING),
    )
    for handler in logging.getLogger().handlers:
        handler.setLevel(setup.get("level", logging.WARNING))
    logging.getLogger().setLevel(logging.INFO)
    import uvloop

    return uvloop.run(run(setup))


if __name__ == "__main__":
    sys.exit(main())
