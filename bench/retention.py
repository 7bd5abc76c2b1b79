"""Retention: memory and disk of an instance as test-mode jobs pass through it.

Starts an instance with a state directory (256 test-mode cores, as
bench/throughput.py) and, with ``--limit N``, ``[job-manager]
inactive-num-limit = N``; submits jobs in chunks, and at each checkpoint
(once every job so far is inactive and the limit's purge has caught up)
prints the broker's and job-list's resident memory and the state directory's
size. Jobs go in chunks, each drained before the next, so what is measured is
what the instance keeps, not the peak of a backlog of pending jobs. With the
limit, all three should stay flat once N jobs have ended.

    python bench/retention.py -n 1000000 --limit 10000 --at 10000,100000,500000,1000000
    python bench/retention.py -n 200000 --at 10000,100000,200000        # no limit
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pflux.api import Client, jobspec_of

CORES = 256
CHUNK = 2000  # jobs submitted at once, then drained
SETTLE = 120.0  # seconds the limit's purge may take to catch up at a checkpoint


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(p) for p in (task / "children").read_text().split()]
    return found


def job_list_pid(broker: int) -> int:
    """The module process running job-list: the broker's child named as one."""
    for pid in children(broker):
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        if b"job-list" in cmdline or b"pflux.broker.module" in cmdline:
            return pid
    raise RuntimeError("no job-list process found")


def disk_kib(path: Path) -> int:
    """Bytes the state directory's files take (their sizes, sparse or not), in KiB."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) // 1024


def mib(path: Path) -> float:
    return path.stat().st_size / 2**20 if path.exists() else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("-n", "--njobs", type=int, default=100_000)
    parser.add_argument("--limit", type=int, default=None, help="inactive-num-limit")
    parser.add_argument("--at", default="10000,100000", help="checkpoints, comma-separated")
    args = parser.parse_args()
    marks = sorted({int(x) for x in args.at.split(",") if int(x) <= args.njobs})
    with tempfile.TemporaryDirectory(prefix="pflux-retention-") as tmp:
        state = Path(tmp) / "state"
        cmd = [sys.executable, "-m", "pflux.cli", "start", "--state-dir", str(state)]
        cmd += ["--cores", str(CORES)]
        if args.limit is not None:
            config = Path(tmp) / "limit.toml"
            config.write_text(f"[job-manager]\ninactive-num-limit = {args.limit}\n")
            cmd += ["--config", str(config)]
        cmd += ["sh", "-c", 'echo "$PFLUX_URI"; exec cat >/dev/null']
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        assert proc.stdin is not None
        uri = proc.stdout.readline().strip()
        try:
            run(uri, proc.pid, state, marks, args.limit)
        finally:
            proc.stdin.close()
            proc.wait(timeout=300)
    return 0


def run(uri: str, broker: int, state: Path, marks: list[int], limit: int | None) -> None:
    jobspec = jobspec_of(["true"], environment={})
    jobspec["attributes"]["system"]["exec"] = {"test": {"run_duration": "0.001s"}}
    joblist = job_list_pid(broker)
    print(f"limit={limit} cores={CORES}", flush=True)
    print(
        f"{'jobs':>9} {'jobs/s':>7} {'broker MiB':>10} {'job-list MiB':>12} {'state MiB':>9}"
        f" {'kvs.sqlite':>10} {'-wal':>6} {'job-list.sqlite':>15}"
    )
    done = 0
    t0 = time.monotonic()
    with Client(uri) as client:
        for mark in marks:
            while done < mark:  # a chunk at a time: memory as it stays, not a backlog's peak
                n = min(CHUNK, mark - done)
                client.submit_many([jobspec] * n)
                client.drain()
                done += n
            rate = done / (time.monotonic() - t0)
            if limit is not None:  # the purge follows each job's end a turn later
                deadline = time.monotonic() + SETTLE
                while client.purge()[1] > limit and time.monotonic() < deadline:
                    time.sleep(0.1)
                client.list_jobs(max_entries=1)  # job-list has what the journal said
            print(
                f"{done:>9} {rate:>7.0f} {rss_kib(broker) / 1024:>10.1f}"
                f" {rss_kib(joblist) / 1024:>12.1f} {disk_kib(state) / 1024:>9.1f}"
                f" {mib(state / 'kvs.sqlite'):>10.1f} {mib(state / 'kvs.sqlite-wal'):>6.1f}"
                f" {mib(state / 'job-list.sqlite'):>15.1f}",
                flush=True,
            )


if __name__ == "__main__":
    sys.exit(main())
