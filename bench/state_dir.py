"""Real jobs through an instance with a state directory against a temporary instance.

Each round runs ``pflux submit --cc=1-N --quiet true`` then ``pflux queue drain``
inside a fresh ``pflux start --state-dir DIR`` (DIR new, so crash-safe: a WAL, the
KVS's redo log) and inside a fresh ``pflux start`` (a temporary instance, whose
state nothing can restart from), the two alternating, and prints each run's
jobs/s (N over the time from the submit to the end of the drain) and the broker's
CPU a job, then the medians and the median of the rounds' ratios (state
directory over temporary): pairs that run back to back share the machine's load,
which drifts between separate runs.

    python bench/state_dir.py -n 1500 --rounds 6
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from pfluxcmd import pflux_command

# inside the instance: the rate and the broker's CPU a job (the broker is the parent)
INNER = r"""
set -e
n=$1
cpu() { awk '{print $14+$15}' /proc/$PPID/stat; }
b0=$(cpu); t0=$(date +%s.%N)
pflux submit --cc=1-$n --quiet true
pflux queue drain
t1=$(date +%s.%N); b1=$(cpu)
echo "RESULT $n $t0 $t1 $b0 $b1 $(getconf CLK_TCK)"
"""


def run(pflux: str, njobs: int, state_dir: Path | None) -> tuple[float, float]:
    """One instance's jobs/s and broker CPU (ms) a job."""
    where = ["--state-dir", str(state_dir)] if state_dir is not None else []
    out = subprocess.run(
        [pflux, "start", *where, "sh", "-c", INNER, "inner", str(njobs)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    line = next(line for line in out.splitlines() if line.startswith("RESULT "))
    n, t0, t1, b0, b1, hz = (float(x) for x in line.split()[1:])
    return n / (t1 - t0), (b1 - b0) * 1000 / hz / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--njobs", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    pflux = pflux_command()
    kept: list[tuple[float, float]] = []
    temporary: list[tuple[float, float]] = []
    for i in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="pflux-bench-") as scratch:
            kept.append(run(pflux, args.njobs, Path(scratch) / "state"))
        temporary.append(run(pflux, args.njobs, None))
        print(
            f"round {i + 1}: state directory {kept[-1][0]:.0f} jobs/s"
            f" (broker {kept[-1][1]:.3f} ms a job), temporary {temporary[-1][0]:.0f}"
            f" ({temporary[-1][1]:.3f})",
            flush=True,
        )
    ratio = statistics.median(k[0] / t[0] for k, t in zip(kept, temporary, strict=True))
    print(
        f"state directory {statistics.median(k[0] for k in kept):.0f} jobs/s"
        f" (broker {statistics.median(k[1] for k in kept):.3f} ms a job),"
        f" temporary {statistics.median(t[0] for t in temporary):.0f}"
        f" ({statistics.median(t[1] for t in temporary):.3f}); ratio {ratio:.3f}"
    )


if __name__ == "__main__":
    sys.exit(main())
