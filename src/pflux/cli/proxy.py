"""``proxy TARGET [COMMAND...]``: run COMMAND (default ``$SHELL``) talking to another
instance, as flux proxy: ``FLUX_URI`` and ``PFLUX_URI`` name TARGET, whatever ``uri``
resolves (a ``local://`` URI, ``pid:PID``, a running job's nested instance). pflux
reaches instances only through ``local://`` sockets on this host, so there is no
relay to keep: ``ssh://`` and other schemes are refused, naming the scheme. The exit
code is COMMAND's (128+N when signal N ended it).
"""

from __future__ import annotations

import argparse
import os
import subprocess

from pflux.cli import base
from pflux.errors import PfluxError


def parser() -> argparse.ArgumentParser:
    p = base.parser("proxy", "Run a command (default: $SHELL) with another instance's URI.")
    p.add_argument("target", metavar="TARGET", help="the instance: a URI, pid:PID or a job id")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the command (default: $SHELL)")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    return base.run("proxy", lambda: _proxy(args.target, args.command))


def _proxy(target: str, command: list[str]) -> int:
    from pflux.cli.uri import resolve

    uri = resolve(target)
    command = command or [os.environ.get("SHELL") or "/bin/sh"]
    env = dict(os.environ, FLUX_URI=uri, PFLUX_URI=uri)
    try:
        rc = subprocess.call(command, env=env)
    except OSError as exc:
        raise PfluxError(f"{command[0]}: {exc.strerror or exc}") from None
    return 128 - rc if rc < 0 else rc
