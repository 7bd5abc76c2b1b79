"""``flux.job.FluxExecutor`` throughput, and what ``import flux`` costs a script.

Starts an instance (``pflux start``; ``--cores``, default the machine's) whose
initial program is this script again, in a clean interpreter (``-I``: no
site-packages) with only the ``flux`` package's directory on ``sys.path``, as a
tool's own interpreter would have it. There it submits ``-n`` ``true`` jobs
through one ``FluxExecutor`` (all of them, then ``result()`` of each) and prints
jobs per second, first submit to last result, for each of ``--runs`` runs and
their median, with the CPU time a job costs this process and the broker. Then
``import flux``, ``import flux.job`` and ``from flux.job import FluxExecutor``
are timed, each in a fresh clean interpreter (median of ``--imports``).

    .venv/bin/python bench/bench_executor.py            # 1,000 jobs, 3 runs

Run by hand or by ``make bench``; never part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SHIM = Path(__file__).resolve().parent.parent / "src" / "pflux" / "fluxshim" / "python"


def broker_seconds() -> float:
    """CPU time the broker (``pflux start``, this process's parent) has used so far."""
    fields = Path(f"/proc/{os.getppid()}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(jobs: int, runs: int) -> None:
    """Inside the instance: each run's jobs/s through FluxExecutor, then the median."""
    sys.path.insert(0, str(SHIM))
    from flux.job import FluxExecutor, JobspecV1

    jobspec = JobspecV1.from_command(["true"])
    rates = []
    with FluxExecutor() as executor:
        for run in range(runs):
            start = time.perf_counter()
            cpu = time.process_time()
            broker_cpu = broker_seconds()
            futures = [executor.submit(jobspec) for _ in range(jobs)]
            codes = [future.result() for future in futures]
            elapsed = time.perf_counter() - start
            cpu = time.process_time() - cpu
            broker_cpu = broker_seconds() - broker_cpu
            if set(codes) != {0}:
                raise SystemExit(f"run {run + 1}: exit codes {sorted(set(codes))}, expected 0")
            rates.append(jobs / elapsed)
            print(
                f"run {run + 1}: {jobs} jobs in {elapsed:.2f} s: {rates[-1]:.0f} jobs/s;"
                f" CPU a job: this process (the flux package) {cpu / jobs * 1e6:.0f} us,"
                f" the broker {broker_cpu / jobs * 1e6:.0f} us"
            )
    print(f"FluxExecutor, {jobs} true jobs: median {statistics.median(rates):.0f} jobs/s")


def import_ms(statement: str, times: int) -> float:
    """Median time (ms) ``statement`` takes in a fresh clean interpreter, timed inside it."""
    code = (
        f"import sys, time; sys.path.insert(0, {str(SHIM)!r}); t = time.perf_counter(); "
        f"{statement}; print(time.perf_counter() - t)"
    )
    samples = []
    for _ in range(times):
        run = [sys.executable, "-I", "-c", code]
        out = subprocess.run(run, check=True, capture_output=True, text=True).stdout
        samples.append(float(out) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("-n", "--jobs", type=int, default=1000, help="jobs per run (1000)")
    parser.add_argument("--runs", type=int, default=3, help="runs (3)")
    parser.add_argument("--cores", type=int, help="the instance's cores (the machine's)")
    parser.add_argument("--imports", type=int, default=11, help="import timings (11)")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.jobs < 1 or args.runs < 1 or args.imports < 1:
        parser.error("-n, --runs and --imports must be at least 1")
    if args.inside:
        measure(args.jobs, args.runs)
        return
    pflux = [sys.executable, "-m", "pflux.cli", "start"]
    if args.cores is not None:
        pflux += ["--cores", str(args.cores)]
    inside = [sys.executable, "-I", __file__, "--inside", "-n", str(args.jobs)]
    subprocess.run([*pflux, *inside, "--runs", str(args.runs)], check=True)
    timed = ("import flux", "import flux.job", "from flux.job import FluxExecutor")
    print(
        ", ".join(f"{what}: {import_ms(what, args.imports):.2f} ms" for what in timed)
        + f" (medians of {args.imports}, each in a fresh python -I)"
    )


if __name__ == "__main__":
    main()
