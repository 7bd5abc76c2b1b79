"""Dependency overheads, in test mode (no processes): a chain and a fan-out/fan-in.

- chain: N jobs, each ``afterok`` on the one before; the overhead per link is the
  time from one job's ``clean`` to the next one's ``clean``, less its run time.
- fan: 1 -> W -> 1 (``afterok``): jobs/s over all W + 2 jobs, beside the plain
  throughput of W independent jobs measured the same way.

    python bench/bench_dependencies.py --start            # its own instance
    python bench/bench_dependencies.py --chain 1000 --width 10000
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pflux.api import Client, jobspec_of
from throughput import inactive_times

RUN = 0.001  # seconds each test-mode job "runs"


def test_job(*deps: dict[str, Any]) -> dict[str, Any]:
    spec = jobspec_of(["true"], environment={})
    system = spec["attributes"]["system"]
    system["exec"] = {"test": {"run_duration": f"{RUN}s"}}
    if deps:
        system["dependencies"] = list(deps)
    return spec


def times(client: Client, ids: list[int]) -> list[dict[str, Any]]:
    return inactive_times(client, ids, ("result",))


def chain(client: Client, n: int) -> dict[str, float]:
    first = client.submit(test_job(), urgency="hold")  # all links submitted before it runs
    ids = [int(first)]
    for _ in range(n - 1):
        ids.append(int(client.submit(test_job({"scheme": "afterok", "value": str(ids[-1])}))))
    client.urgency(first, "default")
    client.wait_all(ids)
    inactive = sorted(job["t_inactive"] for job in times(client, ids))
    gaps = [b - a - RUN for a, b in itertools.pairwise(inactive)]
    return {
        "links": n,
        "overhead_ms_median": statistics.median(gaps) * 1e3,
        "overhead_ms_mean": statistics.fmean(gaps) * 1e3,
    }


def rate(client: Client, ids: list[int]) -> float:
    done = times(client, ids)
    first = min(job["t_submit"] for job in done)
    last = max(job["t_inactive"] for job in done)
    return len(done) / (last - first)


def fan(client: Client, width: int) -> dict[str, float]:
    plain = [int(j) for j in client.submit_many([test_job()] * width)]
    client.wait_all(plain)
    plain_rate = rate(client, plain)
    head = client.submit(test_job())
    middle = client.submit_many([test_job({"scheme": "afterok", "value": str(head)})] * width)
    tail = client.submit(test_job(*({"scheme": "afterok", "value": str(j)} for j in middle)))
    ids = [int(head), *map(int, middle), int(tail)]
    client.wait_all(ids)
    fan_rate = rate(client, ids)
    return {
        "width": width,
        "plain_jobs_per_s": plain_rate,
        "fan_jobs_per_s": fan_rate,
        "ratio": fan_rate / plain_rate,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--chain", type=int, default=1000)
    parser.add_argument("--width", type=int, default=10000)
    parser.add_argument("--start", action="store_true", help="start a private instance")
    args = parser.parse_args()
    if args.start:
        with tempfile.TemporaryDirectory(prefix="pflux-bench-") as tmp:
            cmd = [sys.executable, "-m", "pflux.cli", "start", "--state-dir", str(Path(tmp) / "s")]
            cmd += ["--cores", "16", sys.executable, __file__]
            cmd += ["--chain", str(args.chain), "--width", str(args.width)]
            return subprocess.call(cmd, env=dict(os.environ))
    with Client() as client:
        t0 = time.time()
        if args.chain:
            print("chain", chain(client, args.chain))
        if args.width:
            print("fan", fan(client, args.width))
        print(f"total {time.time() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
