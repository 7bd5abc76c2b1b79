"""Job throughput, as flux-core's src/test/throughput.py measures it.

Submits N jobs (test mode by default: ``attributes.system.exec.test.run_duration``,
no processes) with every request in flight at once, waits until all are
inactive, and reports N / (last ``clean`` - first ``submit``) in jobs/s, with
the time from the first submit to the last id acknowledged; with ``--start``,
also the broker's CPU time per job (from submitting to the last job listed).

    python bench/throughput.py -n 10000            # inside an instance (PFLUX_URI)
    python bench/throughput.py -n 10000 --start    # starts its own instance
    python bench/throughput.py -n 1000 --real true # real processes
    python bench/throughput.py -n 10000 --start --test-size 16   # over 16 brokers
    python bench/throughput.py -n 1000 --start --test-size 4 --nodes 4 --real true

The instance ``--start`` makes has, for test-mode jobs, 256 cores: the 8 nodes of
32 cores that flux-core's src/test/sched-bench.sh simulates by default. Test-mode
jobs run nothing, so the cores are only slots; with few of them the figure is the
time a slot takes to turn over (a 1 ms job, then several loop turns from its
finish to the next job's start) rather than the job manager's throughput. Real
jobs get the machine's own cores. With ``--test-size N`` the instance is N brokers
on this machine, the cores split among them (test mode: each rank its share of
the 256); ``--nodes`` asks each job for that many ranks (``-N``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pflux.api import Client, jobspec_of

SIM_CORES = 256  # test mode's instance: 8 nodes x 32 cores, as flux-core's sched-bench.sh


def inactive_times(client: Client, ids: list[Any], attrs: tuple[str, ...] = ()) -> list[Any]:
    """job-list's entries for ``ids``, each once job-list has seen it inactive.

    The job manager answers a wait or a drain once a job's end is committed;
    job-list, fed by the journal, may be a few events behind it then.
    """
    wanted = ["t_submit", "t_inactive", *attrs]
    mine = {int(i) for i in ids}
    jobs = [j.to_dict() for j in client.list_jobs(attrs=wanted) if j.id in mine]
    for i, job in enumerate(jobs):
        if "t_inactive" not in job:
            payload = {"id": job["id"], "attrs": wanted, "state": 64}  # 64: INACTIVE
            jobs[i] = client.handle.call("job-list.list-id", payload)["job"]
    return jobs


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system, all threads) that process ``pid`` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(
    uri: str | None,
    n: int,
    real: list[str] | None,
    cores: int,
    broker: int | None = None,
    *,
    nodes: int | None = None,
) -> dict[str, float]:
    shape = {"cores_per_task": cores, "num_nodes": nodes, "num_tasks": nodes or 1}
    if real:
        jobspec = jobspec_of(real, **shape)
    else:
        jobspec = jobspec_of(["true"], environment={}, **shape)
        jobspec["attributes"]["system"]["exec"] = {"test": {"run_duration": "0.001s"}}
    with Client(uri) as client:
        cpu0 = cpu_seconds(broker) if broker else 0.0
        t0 = time.time()
        ids = client.submit_many([jobspec] * n)
        t_acked = time.time()
        client.drain()
        t_drained = time.time()
        times = inactive_times(client, ids)
        cpu = cpu_seconds(broker) - cpu0 if broker else None
    first = min(j["t_submit"] for j in times)
    last = max(j["t_inactive"] for j in times)
    result = {
        "jobs": n,
        "submit_s": t_acked - t0,
        "wall_s": t_drained - t0,
        "jobs_per_s": n / (last - first),
    }
    if cpu is not None:
        result["broker_cpu_us_per_job"] = cpu / n * 1e6
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("-n", "--njobs", type=int, default=1000)
    parser.add_argument("-c", "--cores", type=int, default=1, help="cores per job")
    parser.add_argument("--real", nargs=argparse.REMAINDER, help="run this command for real")
    parser.add_argument("--start", action="store_true", help="start a private instance")
    parser.add_argument(
        "--instance-cores",
        type=int,
        default=None,
        help=f"the instance's cores (default: {SIM_CORES} for test mode, else this machine's)",
    )
    parser.add_argument("--test-size", type=int, default=1, help="brokers of the instance")
    parser.add_argument("-N", "--nodes", type=int, default=None, help="ranks per job")
    parser.add_argument("--parent-is-broker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.start:
        broker = os.getppid() if args.parent_is_broker else None
        print(measure(None, args.njobs, args.real, args.cores, broker, nodes=args.nodes))
        return 0
    with tempfile.TemporaryDirectory(prefix="pflux-bench-") as tmp:
        cmd = [sys.executable, "-m", "pflux.cli", "start", "--state-dir", str(Path(tmp) / "s")]
        cores = args.instance_cores or (None if args.real else SIM_CORES)
        if args.test_size > 1:
            cmd += ["--test-size", str(args.test_size)]  # the ranks share --cores
        if cores:
            cmd += ["--cores", str(cores)]
        script = [sys.executable, __file__, "-n", str(args.njobs), "-c", str(args.cores)]
        if args.nodes:
            script += ["--nodes", str(args.nodes)]
        script.append("--parent-is-broker")  # the instance runs it: report the broker's CPU
        if args.real:
            script += ["--real", *args.real]
        env = dict(os.environ)
        return subprocess.call([*cmd, *script], env=env)


if __name__ == "__main__":
    sys.exit(main())
