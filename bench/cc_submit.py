"""``pflux submit --cc=1-N``: the client's peak memory and CPU time, and the job throughput.

Starts an instance of 256 cores, as ``throughput.py --start`` does, and runs inside
it ``pflux submit --cc=1-N --quiet`` of test-mode jobs (1 ms each, no process;
``--env=-*``: the environment empty, as ``throughput.py``'s jobs have it),
reporting the client's peak RSS (the kernel's high-water mark, /proc's VmHWM, as
wait4 gives it) and CPU time (user and system), its wall time, N over the time
from the command's start until every job is inactive, and N / (last ``clean`` -
first ``submit``) in jobs/s, the figure ``throughput.py`` reports for the API's
``submit_many``. ``--form`` picks the command: ``cc`` (the same job N times),
``cc-names`` (``{cc}`` in the job's name and command, so each copy differs) or
``bulksubmit`` (a job per line of N, ``{}`` in its name and command).

    python bench/cc_submit.py -n 10000
    python bench/cc_submit.py -n 10000 --form bulksubmit
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

FORMS = {
    "cc": ["submit", "--cc=1-{n}", "true"],
    "cc-names": ["submit", "--cc=1-{n}", "--job-name=copy{{cc}}", "true", "{{cc}}"],
    "bulksubmit": ["bulksubmit", "--job-name=input{{}}", "true", "{{}}", "::::", "{inputs}"],
}
TEST_MODE = ["--quiet", "--env=-*", "--setattr=system.exec.test.run_duration=0.001s"]


def command_of(form: str, n: int, inputs: str) -> list[str]:
    """The ``pflux`` command line of ``form`` for ``n`` jobs (``inputs``: bulksubmit's file)."""
    words = [word.format(n=n, inputs=inputs) for word in FORMS[form]]
    return [pflux_command(), words[0], *TEST_MODE, *words[1:]]


def measure(n: int, rate: bool, form: str = "cc") -> dict[str, float]:
    inputs = Path(tempfile.mkdtemp(prefix="pflux-bench-")) / "inputs"
    inputs.write_text("".join(f"{i}\n" for i in range(1, n + 1)))
    command = command_of(form, n, str(inputs))
    t0 = time.time()
    proc = subprocess.Popen(command)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    inputs.unlink()
    inputs.parent.rmdir()
    result: dict[str, float] = {
        "jobs": n,
        "client_peak_rss_mb": usage.ru_maxrss / 1024,
        "client_cpu_s": usage.ru_utime + usage.ru_stime,
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
    parser.add_argument("--form", choices=FORMS, default="cc", help="the command (default cc)")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside:
        print(measure(args.njobs, not args.no_rate, args.form), flush=True)
        return 0
    with tempfile.TemporaryDirectory(prefix="pflux-bench-") as tmp:
        start = [pflux_command(), "start", "--state-dir", str(Path(tmp) / "s")]
        me = [sys.executable, __file__, "--inside", "-n", str(args.njobs), "--form", args.form]
        if args.no_rate:
            me.append("--no-rate")
        return subprocess.call([*start, "--cores", str(SIM_CORES), *me])


if __name__ == "__main__":
    sys.exit(main())
