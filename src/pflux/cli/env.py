"""``pflux env [--uri URI] [COMMAND...]``: the environment of an instance, as ``flux env``.

Without COMMAND it prints ``export NAME="value"`` lines, so that ``eval "$(pflux
env)"`` puts in this shell what the initial program of an instance and every
job have (``pflux.fluxshim``): the shim's ``flux`` and ``pflux`` commands first
on PATH (nothing else of pflux's), the ``flux`` package first on PYTHONPATH, the
interpreter they run pflux with, and the instance's URI as FLUX_URI and PFLUX_URI
(``--uri``, else what the environment has: no line when there is none). With
COMMAND it runs COMMAND in that environment, as env(1). Nothing is asked of the
instance: the URI is only checked to be one pflux can use.
"""

from __future__ import annotations

import argparse
import os
import sys

from pflux.cli import base
from pflux.errors import PfluxError


def main(argv: list[str]) -> int:
    parser = base.parser("env", "Print the environment of an instance, or run COMMAND in it.")
    parser.add_argument("--uri", help="the instance's URI (default: $PFLUX_URI, else $FLUX_URI)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command to run")
    args = parser.parse_args(argv)
    return base.run("env", lambda: _env(args))


def _env(args: argparse.Namespace) -> int:
    variables = environment(args.uri)
    if args.command:
        env = dict(os.environ, **variables)
        try:
            os.execvpe(args.command[0], args.command, env)
        except OSError as exc:
            raise PfluxError(f"{args.command[0]}: {exc.strerror}") from None
    sys.stdout.write(
        "".join(f'export {name}="{_quoted(value)}"\n' for name, value in variables.items())
    )
    return 0


def environment(uri: str | None) -> dict[str, str]:
    """The variables an instance's programs have, from this process's environment."""
    from pflux import shim_env, socket_path, uri_for

    variables = shim_env().variables(os.environ)
    uri = uri or os.environ.get("PFLUX_URI") or os.environ.get("FLUX_URI")
    if uri:
        uri = uri_for(socket_path(uri))
        variables["FLUX_URI"] = variables["PFLUX_URI"] = uri
    return variables


def _quoted(value: str) -> str:
    """``value`` as the inside of a double-quoted shell word."""
    for char in ("\\", '"', "$", "`"):
        value = value.replace(char, "\\" + char)
    return value
