"""``python -m pflux.shell [SPEC]``: run one job shell outside the launcher.

SPEC is a file holding the JSON job description the launcher passes (see
``pflux.exec.launcher``), or ``-``/absent for standard input. job-exec never
uses this (it forks shells from its warm launcher); it is for running a shell
by hand while debugging, the way flux-core's shell can be run directly.
"""

from __future__ import annotations

import sys

import orjson

from pflux.shell.main import run


def main(argv: list[str]) -> int:
    path = argv[1] if len(argv) > 1 else "-"
    with open(sys.stdin.fileno() if path == "-" else path, "rb", closefd=path != "-") as f:
        spec = orjson.loads(f.read())
    return run(spec)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
