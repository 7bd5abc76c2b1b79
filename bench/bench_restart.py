"""Memory and restart time with many inactive jobs.

Fills a state directory with N inactive test-mode jobs (or reuses one), and
with ``--active M`` M held jobs (active, pending), reports the RSS of the
broker and of the job-list process while they are loaded, the state
directory's size, and the wall time of ``pflux jobs -a`` (its first page) and
``pflux jobs --stats`` (the command, and its request alone), then times
restarts: ``pflux start --state-dir DIR pflux jobs -a -c 1`` lists a job
once every job has been taken up by the job manager and job-list holds them
all, so its wall time (start, restart, first listing, shutdown) is the restart.
The CPU time of all its processes is reported too (steadier on a busy machine),
and when each phase ended, from the instance's log: the KVS open, the job
manager's restart, the instance ready (job-list may still be taking up the
journal's digest), and the job listed (job-list holding every job).

The run that reports memory also writes job-list's cache of inactive jobs if
the state directory has none (a directory filled before the cache existed), so
the timed restarts take inactive jobs from it; ``--no-cache`` removes it before
each timed restart, to time job-list replaying every job from the journal.

    python bench/bench_restart.py -n 100000 --state-dir /tmp/pflux-100k
    python bench/bench_restart.py -n 300000 --active 1000 --state-dir /tmp/pflux-300k
    python bench/bench_restart.py --no-report --active 1000 --state-dir /tmp/pflux-1m
"""

from __future__ import annotations

import argparse
import datetime
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from pflux.api import Client, jobspec_of
from pfluxcmd import pflux_command

BATCH = 5000
PAGE = 1000  # pflux jobs' default --count, as flux's


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


# the log lines that end each phase of a restart, in the order they come
PHASES = (
    ("kvs open", "pflux.kvs INFO: kvs: "),
    ("job manager", "eventlogs replayed"),
    ("ready", "instance ready at"),
    ("listed", "shutdown started"),
)


def phases(t0: float, log: str) -> str:
    """Seconds from ``t0`` to each phase's line in ``log`` (the broker's stderr)."""
    found = []
    for name, text in PHASES:
        for line in log.splitlines():
            if text in line:
                stamp = datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
                found.append(f"{name} {stamp.timestamp() - t0:.2f}")
                break
    return ", ".join(found)


def timed(command: list[str]) -> float:
    t0 = time.time()
    subprocess.run(command, check=True, capture_output=True)
    return time.time() - t0


def fill(n: int, active: int, every: int) -> None:
    """Inside an instance: submit n test-mode jobs and wait until all are inactive, then
    ``active`` held ones (if there are fewer); report what the instance holds. The rate
    (submitted and ended) is printed every ``every`` jobs."""
    jobspec = jobspec_of(["true"], environment={})
    jobspec["attributes"]["system"]["exec"] = {"test": {"run_duration": "0.001s"}}
    with Client() as client:
        start = mark = time.time()
        for done in range(0, n, BATCH):
            client.submit_many([jobspec] * min(BATCH, n - done))
            client.drain()
            ended = min(done + BATCH, n)
            if every and (ended % every == 0 or ended == n):
                now = time.time()
                rate = min(every, ended - (ended - 1) // every * every) / (now - mark)
                print(f"{ended} jobs at {now - start:.0f}s: {rate:.0f} jobs/s", flush=True)
                mark = now
        counts = client.handle.call("job-list.job-stats", {})
        states = counts["job_states"]
        held = active - (states["total"] - states["inactive"])
        if held > 0:
            client.submit_many([jobspec] * held, urgency="hold")
        attrs = client.handle.call("broker.attrs", {})["attrs"]
        broker = int(attrs["pid"])
        module = subprocess.run(  # this instance's job-list process: its argv ends in DIR
            ["pgrep", "-f", f"pflux.broker.module .* pflux.joblist:JobList {attrs['state-dir']}$"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.split()
        t0 = time.time()
        counts = client.handle.call("job-list.job-stats", {})
        stats_rpc = time.time() - t0
        t0 = time.time()
        client.list_jobs(max_entries=PAGE)  # all states, as jobs -a
        list_rpc = time.time() - t0
    states = counts["job_states"]
    total, active = states["total"], states["total"] - states["inactive"]
    print(f"jobs: {total}, {active} active; broker RSS {rss_mb(broker):.0f} MB", end="")
    for pid in module:
        print(f"; job-list RSS {rss_mb(int(pid)):.0f} MB", end="")
    state = Path(attrs["state-dir"])
    size = sum(path.stat().st_size for path in state.glob("*.sqlite*") if path.is_file())
    print(f"; state directory {size / 1e6:.0f} MB")
    jobs_a = timed([pflux_command(), "jobs", "-a"])
    stats = timed([pflux_command(), "jobs", "--stats"])
    print(
        f"pflux jobs -a (first page) {jobs_a:.2f}s (its list request {list_rpc:.3f}s);"
        f" pflux jobs --stats {stats:.2f}s (its request {stats_rpc:.3f}s)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("-n", "--njobs", type=int, default=100000)
    parser.add_argument("--state-dir", type=Path, default=Path("/tmp/pflux-bench-restart"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--active", type=int, default=0, help="held jobs kept active")
    parser.add_argument("--no-cache", action="store_true", help="time restarts without the cache")
    parser.add_argument("--every", type=int, default=10000, help="print the fill rate every N jobs")
    parser.add_argument(
        "--no-report",
        action="store_true",
        help="reuse DIR without the run that reports memory (the timed restarts alone)",
    )
    parser.add_argument("--fill", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fill:
        fill(args.njobs, args.active, args.every)
        return 0
    pflux = [sys.executable, "-m", "pflux.cli", "start", "--state-dir", str(args.state_dir)]
    if not (args.state_dir / "kvs.sqlite").exists():
        t0 = time.time()
        me = [sys.executable, __file__, "--fill", "-n", str(args.njobs), "--active"]
        me += [str(args.active), "--every", str(args.every)]
        subprocess.run([*pflux, "--cores", "16", *me], check=True, env=dict(os.environ))
        print(f"filled in {time.time() - t0:.1f}s")
    elif not args.no_report:
        # report memory with the jobs loaded, without adding any
        me = [sys.executable, __file__, "--fill", "-n", "0", "--active", str(args.active)]
        me += ["--every", "0"]
        subprocess.run([*pflux, *me], check=True, env=dict(os.environ))
    walls, cpus = [], []
    for _ in range(args.repeat):
        if args.no_cache:
            for path in args.state_dir.glob("job-list.sqlite*"):
                path.unlink()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.time()
        jobs = [pflux_command(), "jobs", "-a", "-c", "1"]
        logged = [*pflux[:-2], "-S", "log-stderr-level=6", *pflux[-2:]]
        # on a loaded machine job-list may take longer than a client's 10 s to hold every
        # job, which is what the listing waits for
        env = {**os.environ, "PFLUX_TIMEOUT": "300"}
        done = subprocess.run([*logged, *jobs], check=True, capture_output=True, text=True, env=env)
        walls.append(round(time.time() - t0, 2))
        print(f"  {walls[-1]:.2f}s: {phases(t0, done.stderr)}", flush=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        cpus.append(round(cpu, 2))
    how = "without job-list's cache" if args.no_cache else "with job-list's cache"
    print(
        f"restart {how} (start to ready to stopped): median {statistics.median(walls):.2f}s"
        f" {walls}; CPU median {statistics.median(cpus):.2f}s {cpus}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
