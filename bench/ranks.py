"""``pflux start --test-size=N``: how long N brokers take to come up, and to go.

    python bench/ranks.py --size 16 -n 5

Each run times ``pflux start --test-size=N`` with an initial program that notes
when it runs (every rank has said hello by then) and exits: "up" is from the
command's start to that moment, "down" from then to the command's exit.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from pfluxcmd import pflux_command


def once(size: int) -> tuple[float, float]:
    note = [sys.executable, "-c", "import time; print(time.time())"]
    t0 = time.time()
    out = subprocess.run(
        [pflux_command(), "start", f"--test-size={size}", f"--cores={size}", *note],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    t_end = time.time()
    ready = float(out.split()[-1])
    return ready - t0, t_end - ready


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--size", type=int, default=16)
    parser.add_argument("-n", "--runs", type=int, default=5)
    args = parser.parse_args()
    ups, downs = zip(*(once(args.size) for _ in range(args.runs)), strict=True)
    print(
        f"--test-size={args.size}: up {statistics.median(ups) * 1e3:.0f} ms,"
        f" down {statistics.median(downs) * 1e3:.0f} ms (medians of {args.runs} runs)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
