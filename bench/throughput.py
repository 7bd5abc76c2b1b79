"""Job throughput, as flux-core's src/test/throughput.py measures it.

Submits N jobs (test mode by default: ``attributes.system.exec.test.run_duration``,
no processes) with every request in flight at once, waits until all are
inactive, and reports N / (last ``clean`` - first ``submit``) in jobs/s, with
the time from the first submit to the last id acknowledged.

    python bench/throughput.py -n 10000            # inside an instance (PFLUX_URI)
    python bench/throughput.py -n 10000 --start    # starts its own instance
    python bench/throughput.py -n 1000 --real true # real processes
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pflux.api import Client, jobspec_of


def measure(uri: str | None, n: int, real: list[str] | None, cores: int) -> dict[str, float]:
    if real:
        jobspec = jobspec_of(real, cores_per_task=cores)
    else:
        jobspec = jobspec_of(["true"], cores_per_task=cores, environment={})
        jobspec["attributes"]["system"]["exec"] = {"test": {"run_duration": "0.001s"}}
    with Client(uri) as client:
        t0 = time.time()
        ids = client.submit_many([jobspec] * n)
        t_acked = time.time()
        client.handle.call("job-manager.drain", {})
        t_drained = time.time()
        jobs = client.list_jobs(attrs=["t_submit", "t_inactive"])
    mine = {int(i) for i in ids}
    times = [j for j in jobs if j["id"] in mine]
    first = min(j["t_submit"] for j in times)
    last = max(j["t_inactive"] for j in times)
    return {
        "jobs": n,
        "submit_s": t_acked - t0,
        "wall_s": t_drained - t0,
        "jobs_per_s": n / (last - first),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("-n", "--njobs", type=int, default=1000)
    parser.add_argument("-c", "--cores", type=int, default=1, help="cores per job")
    parser.add_argument("--real", nargs=argparse.REMAINDER, help="run this command for real")
    parser.add_argument("--start", action="store_true", help="start a private instance")
    parser.add_argument("--instance-cores", type=int, default=None)
    args = parser.parse_args()
    if not args.start:
        print(measure(None, args.njobs, args.real, args.cores))
        return 0
    with tempfile.TemporaryDirectory(prefix="pflux-bench-") as tmp:
        cmd = [sys.executable, "-m", "pflux.cli", "start", "--state-dir", str(Path(tmp) / "s")]
        if args.instance_cores:
            cmd += ["--cores", str(args.instance_cores)]
        script = [sys.executable, __file__, "-n", str(args.njobs), "-c", str(args.cores)]
        if args.real:
            script += ["--real", *args.real]
        env = dict(os.environ)
        return subprocess.call([*cmd, *script], env=env)


if __name__ == "__main__":
    sys.exit(main())
