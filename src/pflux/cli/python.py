"""``pflux python [ARGS...]``: this Python with the ``flux`` package importable (flux-python(1)).

The ``flux`` package is pflux's shim (pure Python, standard library only),
in ``pflux/fluxshim/python``; that directory goes first on ``PYTHONPATH`` and
the interpreter that runs pflux is exec'd with ARGS, as ``flux python`` runs
the interpreter of its own installation.  ``--get-path`` as the first
argument prints the directory.  pflux ships one set of bindings, for every
Python 3.8 or newer, so flux's ``--list-versions`` (its ``flux pythonX.Y``
commands) is refused.
"""

from __future__ import annotations

import argparse
import os
import sys

from pflux import shim_env
from pflux.cli import base


def parser() -> argparse.ArgumentParser:
    """pflux's own options, read only as the first argument (all else is Python's)."""
    p = argparse.ArgumentParser(
        prog="pflux python", description="Run Python with the flux package importable."
    )
    p.add_argument("--get-path", action="store_true", help="print the flux package's directory")
    p.add_argument("--list-versions", action="store_true", help="refused (one package for all)")
    return p


def main(argv: list[str]) -> int:
    """Entry point of ``pflux python``: exec's the interpreter, or prints the path."""
    if argv[:1] in (["--get-path"], ["--list-versions"]):
        if parser().parse_args(argv[:1]).get_path:
            print(_shim())
            return 0
        sys.stderr.write(
            f"{base.PROG}-python: ERROR: --list-versions: pflux has one flux package, for any"
            " Python 3.8 or newer; there are no pythonX.Y commands\n"
        )
        return 1
    path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = f"{_shim()}{os.pathsep}{path}" if path else _shim()
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, *argv])


def _shim() -> str:
    """The directory that holds the ``flux`` package."""
    return os.pathsep.join(shim_env().pythonpath)
