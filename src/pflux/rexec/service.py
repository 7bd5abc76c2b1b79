"""rexec: run a command on this broker's rank for the instance owner (``pflux exec``).

``rexec.exec`` (streaming) starts the command in a session of its own and answers
``{type: "started", pid}`` (its ``FLUX_URI`` and ``PFLUX_URI`` name this rank's
broker), then its output as it comes (``{type: "output", stream,
data}``, ``encoding: "base64"`` for bytes that are not UTF-8), then ``{type:
"finished", status}`` (a wait status) and the end. ``rexec.write`` feeds a process's
standard input, ``rexec.kill`` signals its process group. Only the instance owner may
ask (a command runs as the broker's user); a requester that goes away has its
processes killed, and so has every process left when the broker stops.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import errno
import logging
import os
import signal
import subprocess
from typing import Any

from pflux.broker.router import Broker, Request, Service, method
from pflux.broker.sigdefault import preexec
from pflux.errors import RPCError
from pflux.protocol.decode import decode
from pflux.protocol.rexec import CommandRequest, InputRequest, SignalRequest

__all__ = ["RexecService"]

log = logging.getLogger("pflux.rexec")

CHUNK = 65536


class RexecService(Service):
    """The processes this rank runs for ``pflux exec`` (module docstring)."""

    name = "rexec"

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker)
        self.procs: dict[int, asyncio.subprocess.Process] = {}
        self.tasks: set[asyncio.Task[None]] = set()

    @staticmethod
    def _owner(req: Request) -> None:
        if not req.owner:
            raise RPCError(errno.EPERM, f"{req.topic}: only the instance owner may run commands")

    @method("exec")
    def exec(self, req: Request) -> None:
        self._owner(req)
        if not req.streaming:
            raise RPCError(errno.EPROTO, "rexec.exec must be a streaming request")
        request = decode(req.topic, req.payload, CommandRequest)
        task = asyncio.get_running_loop().create_task(self._run(req, request))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _run(self, req: Request, request: CommandRequest) -> None:
        env = dict(request.env)
        local = self.broker.attrs.get("local-uri")
        if local:  # the command's flux and pflux commands talk to this rank's broker
            env["FLUX_URI"] = env["PFLUX_URI"] = local
        try:
            proc = await asyncio.create_subprocess_exec(
                *request.cmd,
                stdin=subprocess.PIPE if request.stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=request.cwd,
                env=env,
                start_new_session=True,
                preexec_fn=preexec(),
            )
        except OSError as exc:
            req.error(exc.errno or errno.EINVAL, f"error launching process: {exc.strerror or exc}")
            return
        self.procs[proc.pid] = proc

        def gone() -> None:
            self._signal(proc, signal.SIGKILL)

        req.on_disconnect(gone)
        req.respond({"type": "started", "pid": proc.pid})
        assert proc.stdout is not None
        assert proc.stderr is not None
        await asyncio.gather(
            self._forward(req, proc.stdout, "stdout"), self._forward(req, proc.stderr, "stderr")
        )
        returncode = await proc.wait()
        self.procs.pop(proc.pid, None)
        req.forget_disconnect(gone)
        status = -returncode if returncode < 0 else returncode << 8
        req.respond({"type": "finished", "pid": proc.pid, "status": status})
        req.end()

    @staticmethod
    async def _forward(req: Request, stream: asyncio.StreamReader, name: str) -> None:
        while data := await stream.read(CHUNK):
            entry: dict[str, Any] = {"type": "output", "stream": name}
            try:
                entry["data"] = data.decode()
            except UnicodeDecodeError:
                entry["data"] = base64.b64encode(data).decode()
                entry["encoding"] = "base64"
            req.respond(entry)
            if req.paused:
                await req.drained()

    @method("write")
    def write(self, req: Request) -> None:
        self._owner(req)
        request = decode(req.topic, req.payload, InputRequest)
        proc = self._proc(request.pid)
        if proc.stdin is None:
            raise RPCError(errno.EINVAL, f"rexec.write: process {request.pid} reads no input")
        if not proc.stdin.is_closing():
            data = request.data.encode()
            if request.encoding == "base64":
                try:
                    data = base64.b64decode(data, validate=True)
                except ValueError:
                    raise RPCError(errno.EPROTO, "rexec.write: data: not base64") from None
            with contextlib.suppress(ConnectionError):
                proc.stdin.write(data)
                if request.eof:
                    proc.stdin.close()
        req.respond({})

    @method("kill")
    def kill(self, req: Request) -> None:
        self._owner(req)
        request = decode(req.topic, req.payload, SignalRequest)
        self._signal(self._proc(request.pid), request.signum)
        req.respond({})

    def _proc(self, pid: int) -> asyncio.subprocess.Process:
        proc = self.procs.get(pid)
        if proc is None:
            raise RPCError(errno.ESRCH, f"rexec: no process {pid} of rexec's on this rank")
        return proc

    @staticmethod
    def _signal(proc: asyncio.subprocess.Process, signum: int) -> None:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signum)

    async def stop(self) -> None:
        """Kill what still runs: nothing outlives the broker that started it."""
        for proc in list(self.procs.values()):
            self._signal(proc, signal.SIGKILL)
        for task in list(self.tasks):
            task.cancel()
