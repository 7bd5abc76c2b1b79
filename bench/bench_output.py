"""Output throughput: one job printing N MB to stdout, captured in the KVS and attached to live.

Starts a private instance, submits ``yes LINE | head -c N`` (80-byte lines)
and runs ``pflux job attach`` on it at once, writing to a file; then reads
the whole ``output`` eventlog back once the job is inactive (``pflux job
eventlog -p output``, the reader that starts after the fact). It reports how
long the job ran, how long after its end attach had everything, whether
attach and the eventlog hold every byte, and the peak resident memory
(VmHWM) of every process of the instance (broker, job-list, launcher, job
shell) and of the two readers.

    python bench/bench_output.py            # 100 MB
    python bench/bench_output.py --mb 10

Run by hand or by ``./scripts/bench``; never part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from pfluxcmd import pflux_command

LINE = "0123456789" * 7 + "abcdefghi"  # 79 characters and a newline


def peak_kib(pid: int) -> int:
    """The process's peak resident set (VmHWM), in KiB; 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except FileNotFoundError:
        return []


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode()
    except FileNotFoundError:
        return ""


class Peaks:
    """Samples the instance's processes' VmHWM until stopped (a shell lives only so long)."""

    def __init__(self, broker: int) -> None:
        self.broker = broker
        self.peaks: dict[str, int] = {}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _name(self, pid: int, parent: str) -> str:
        line = cmdline(pid)
        if "pflux.shell.launcher" in line:
            return "launcher" if parent == "broker" else "job shell"
        if "pflux.broker.module" in line:
            return "job-list"
        return ""

    def _sample(self) -> None:
        found = {"broker": self.broker}
        for pid in children(self.broker):
            name = self._name(pid, "broker")
            if name:
                found[name] = pid
            if name == "launcher":
                for shell in children(pid):
                    if children(shell):  # the busy shell, not a spare
                        found["job shell"] = shell
        for name, pid in found.items():
            self.peaks[name] = max(self.peaks.get(name, 0), peak_kib(pid))

    def _run(self) -> None:
        while not self.done.wait(0.1):
            self._sample()

    def stop(self) -> dict[str, int]:
        self.done.set()
        self.thread.join()
        return self.peaks


def measure(mb: int) -> None:
    pflux = pflux_command()
    size = mb * 1_000_000
    tmp = Path(os.environ.get("BENCH_TMP", "."))
    out = tmp / "attach.out"
    peaks = Peaks(os.getppid())  # the initial program's parent is the broker
    command = f"yes {LINE} | head -c {size}"
    jobid = subprocess.run(
        [pflux, "submit", "sh", "-c", command], capture_output=True, text=True, check=True
    ).stdout.strip()
    t0 = time.time()
    with out.open("wb") as f:
        attach = subprocess.Popen([pflux, "job", "attach", jobid], stdout=f)
        attach_peak = 0
        while attach.poll() is None:
            attach_peak = max(attach_peak, peak_kib(attach.pid))
            time.sleep(0.05)
    t_attach = time.time()
    instance = peaks.stop()
    events = subprocess.run(
        [pflux, "job", "eventlog", "--format=json", "-p", "exec", jobid],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    times = {json.loads(e)["name"]: json.loads(e)["timestamp"] for e in events}
    run_s = times["complete"] - times["shell.start"]
    later = subprocess.Popen(
        [pflux, "job", "eventlog", "-p", "output", "--format=json", jobid],
        stdout=subprocess.PIPE,
    )
    assert later.stdout is not None
    later_bytes = 0
    later_peak = 0
    t1 = time.time()
    while chunk := later.stdout.read(1 << 20):
        later_bytes += len(chunk)
        later_peak = max(later_peak, peak_kib(later.pid))
    later.wait()
    t_later = time.time() - t1
    broker_peak = peak_kib(os.getppid())  # a lifetime peak: the reading after included
    got = out.stat().st_size
    print(f"job output: {mb} MB ({size} bytes) in 80-byte lines")
    print(f"job ran {run_s:.1f} s ({mb / run_s:.1f} MB/s through the KVS)")
    print(
        f"attach: {got} bytes{' (complete)' if got == size else ' (INCOMPLETE)'},"
        f" done {t_attach - times['complete']:.2f} s after the job's end"
        f" ({t_attach - t0:.1f} s in all)"
    )
    print(
        f"eventlog -p output after the job: {later_bytes / 1e6:.0f} MB of JSON in {t_later:.1f} s"
    )
    print("peak resident memory (VmHWM):")
    for name, kib in sorted(instance.items()):
        print(f"  {name:10} {kib / 1024:7.1f} MiB")
    print(f"  {'attach':10} {attach_peak / 1024:7.1f} MiB")
    print(f"  {'eventlog':10} {later_peak / 1024:7.1f} MiB (reading it all after the job)")
    print(f"  {'broker':10} {broker_peak / 1024:7.1f} MiB (its peak, that reading included)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--mb", type=int, default=100, help="megabytes the job prints")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside:
        measure(args.mb)
        return 0
    with tempfile.TemporaryDirectory(prefix="pflux-bench-") as tmp:
        me = [sys.executable, __file__, "--inside", "--mb", str(args.mb)]
        cmd = [sys.executable, "-m", "pflux.cli", "start", "--state-dir", f"{tmp}/s", *me]
        return subprocess.call(cmd, env={**os.environ, "BENCH_TMP": tmp})


if __name__ == "__main__":
    sys.exit(main())
