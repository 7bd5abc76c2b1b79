"""``proxy TARGET [COMMAND...]``: run COMMAND (default ``$SHELL``) talking to another
instance, as flux proxy: ``FLUX_URI`` and ``PFLUX_URI`` name TARGET, whatever ``uri``
resolves (a ``local://`` URI, ``pid:PID``, a running job's nested instance). The exit
code is COMMAND's (128+N when signal N ended it).

An ``ssh://[USER@]HOST[:PORT]/PATH`` target is an instance on another host: proxy
serves a socket of its own (in a private temporary directory) for COMMAND, and joins
each connection to it to the socket PATH on HOST through ``$FLUX_SSH`` (default
``ssh``) running ``RCMD relay PATH`` there (``$FLUX_SSH_RCMD``, else this ``pflux``),
as flux's ssh connector does. proxy first makes sure the instance answers.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Awaitable, Callable
from urllib.parse import SplitResult, urlsplit

from pflux.cli import base
from pflux.errors import PfluxError

CHUNK = 65536


def parser() -> argparse.ArgumentParser:
    p = base.parser("proxy", "Run a command (default: $SHELL) with another instance's URI.")
    p.add_argument("target", metavar="TARGET", help="the instance: a URI, pid:PID or a job id")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the command (default: $SHELL)")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    return base.run("proxy", lambda: _proxy(args.target, args.command))


def _proxy(target: str, command: list[str]) -> int:
    command = command or [os.environ.get("SHELL") or "/bin/sh"]
    if target.startswith("ssh://"):
        return _over_ssh(target, command)
    from pflux.cli.uri import resolve

    return _run(command, resolve(target))


def _run(command: list[str], uri: str) -> int:
    env = dict(os.environ, FLUX_URI=uri, PFLUX_URI=uri)
    try:
        rc = subprocess.call(command, env=env)
    except OSError as exc:
        raise PfluxError(f"{command[0]}: {exc.strerror or exc}") from None
    return 128 - rc if rc < 0 else rc


def ssh_command(target: str) -> list[str]:
    """The command that joins its stdin and stdout to ``target``'s socket, as flux's ssh
    connector runs it: ``$FLUX_SSH [-p PORT] [USER@]HOST RCMD relay PATH``."""
    parts = _ssh_parts(target)
    ssh = os.environ.get("FLUX_SSH") or "ssh"
    rcmd = os.environ.get("FLUX_SSH_RCMD")
    if rcmd == "":
        raise PfluxError("FLUX_SSH_RCMD: must not be empty")
    remote = rcmd or shutil.which("pflux") or "pflux"
    host = parts.hostname or ""
    argv = [ssh]
    if parts.port is not None:
        argv += ["-p", str(parts.port)]
    argv.append(f"{parts.username}@{host}" if parts.username else host)
    return [*argv, remote, "relay", parts.path]


def _ssh_parts(target: str) -> SplitResult:
    try:
        parts = urlsplit(target)
        parts.port  # noqa: B018 - a port that is no number raises here
    except ValueError as exc:
        raise PfluxError(f"{target}: {exc}") from None
    if not parts.hostname:
        raise PfluxError(f"{target}: no host")
    if not parts.path or parts.path == "/":
        raise PfluxError(f"{target}: no path (ssh://[USER@]HOST[:PORT]/PATH)")
    if parts.query or parts.fragment or parts.password:
        raise PfluxError(f"{target}: only ssh://[USER@]HOST[:PORT]/PATH is supported")
    return parts


def _over_ssh(target: str, command: list[str]) -> int:
    from pflux import uri_for

    argv = ssh_command(target)
    where = tempfile.mkdtemp(prefix="pflux-proxy-")  # mode 0700
    path = os.path.join(where, "local")
    relay = _Relay(path, argv)
    try:
        relay.start()
        uri = uri_for(path)
        _check(uri, target)
        return _run(command, uri)
    finally:
        relay.stop()
        shutil.rmtree(where, ignore_errors=True)


def _check(uri: str, target: str) -> None:
    """The instance answers through the relay, or the error says why not."""
    from pflux import Client
    from pflux.errors import NoInstanceError, RPCError, RPCTimeout

    try:
        with Client(uri) as client:
            client.attrs()
    except (NoInstanceError, RPCError, RPCTimeout, OSError) as exc:
        raise PfluxError(f"cannot connect to {target}: {exc}") from None


class _Relay:
    """A socket at ``path`` whose each connection is joined to a process of ``argv``
    (stdin and stdout), served by an event loop in a thread of its own."""

    def __init__(self, path: str, argv: list[str]) -> None:
        self.path = path
        self.argv = argv
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._procs: set[asyncio.subprocess.Process] = set()
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    def start(self) -> None:
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise PfluxError(f"{self.path}: {self._error}")

    def stop(self) -> None:
        """End every connection and its process, then the loop."""
        if not self._thread.is_alive():
            return
        ended = asyncio.run_coroutine_threadsafe(self._shutdown(), self.loop)
        ended.result(timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=30)

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self._server = self.loop.run_until_complete(
                asyncio.start_unix_server(self._joined, path=self.path)
            )
            os.chmod(self.path, 0o600)
        except OSError as exc:
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            self.loop.run_forever()
        finally:
            self.loop.close()

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for proc in self._procs:
            if proc.returncode is None:
                proc.kill()
        for writer in self._writers:
            writer.close()
        current = asyncio.current_task()
        tasks = [task for task in asyncio.all_tasks() if task is not current]
        if tasks:  # each connection ends as its two sides close
            await asyncio.wait(tasks, timeout=10)

    async def _joined(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            proc = await asyncio.create_subprocess_exec(
                *self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE
            )
        except OSError:
            writer.close()
            return
        self._procs.add(proc)
        self._writers.add(writer)
        assert proc.stdin is not None
        assert proc.stdout is not None
        stdin = proc.stdin
        try:
            await asyncio.gather(
                _pump(reader, stdin.write, stdin.drain, stdin.close),
                _pump(proc.stdout, writer.write, writer.drain, writer.close),
            )
        finally:
            if proc.returncode is None:
                proc.kill()
            await proc.wait()
            self._procs.discard(proc)
            self._writers.discard(writer)


async def _pump(
    source: asyncio.StreamReader,
    write: Callable[[bytes], object],
    drain: Callable[[], Awaitable[None]],
    close: Callable[[], object],
) -> None:
    """Copy ``source`` to a writer until it ends, then close the writer."""
    try:
        while data := await source.read(CHUNK):
            write(data)
            await drain()
    except (ConnectionError, BrokenPipeError):
        pass
    finally:
        close()
