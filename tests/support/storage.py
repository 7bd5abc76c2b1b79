"""Storage-fault tests' helpers: ``pflux start`` run to completion, and its verdict."""

from __future__ import annotations

import subprocess
from pathlib import Path

from support.instance import PFLUX, environ


def start(
    state: Path, *args: str, command: tuple[str, ...] = ("true",)
) -> subprocess.CompletedProcess[str]:
    """``pflux start --state-dir STATE ARGS COMMAND``, waited for."""
    return subprocess.run(
        [str(PFLUX), "start", "--state-dir", str(state), "--cores", "1", *args, *command],
        capture_output=True,
        text=True,
        env=environ(),
        timeout=120,
        check=False,
    )


def refused(proc: subprocess.CompletedProcess[str], *names: str) -> str:
    """The one error line of a start that refused, naming each of ``names``."""
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("pflux-start: ERROR: ")]
    assert len(errors) == 1, proc.stderr
    for name in names:
        assert name in errors[0], errors[0]
    return errors[0]
