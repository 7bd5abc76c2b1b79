"""Jobspec decode + validate rate on one core, for RFC 25's main example.

The example is the test suite's copy (tests/data/rfc25, read by tests/support/rfc25.py).
Run with the project's interpreter: ``.venv/bin/python bench/bench_jobspec.py``.
Each figure is the median of several repeats, timed in this process's CPU time
(steadier than wall-clock time on a shared machine); the target for JSON bytes
is 50,000 jobspecs per second.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from pflux.errors import JobspecError
from pflux.spec import builder, jobspec
from support import rfc25

TARGET = 50_000

EXAMPLE_YAML = rfc25.text()
EXAMPLE_JSON = jobspec.dumps(jobspec.loads(EXAMPLE_YAML))
# five problems: node count 0, core count 0, per_slot 0, an unknown task key, duration "1h"
INVALID_JSON = json.dumps(rfc25.broken(), separators=(",", ":")).encode()


def submitted() -> dict[str, object]:
    """What ``pflux submit -n2 app`` sends job-ingest: a 40-variable environment, rlimits."""
    environment = {f"VARIABLE_{i}": f"/some/value/{i}" * 2 for i in range(40)}
    doc = builder.from_command(["app"], num_tasks=2, environment=environment, cwd="/home/user")
    limits = {"core": 0, "cpu": -1, "data": -1, "fsize": -1, "nofile": 1024, "stack": 8388608}
    builder.set_shell_option(doc, "rlimit", limits)
    return doc


def rate(func: Callable[[], object], repeats: int = 9) -> float:
    """Calls per second: the median of ``repeats`` runs of about 0.2 s each."""
    timer = timeit.Timer(func, timer=time.process_time)
    number, _ = timer.autorange()
    return number / statistics.median(timer.repeat(repeat=repeats, number=number))


def rejected(data: bytes) -> Callable[[], None]:
    def call() -> None:
        try:
            jobspec.loads(data)
        except JobspecError:
            return
        raise AssertionError("the invalid jobspec was accepted")

    return call


SUBMITTED = submitted()


def main() -> int:
    decoded = jobspec.decode(EXAMPLE_JSON)
    cases = (
        ("JSON bytes, valid (RFC 25 example)", lambda: jobspec.loads(EXAMPLE_JSON)),
        ("YAML text, valid (RFC 25 example)", lambda: jobspec.loads(EXAMPLE_YAML)),
        ("JSON bytes, invalid (5 problems)", rejected(INVALID_JSON)),
        ("validate only, valid dict", lambda: jobspec.validate(decoded)),
        ("validate only, pflux submit's jobspec", lambda: jobspec.validate(SUBMITTED)),
    )
    print(f"{'decode + validate':42} {'per s':>10} {'µs each':>9}")
    results = {}
    for name, func in cases:
        per_second = rate(func)
        results[name] = per_second
        print(f"{name:42} {per_second:10,.0f} {1e6 / per_second:9.1f}")
    json_rate = results[cases[0][0]]
    verdict = "meets" if json_rate >= TARGET else "MISSES"
    print(f"JSON bytes: {json_rate:,.0f}/s {verdict} the target of {TARGET:,}/s")
    return 0 if json_rate >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
