"""Replay a 10,000-job trace in simulated time, and say how long it took.

Generates a trace (durations 1 s to 1 h, log-uniform; a fifth of the jobs
on whole nodes, up to 8; time limits 1 to 3 times the duration; arrivals
that keep 64 nodes of 32 cores 95% busy, so a queue builds and backfill
matters), replays it with ``pflux start --simulate``, and reports the
replay's wall-clock and broker CPU time (the simulator measures them), the
whole command's wall-clock and CPU time (every process of the instance), and
the simulated makespan.

    python bench/bench_simulator.py                       # 10,000 jobs
    python bench/bench_simulator.py -n 2000 --check       # and compare with the offline replay
    python bench/bench_simulator.py --trace T.jsonl --nodes 16 --starts out.jsonl
    python bench/bench_simulator.py --state-dir /tmp/sim   # keep the instance's state

A replay cannot be resumed after a crash (the simulator replays into a new
instance only), so by default its instance has a temporary state directory,
whose KVS is not crash-safe (``[kvs] journal_mode``, docs/architecture.md);
``--state-dir`` makes it a durable one.

``--starts`` writes every job's submit, start and end (seconds after the
start of the simulation) as JSON lines; ``--check`` replays the trace
offline with the scheduler's own policy (``pflux.sim.replay``) and counts
the jobs whose start differs (there should be none).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

EPOCH = 1_700_000_000.0
LOAD = 0.95
NODE_COUNTS = (1, 2, 4, 8)  # of whole-node jobs
TASK_COUNTS = (1, 1, 2, 4, 8, 16, 32)  # of the others, one core each


def generate(path: Path, n: int, nodes: int, cores: int, seed: int) -> None:
    rng = random.Random(seed)
    mean_run = (3600 - 1) / math.log(3600)
    mean_cores = 0.2 * cores * statistics.mean(NODE_COUNTS) + 0.8 * statistics.mean(TASK_COUNTS)
    gap = mean_run * mean_cores / (nodes * cores * LOAD)
    submit = 0.0
    with path.open("w") as out:
        for _ in range(n):
            submit += rng.expovariate(1 / gap)
            run = math.exp(rng.uniform(0, math.log(3600)))
            job: dict[str, Any] = {"submit": round(submit, 3), "duration": round(run, 3)}
            job["timelimit"] = round(run * rng.uniform(1.0, 3.0), 3)
            if rng.random() < 0.2:
                job["nodes"] = rng.choice(NODE_COUNTS)
                job["ntasks"] = job["nodes"] * cores
            else:
                job["ntasks"] = rng.choice(TASK_COUNTS)
            out.write(json.dumps(job) + "\n")


def report_mode(path: str) -> int:
    """Inside the instance: wait for the replay and write the simulator's report."""
    from pflux.api import Client

    with Client() as client:
        report = client.handle.call("simulator.wait", {}, wait=True)
    Path(path).write_text(json.dumps(report))
    return 0


def replay(trace: Path, config: Path, state: Path | None, out: Path) -> tuple[float, float]:
    """Run the instance with this script reporting inside; (wall, CPU) seconds of it all."""
    command = [sys.executable, "-m", "pflux.cli", "start"]
    if state is not None:
        command += ["--state-dir", str(state)]
    command += ["--simulate", str(trace), "--config", str(config)]
    command += [sys.executable, __file__, "--report-to", str(out)]
    env = {k: v for k, v in os.environ.items() if k != "PFLUX_URI"}
    t0 = time.monotonic()
    if subprocess.call(command, env=env):
        raise SystemExit("bench_simulator: pflux start failed")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.monotonic() - t0, usage.ru_utime + usage.ru_stime


def mismatches(trace: Path, config: Path, report: dict[str, Any]) -> int:
    """How many jobs the offline replay starts at another time than the simulation did."""
    import tomllib

    from pflux.sched.inventory import inventory
    from pflux.sim.replay import replay as offline
    from pflux.sim.trace import load

    resources = inventory(tomllib.loads(config.read_text()), "h")
    outcome = offline(load(trace), resources, epoch=report["epoch"])
    return sum(1 for job in report["jobs"] if outcome[job["index"]].start != job.get("start"))


def write_starts(path: Path, report: dict[str, Any]) -> None:
    with path.open("w") as sink:
        for job in report["jobs"]:
            line = {"index": job["index"], "id": job.get("id")}
            for key in ("submit", "start", "end"):
                if job.get(key) is not None:
                    line[key] = round(job[key] - report["epoch"], 6)
            sink.write(json.dumps(line) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("-n", "--jobs", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--cores", type=int, default=32, help="cores per node")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--trace", type=Path, help="replay this trace instead of a generated one")
    parser.add_argument("--state-dir", type=Path, help="the instance's state directory (kept)")
    parser.add_argument("--starts", type=Path, help="write each job's times here (JSON lines)")
    parser.add_argument("--check", action="store_true", help="compare with the offline replay")
    parser.add_argument("--report-to", help=argparse.SUPPRESS)  # the initial program's mode
    args = parser.parse_args()
    if args.report_to:
        return report_mode(args.report_to)
    with tempfile.TemporaryDirectory(prefix="pflux-sim-") as tmp:
        work = Path(tmp)
        trace = args.trace
        if trace is None:
            trace = work / "trace.jsonl"
            generate(trace, args.jobs, args.nodes, args.cores, args.seed)
        config = work / "sim.toml"
        config.write_text(
            f'[[resource.config]]\nhosts = "node[0-{args.nodes - 1}]"\n'
            f'cores = "0-{args.cores - 1}"\n[simulator]\nepoch = {EPOCH}\n'
        )
        out = work / "report.json"
        wall, cpu = replay(trace, config, args.state_dir, out)
        report = json.loads(out.read_text())
        result = {
            "jobs": len(report["jobs"]),
            "started": sum(1 for job in report["jobs"] if job.get("start") is not None),
            "instants": report["steps"] + report["skipped"],
            "passes": report["steps"],
            "replay_wall_s": round(report["wall"], 2),
            "replay_broker_cpu_s": round(report["cpu"], 2),
            "command_wall_s": round(wall, 2),
            "command_cpu_s": round(cpu, 2),
            "makespan_h": round((report["time"] - report["epoch"]) / 3600, 1),
        }
        if args.check:
            result["mismatches"] = mismatches(trace, config, report)
        print(result)
        if args.starts:
            write_starts(args.starts, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
