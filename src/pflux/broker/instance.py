"""An instance: a state directory, a broker, its services, and an optional initial program.

The state directory holds the socket (``local``), the KVS database and the log.
Without ``--state-dir`` a temporary one is made and removed at exit; with one
that already holds an instance's data, the services restart from it.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import shutil
import signal
import socket
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pflux.broker.connector import serve
from pflux.broker.router import Broker, Request, Service, method
from pflux.client.uri import uri_for
from pflux.errors import PfluxError

log = logging.getLogger("pflux.broker")

# Loaded in this order, stopped in reverse: each service may call those before it.
SERVICES: tuple[str, ...] = (
    "pflux.kvs.service:KVSService",
    "pflux.manager.service:JobManager",
    "pflux.ingest:IngestService",
    "pflux.sched.service:Scheduler",
    "pflux.exec.service:JobExec",
    "pflux.info:JobInfo",
    "pflux.joblist:JobList",
)

SOCKET_NAME = "local"
MAX_SOCKET_PATH = 107  # sun_path holds 108 bytes with the terminating NUL


class BrokerService(Service):
    """The broker's own methods: ping, attributes, shutdown."""

    name = "broker"

    def __init__(self, broker: Broker, stop: asyncio.Event) -> None:
        super().__init__(broker)
        self._stop = stop

    @method("ping")
    def ping(self, req: Request) -> None:
        req.respond(req.payload)

    @method("attrs")
    def attrs(self, req: Request) -> None:
        req.respond({"attrs": self.broker.attrs})

    @method("shutdown")
    def shutdown(self, req: Request) -> None:
        req.respond({})
        self._stop.set()


class Instance:
    """Runs one instance until shutdown, SIGTERM/SIGINT, or the initial program's exit."""

    def __init__(
        self,
        state_dir: Path | None = None,
        *,
        config: dict[str, Any] | None = None,
        services: Sequence[str] = SERVICES,
    ) -> None:
        self._temporary = state_dir is None
        self.state_dir = Path(tempfile.mkdtemp(prefix="pflux-")) if state_dir is None else state_dir
        self.config = config or {}
        self.service_paths = services
        self.socket_path = self.state_dir / SOCKET_NAME
        if len(os.fsencode(self.socket_path.absolute())) > MAX_SOCKET_PATH:
            raise PfluxError(
                f"state directory path is too long for a Unix socket: {self.state_dir}"
                f" (its socket path must be under {MAX_SOCKET_PATH} bytes)"
            )
        self.uri = uri_for(str(self.socket_path))

    async def run(self, argv: Sequence[str] | None = None) -> int:
        """Serve; with ``argv``, run it inside the instance and return its exit code."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.state_dir, 0o700)
        stop = asyncio.Event()
        broker = Broker(os.getuid(), attrs=self._attrs(), config=self.config)
        broker.on_fatal = lambda reason: stop.set()
        broker.register(BrokerService(broker, stop))
        for path in self.service_paths:
            module, _, cls = path.partition(":")
            broker.register(getattr(importlib.import_module(module), cls)(broker))
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        rc = 0
        await broker.start()
        server = await serve(broker, self.socket_path)
        log.info("instance ready at %s", self.uri)
        try:
            if argv:
                rc = await self._run_initial(argv, stop)
            else:
                await stop.wait()
        finally:
            server.close()
            await broker.stop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
            with contextlib.suppress(FileNotFoundError):
                self.socket_path.unlink()
            if self._temporary:
                shutil.rmtree(self.state_dir, ignore_errors=True)
        return rc

    async def _run_initial(self, argv: Sequence[str], stop: asyncio.Event) -> int:
        env = dict(os.environ, PFLUX_URI=self.uri)
        try:
            proc = await asyncio.create_subprocess_exec(*argv, env=env)
        except OSError as exc:
            log.error("%s: %s", argv[0], exc.strerror)
            return 127 if isinstance(exc, FileNotFoundError) else 126
        waiter = asyncio.ensure_future(proc.wait())
        stopper = asyncio.ensure_future(stop.wait())
        await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
        if not waiter.done():
            proc.terminate()
            await waiter
        stopper.cancel()
        code = proc.returncode or 0
        return 128 - code if code < 0 else code

    def _attrs(self) -> dict[str, str]:
        return {
            "uri": self.uri,
            "state-dir": str(self.state_dir.absolute()),
            "instance-owner": str(os.getuid()),
            "hostname": socket.gethostname(),
            "rank": "0",
            "size": "1",
            "pid": str(os.getpid()),
        }
