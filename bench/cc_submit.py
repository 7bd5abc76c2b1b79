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
    python bench/cc_submit.py -n 5000 --api 5   # against submit_many, alternating

With ``--api ROUNDS`` the command and ``throughput.py``'s ``submit_many`` of the same
jobs alternate in one instance, ROUNDS of each, and the medians and the median of
the rounds' ratios (the command's rate over the API's) come last: pairs that run
back to back share the machine's load, which drifts between separate runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import throughput
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
            # this command's jobs: those submitted since it started (rounds share an instance)
            listed = client.list_jobs(attrs=["t_submit"])
            ids = [job.id for job in listed if job.to_dict()["t_submit"] >= t0]
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
    parser.add_argument(
        "--api",
        type=int,
        metavar="ROUNDS",
        default=0,
        help="alternate with throughput.py's submit_many in one instance, ROUNDS times",
    )
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside and args.api:
        rounds(args.njobs, args.form, args.api)
        return 0
    if args.inside:
        print(measure(args.njobs, not args.no_rate, args.form), flush=True)
        return 0
    with tempfile.TemporaryDirectory(prefix="pflux-bench-") as tmp:
        start = [pflux_command(), "start", "--state-dir", str(Path(tmp) / "s")]
        me = [sys.executable, __file__, "--inside", "-n", str(args.njobs), "--form", args.form]
        if args.no_rate:
            me.append("--no-rate")
        if args.api:
            me += ["--api", str(args.api)]
        return subprocess.call([*start, "--cores", str(SIM_CORES), *me])


def rounds(n: int, form: str, count: int) -> None:
    """``count`` rounds in this instance, each the command and ``throughput.py``'s
    ``submit_many`` of the same N jobs, which first alternating; each round's rates,
    then their medians and the median of the rounds' ratios."""
    cli, api, ratios = [], [], []
    for i in range(count):
        pair = {}
        for side in ("cli", "api") if i % 2 == 0 else ("api", "cli"):
            if side == "cli":
                pair[side] = measure(n, True, form)["jobs_per_s"]
            else:
                pair[side] = throughput.measure(None, n, None, 1)["jobs_per_s"]
        print({"round": i + 1, **pair, "ratio": pair["cli"] / pair["api"]}, flush=True)
        cli.append(pair["cli"])
        api.append(pair["api"])
        ratios.append(pair["cli"] / pair["api"])
    median = statistics.median
    print({"cli": median(cli), "api": median(api), "ratio": median(ratios)}, flush=True)


if __name__ == "__main__":
    sys.exit(main())
