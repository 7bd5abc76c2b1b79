"""``relay PATH``: this command's standard input and output joined to the instance
socket at PATH, byte for byte, as ``flux relay``: what ``proxy ssh://HOST/PATH`` runs
on HOST (through ssh) for each connection it forwards. It ends when either side
closes; the broker sees this process's user as the client."""

from __future__ import annotations

import argparse
import os
import selectors
import socket

from pflux.cli import base
from pflux.errors import PfluxError

CHUNK = 65536


def parser() -> argparse.ArgumentParser:
    p = base.parser("relay", "Join standard input and output to an instance's socket.")
    p.add_argument("path", metavar="PATH", help="the instance's local socket")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    return base.run("relay", lambda: _relay(args.path))


def _relay(path: str) -> int:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError as exc:
        raise PfluxError(f"cannot connect to {path}: {exc.strerror or exc}") from None
    selector = selectors.DefaultSelector()
    selector.register(0, selectors.EVENT_READ, "stdin")
    selector.register(sock, selectors.EVENT_READ, "socket")
    with sock:
        while True:
            for key, _ in selector.select():
                if key.data == "stdin":
                    data = os.read(0, CHUNK)
                    if not data:
                        return 0
                    sock.sendall(data)
                else:
                    data = sock.recv(CHUNK)
                    if not data:
                        return 0
                    _write_all(1, data)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
