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
import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import threading
from urllib.parse import SplitResult, urlsplit

from pflux.cli import base
from pflux.errors import PfluxError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import IO

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
    (its stdin and stdout), served by threads: one accepting, two for each connection."""

    def __init__(self, path: str, argv: list[str]) -> None:
        self.path = path
        self.argv = argv
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._lock = threading.Lock()
        self._joins: list[tuple[socket.socket, subprocess.Popen[bytes]]] = []
        self._stopping = False

    def start(self) -> None:
        try:
            self._listener.bind(self.path)
            os.chmod(self.path, 0o600)
            self._listener.listen()
        except OSError as exc:
            raise PfluxError(f"{self.path}: {exc.strerror or exc}") from None
        threading.Thread(target=self._accept, daemon=True).start()

    def stop(self) -> None:
        """End every connection and its process."""
        with self._lock:
            self._stopping = True
            joins = list(self._joins)
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        for conn, proc in joins:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            if proc.poll() is None:
                proc.kill()
            proc.wait()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # closed: stopping
            try:
                proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            except OSError:
                conn.close()
                continue
            with self._lock:
                if self._stopping:
                    proc.kill()
                    proc.wait()
                    conn.close()
                    return
                self._joins.append((conn, proc))
            assert proc.stdin is not None
            assert proc.stdout is not None
            threading.Thread(target=_to_process, args=(conn, proc.stdin), daemon=True).start()
            threading.Thread(target=_to_socket, args=(proc, conn), daemon=True).start()


def _to_process(conn: socket.socket, stdin: IO[bytes]) -> None:
    """The client's bytes to the process, until the client closes."""
    with contextlib.suppress(OSError), stdin:
        while data := conn.recv(CHUNK):
            stdin.write(data)
            stdin.flush()


def _to_socket(proc: subprocess.Popen[bytes], conn: socket.socket) -> None:
    """The process's bytes to the client, until it ends; then the client's end."""
    assert proc.stdout is not None
    with contextlib.suppress(OSError):
        while data := os.read(proc.stdout.fileno(), CHUNK):
            conn.sendall(data)
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_RDWR)
    conn.close()
    if proc.poll() is None:
        proc.kill()
    proc.wait()
