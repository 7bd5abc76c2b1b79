"""``pflux run true`` latency: the whole command, start to exit, inside a running instance.

python bench/run_latency.py            # starts its own instance; 25 runs
python bench/run_latency.py -n 50 --inside   # in an instance already (PFLUX_URI)
python bench/run_latency.py --test-size 4 -N 4   # pflux run -N4 true over 4 brokers
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from pfluxcmd import pflux_command


def measure(n: int, nodes: int | None) -> None:
    run = [pflux_command(), "run", *([f"-N{nodes}", f"-n{nodes}"] if nodes else []), "true"]
    subprocess.run(run, check=True)  # warm: the launchers, the caches
    walls = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(run, check=True)
        walls.append(time.perf_counter() - t0)
    walls.sort()
    print(
        f"{' '.join(run[1:])}: median {statistics.median(walls) * 1e3:.0f} ms,"
        f" min {walls[0] * 1e3:.0f} ms, max {walls[-1] * 1e3:.0f} ms ({n} runs)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("-n", "--runs", type=int, default=25)
    parser.add_argument("--test-size", type=int, default=1, help="brokers of the instance")
    parser.add_argument("-N", "--nodes", type=int, default=None, help="ranks per job")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside:
        measure(args.runs, args.nodes)
        return 0
    me = [sys.executable, __file__, "--inside", "-n", str(args.runs)]
    if args.nodes:
        me += ["--nodes", str(args.nodes)]
    start = [sys.executable, "-m", "pflux.cli", "start", "--test-size", str(args.test_size)]
    if args.test_size > 1:
        start += ["--cores", str(args.test_size)]  # a core each, whatever this machine has
    return subprocess.call([*start, *me], env=dict(os.environ))


if __name__ == "__main__":
    sys.exit(main())
