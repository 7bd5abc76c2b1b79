"""``pflux python``: this interpreter with the flux package's directory first on PYTHONPATH."""

from __future__ import annotations

from pathlib import Path

import pflux
from support.instance import console

SHIM = Path(pflux.__file__).parent / "fluxshim" / "python"


def test_python_runs_with_the_shim_on_the_path() -> None:
    code = "import os, sys; print(os.environ['PYTHONPATH']); print(sys.path[1]); sys.exit(3)"
    proc = console("python", "-c", code, PYTHONPATH="/elsewhere")
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout.splitlines() == [f"{SHIM}:/elsewhere", str(SHIM)]


def test_get_path_and_list_versions() -> None:
    assert console("python", "--get-path").stdout == f"{SHIM}\n"
    proc = console("python", "--list-versions")
    assert proc.returncode == 1
    assert "--list-versions: pflux has one flux package" in proc.stderr
