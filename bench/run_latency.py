"""``pflux run true`` latency: the whole command, start to exit, inside a running instance.

python bench/run_latency.py            # starts its own instance; 25 runs
python bench/run_latency.py -n 50 --inside   # in an instance already (PFLUX_URI)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from pfluxcmd import pflux_command


def measure(n: int) -> None:
    pflux = pflux_command()
    subprocess.run([pflux, "run", "true"], check=True)  # warm: the launcher, the caches
    walls = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run([pflux, "run", "true"], check=True)
        walls.append(time.perf_counter() - t0)
    walls.sort()
    print(
        f"pflux run true: median {statistics.median(walls) * 1e3:.0f} ms,"
        f" min {walls[0] * 1e3:.0f} ms, max {walls[-1] * 1e3:.0f} ms ({n} runs)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("-n", "--runs", type=int, default=25)
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside:
        measure(args.runs)
        return 0
    me = [sys.executable, __file__, "--inside", "-n", str(args.runs)]
    return subprocess.call([sys.executable, "-m", "pflux.cli", "start", *me], env=dict(os.environ))


if __name__ == "__main__":
    sys.exit(main())
