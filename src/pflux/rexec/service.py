"""rexec: run a command on this broker's rank for the instance owner (``pflux exec``).

``rexec.exec`` (streaming) starts the command in a session of its own and answers
``{type: "started", pid}`` (its ``FLUX_URI`` and ``PFLUX_URI`` name this rank's
broker), then its output as it comes (``{type: "output", stream,
data}``, ``encoding: "base64"`` for bytes that are not UTF-8), then ``{type:
"finished", status}`` (a wait status) and the end. ``rexec.write`` feeds a process's
standard input, ``rexec.kill`` signals its process group. A background command
(``bg``, a plain request) is answered ``{pid}`` once started and left running, its
output the broker's own; a waitable one is kept once ended until ``rexec.wait`` takes
its status. ``rexec.list`` lists them all. Only the instance owner may ask (a command
runs as the broker's user); a requester that goes away has its foreground processes
killed, and every process left is killed when the broker stops.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import errno
import logging
import os
import shlex
import signal
import subprocess
from dataclasses import dataclass, field
from typing import Any

from pflux.broker.router import Broker, Request, Service, method
from pflux.broker.sigdefault import preexec
from pflux.errors import RPCError
from pflux.protocol.decode import decode
from pflux.protocol.rexec import CommandRequest, InputRequest, SignalRequest, WaitRequest

__all__ = ["RexecService"]

log = logging.getLogger("pflux.rexec")

CHUNK = 65536


@dataclass
class _Proc:
    """A process this rank runs, and how it was asked for."""

    process: asyncio.subprocess.Process
    request: CommandRequest
    ended: asyncio.Future[int] = field(default_factory=asyncio.Future)  # its wait status
    waiters: int = 0  # rexec.wait requests waiting for it


class RexecService(Service):
    """The processes this rank runs for ``pflux exec`` (module docstring)."""

    name = "rexec"

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker)
        self.procs: dict[int, _Proc] = {}
        self.labels: set[str] = set()  # of the processes running or kept, and starting
        self.tasks: set[asyncio.Task[None]] = set()

    @staticmethod
    def _owner(req: Request) -> None:
        if not req.owner:
            raise RPCError(errno.EPERM, f"{req.topic}: only the instance owner may run commands")

    @method("exec")
    def exec(self, req: Request) -> None:
        self._owner(req)
        request = decode(req.topic, req.payload, CommandRequest)
        if req.streaming == request.bg:
            raise RPCError(
                errno.EPROTO,
                "rexec.exec must be a streaming request"
                if not request.bg
                else "rexec.exec: bg: a plain request, answered once the process starts",
            )
        if request.waitable and not request.bg:
            raise RPCError(errno.EINVAL, "rexec.exec: waitable can only be used with bg")
        if request.label is not None:
            if request.label in self.labels:
                raise RPCError(errno.EEXIST, f"rexec.exec: label {request.label}: already in use")
            self.labels.add(request.label)
        task = asyncio.get_running_loop().create_task(self._run(req, request))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _run(self, req: Request, request: CommandRequest) -> None:
        env = dict(request.env)
        local = self.broker.attrs.get("local-uri")
        if local:  # the command's flux and pflux commands talk to this rank's broker
            env["FLUX_URI"] = env["PFLUX_URI"] = local
        piped = None if request.bg else subprocess.PIPE  # bg: the broker's own output
        try:
            proc = await asyncio.create_subprocess_exec(
                *request.cmd,
                stdin=subprocess.PIPE if request.stdin else subprocess.DEVNULL,
                stdout=piped,
                stderr=piped,
                cwd=request.cwd,
                env=env,
                start_new_session=True,
                preexec_fn=preexec(),
            )
        except OSError as exc:
            self.labels.discard(request.label or "")
            req.error(exc.errno or errno.EINVAL, f"error launching process: {exc.strerror or exc}")
            return
        entry = self.procs[proc.pid] = _Proc(proc, request)
        if request.bg:
            req.respond({"pid": proc.pid})
            entry.ended.set_result(_status(await proc.wait()))
            if not request.waitable:
                self._forget(entry)
            return

        def gone() -> None:
            self._signal(proc, signal.SIGKILL)

        req.on_disconnect(gone)
        req.respond({"type": "started", "pid": proc.pid})
        assert proc.stdout is not None
        assert proc.stderr is not None
        await asyncio.gather(
            self._forward(req, proc.stdout, "stdout"), self._forward(req, proc.stderr, "stderr")
        )
        status = _status(await proc.wait())
        entry.ended.set_result(status)
        self._forget(entry)
        req.forget_disconnect(gone)
        req.respond({"type": "finished", "pid": proc.pid, "status": status})
        req.end()

    def _forget(self, entry: _Proc) -> None:
        """The process is gone for good: its pid and label are free."""
        self.procs.pop(entry.process.pid, None)
        self.labels.discard(entry.request.label or "")

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
        proc = self._proc(request.pid, None).process
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
        entry = self._proc(request.pid, request.label)
        if entry.ended.done():
            raise RPCError(errno.ESRCH, f"rexec.kill: process {entry.process.pid} has ended")
        self._signal(entry.process, request.signum)
        req.respond({})

    @method("wait")
    def wait(self, req: Request) -> None:
        self._owner(req)
        request = decode(req.topic, req.payload, WaitRequest)
        entry = self._proc(request.pid, request.label)
        if not entry.request.waitable:
            raise RPCError(errno.EINVAL, f"rexec.wait: process {entry.process.pid} is not waitable")
        task = asyncio.get_running_loop().create_task(self._reap(req, entry))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _reap(self, req: Request, entry: _Proc) -> None:
        entry.waiters += 1
        try:
            status = await asyncio.shield(entry.ended)
        finally:
            entry.waiters -= 1
        self._forget(entry)
        req.respond({"pid": entry.process.pid, "status": status})

    @method("list")
    def listing(self, req: Request) -> None:
        self._owner(req)
        procs = [
            {
                "pid": pid,
                "state": "Z" if entry.ended.done() else "R",
                "label": entry.request.label or "",
                "cmd": shlex.join(entry.request.cmd),
                "bg": entry.request.bg,
                "waitable": entry.request.waitable,
                "attached": not entry.request.bg or entry.waiters > 0,
            }
            for pid, entry in sorted(self.procs.items())
        ]
        req.respond({"rank": self.broker.rank, "procs": procs})

    def _proc(self, pid: int, label: str | None) -> _Proc:
        """The process ``pid`` names (-1: the one ``label`` names)."""
        if pid == -1 and label is not None:
            for entry in self.procs.values():
                if entry.request.label == label:
                    return entry
            raise RPCError(errno.ESRCH, f"rexec: no process labelled {label} on this rank")
        found = self.procs.get(pid)
        if found is None:
            raise RPCError(errno.ESRCH, f"rexec: no process {pid} of rexec's on this rank")
        return found

    @staticmethod
    def _signal(proc: asyncio.subprocess.Process, signum: int) -> None:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signum)

    async def stop(self) -> None:
        """Kill what still runs: nothing outlives the broker that started it."""
        for entry in list(self.procs.values()):
            self._signal(entry.process, signal.SIGKILL)
        for task in list(self.tasks):
            task.cancel()


def _status(returncode: int) -> int:
    """A wait status, as ``os.waitpid`` gives it, from a return code."""
    return -returncode if returncode < 0 else returncode << 8
