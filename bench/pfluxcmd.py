"""The ``pflux`` command the benchmarks run: the one beside this interpreter, else the PATH's.

So ``.venv/bin/python bench/X.py`` times the virtual environment's pflux without
the environment being activated.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def pflux_command() -> str:
    beside = Path(sys.executable).with_name("pflux")
    return str(beside) if beside.exists() else shutil.which("pflux") or "pflux"
