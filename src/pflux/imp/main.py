"""``pflux-imp [--config FILE]``: start the privileged helper (as root, at boot, before pflux)."""

from __future__ import annotations

import argparse
import os
import socket
import stat
import sys

from pflux.imp.config import DEFAULT_CONFIG, ImpConfigError, load
from pflux.imp.server import CLEAN_PATH, ImpServer
from pflux.safefs.shared import socket_dir

__all__ = ["listen", "main"]


def listen(path: str) -> socket.socket:
    """The helper's socket at ``path``, in a directory no one else may write in, that
    anyone may connect to (the helper checks who did); OSError naming what is wrong."""
    why = socket_dir(os.path.dirname(path))
    if why:
        raise OSError(why)
    try:
        if stat.S_ISSOCK(os.lstat(path).st_mode):
            os.unlink(path)  # an earlier helper's
    except FileNotFoundError:
        pass
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sock.bind(path)
    os.chmod(path, 0o666)
    sock.listen(64)
    return sock


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="pflux-imp", description="pflux's privileged helper: runs guests' jobs as them"
    )
    parser.add_argument("--config", default=DEFAULT_CONFIG, help=f"default {DEFAULT_CONFIG}")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        sys.stderr.write("pflux-imp: must run as root, to run jobs as their users\n")
        return 1
    try:
        config = load(args.config)
    except ImpConfigError as exc:
        sys.stderr.write(f"pflux-imp: {exc}\n")
        return 1
    os.environ.clear()  # nothing of whoever started it reaches a job
    os.environ["PATH"] = CLEAN_PATH
    os.umask(0o022)
    try:
        listener = listen(config.socket)
    except OSError as exc:
        sys.stderr.write(f"pflux-imp: {config.socket}: {exc.strerror or exc}\n")
        return 1
    sys.stderr.write(f"pflux-imp: listening on {config.socket}\n")
    sys.stderr.flush()
    ImpServer(config, listener).run()
    return 0
