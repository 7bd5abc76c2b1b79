"""systemd's own check of a unit in ``etc/``, where ``systemd-analyze`` is installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def verify(unit: Path, installed: str, here: Path, tmp: Path) -> subprocess.CompletedProcess[str]:
    """``systemd-analyze verify`` of ``unit`` with its ExecStart program ``installed``
    (the README's path) replaced by ``here``, this environment's: verify wants it to
    exist. Skips, saying why, where systemd-analyze is not installed."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed: the unit is not checked by systemd")
    copy = tmp / unit.name
    copy.write_text(unit.read_text().replace(installed, str(here)))
    return subprocess.run(
        [analyze, "verify", str(copy)], capture_output=True, text=True, timeout=60, check=False
    )
