"""``pflux submit --cc=1-N``: the client's peak memory and the job throughput.

Starts an instance of 256 cores, as ``throughput.py --start`` does, and runs inside
it ``pflux submit --cc=1-N --quiet`` of test-mode jobs (1 ms each, no process;
``--env=-*``: the environment empty, as ``throughput.py``'s jobs have it),
reporting the client's peak RSS (the kernel's high-water mark, /proc's VmHWM, as
wait4 gives it), its wall time, N over the time from the command's start until
every job is inactive, and N / (last ``clean`` - first ``submit``) in jobs/s, the
figure ``throughput.py`` reports for the API's ``submit_many``.

    python bench/cc_submit.py -n 10000
    python bench/cc_submit.py -n 1000000 --no-rate   # memory only: no listing
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pflux.api import Client
from pfluxcmd import pflux_command
from throughput import SIM_CORES, inactive_times


def measure(n: int, rate: bool) -> dict[str, float]:
    command = [
        pflux_command(),
        "submit",
        f"--cc=1-{n}",
        "--quiet",
        "--env=-*",
        "--setattr=system.exec.test.run_duration=0.001s",
        "true",
    ]
    t0 = time.time()
    proc = subprocess.Popen(command)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    result: dict[str, float] = {
        "jobs": n,
        "client_peak_rss_mb": usage.ru_maxrss / 1024,
        "client_s": time.time() - t0,
        "status": proc.returncode,
    }
    with Client() as client:
        client.drain()
        result["wall_s"] = time.time() - t0
        result["jobs_per_s_wall"] = n / result["wall_s"]
        if rate:
            ids = [job.id for job in client.list_jobs(attrs=["t_submit"])]
            times = inactive_times(client, ids)
            first = min(j["t_submit"] for j in times)
            last = max(j["t_inactive"] for j in times)
            result["jobs_per_s"] = n / (last - first)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("-n", "--njobs", type=int, default=10000)
    parser.add_argument("--no-rate", action="store_true", help="skip listing the jobs")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside:
        print(measure(args.njobs, not args.no_rate), flush=True)
        return 0
    with tempfile.TemporaryDirectory(prefix="pflux-bench-") as tmp:
        start = [pflux_command(), "start", "--state-dir", str(Path(tmp) / "s")]
        me = [sys.executable, __file__, "--inside", "-n", str(args.njobs)]
        if args.no_rate:
            me.append("--no-rate")
        return subprocess.call([*start, "--cores", str(SIM_CORES), *me])


if __name__ == "__main__":
    sys.exit(main())
