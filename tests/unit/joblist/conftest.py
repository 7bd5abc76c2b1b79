"""Make ``joblist_entries`` (journal entries for the job-list tests) importable.

pytest runs in importlib mode, which puts no test directory on ``sys.path``;
the job-list tests and ``bench/bench_joblist.py`` share that one helper module.
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
