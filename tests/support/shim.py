"""Running code against pflux's ``flux`` package the way tools do: in a clean
interpreter (``-I``: no site-packages, no PYTHON* variables), with only the
package's directory put on ``sys.path`` and ``FLUX_URI`` naming the instance."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pflux

SHIM_PYTHON = Path(pflux.__file__).parent / "fluxshim" / "python"


def run_flux(
    code: str, uri: str | None, *, timeout: float = 60, python: str = sys.executable
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` (dedented) in ``python -I``; FLUX_URI is ``uri`` (None: unset)."""
    prologue = f"import sys\nsys.path.insert(0, {str(SHIM_PYTHON)!r})\n"
    env = {k: v for k, v in os.environ.items() if not k.endswith("FLUX_URI")}
    if uri is not None:
        env["FLUX_URI"] = uri
    return subprocess.run(
        [python, "-I", "-c", prologue + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )


def flux_output(code: str, uri: str | None) -> str:
    """``run_flux``'s stdout; a failure (exit status not 0) fails the test with stderr."""
    proc = run_flux(code, uri)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout
