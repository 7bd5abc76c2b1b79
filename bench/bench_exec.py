"""job-exec alone: test-mode and real ``true`` jobs per second, and one job's latency.

A broker with only kvs and job-exec runs in this process; the script plays the
job-manager: it answers job-exec's hello, sends ``job-exec.start`` and counts
final releases. Real jobs run at most ``--concurrency`` at a time (default: one per
CPU, as a scheduler giving each job one core would), each on its own core, with the
environment of this process (as ``pflux run`` sends it); test-mode jobs are
all started at once. The CPU figures split the cost between the broker (this
process: job-exec and the KVS; R is built once per core, not per job), the
shell launcher, and the shells with their tasks; the latency breakdown shows
when each ``exec.eventlog`` event was posted, ``shell.init`` being stamped
with the time the shell started the tasks.

Run by hand or by ``make bench``; never part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from pflux.broker.connector import serve
from pflux.broker.router import Broker, Request, Service, method
from pflux.exec.service import ExecService
from pflux.kvs.service import KVSService
from pflux.protocol.kvs import value_of
from pflux.protocol.message import Message
from pflux.protocol.uri import uri_for
from pflux.spec.builder import from_command
from pflux.spec.eventlog import parse
from pflux.spec.fluid import JobID
from pflux.spec.idset import IdSet
from pflux.spec.resource import ResourceSet


@functools.cache
def _resources(core: int) -> bytes:
    return orjson.dumps(ResourceSet.build({0: (IdSet([core]), IdSet())}, "localhost").to_json())


def resources(core: int) -> dict[str, Any]:
    """R for one core (a fresh copy, as each job gets its own)."""
    R: dict[str, Any] = orjson.loads(_resources(core))  # noqa: N806
    return R


def _times(pid: int) -> tuple[float, float]:
    """A process's own CPU seconds and its reaped children's."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    hz = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / hz, (int(fields[13]) + int(fields[14])) / hz


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(child) for child in f.read().split()]


def launcher_cpu(pid: int) -> tuple[float, float]:
    """(the launcher's own CPU seconds, its shells' and tasks', reaped or still running:
    shells are kept for the next jobs, so most are never reaped)."""
    own, reaped = _times(pid)
    shells = reaped
    for child in _children(pid):
        with contextlib.suppress(OSError):
            child_own, child_reaped = _times(child)
            shells += child_own + child_reaped
    return own, shells


class Manager(Service):
    """The job-manager's two answers a starting job-exec waits for: its hello taken, and
    no job in RUN to take over."""

    name = "job-manager"

    @method("exec-hello")
    def exec_hello(self, req: Request) -> None:
        req.respond({})

    @method("running")
    def running(self, req: Request) -> None:
        req.respond({"jobs": []})


class Driver:
    """Plays the job-manager: sends start requests and waits for the final releases."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.next_id = 1 << 24

    def start(
        self,
        jobspec: dict[str, Any],
        R: dict[str, Any],  # noqa: N803
        on_release: Callable[[int], None],
    ) -> int:
        jobid = self.next_id
        self.next_id += 1 << 24

        def response(msg: Message) -> None:
            if msg.errnum:
                raise SystemExit(f"job-exec.start failed: {msg.errstr}")
            if msg.payload.type == "exception":
                print(f"  exception: {msg.payload.data.note}", file=sys.stderr)
            if msg.payload.type == "release":
                on_release(jobid)

        payload = {
            "id": jobid,
            "userid": os.getuid(),
            "jobspec": jobspec,
            "reattach": False,
            "R": R,
        }
        self.broker.send("job-exec.start", payload, response, streaming=True)
        return jobid

    async def batch(self, jobspec: dict[str, Any], n: int, concurrency: int, ncores: int) -> float:
        """Run ``n`` jobs, at most ``concurrency`` at once; the seconds it took."""
        done = asyncio.get_running_loop().create_future()
        free = list(range(ncores))
        state = {"sent": 0, "released": 0}
        cores: dict[int, int] = {}

        def launch() -> None:
            core = free.pop() if free else 0
            jobid = self.start(jobspec, resources(core), released)
            cores[jobid] = core
            state["sent"] += 1

        def released(jobid: int) -> None:
            free.append(cores.pop(jobid))
            state["released"] += 1
            if state["sent"] < n:
                launch()
            elif state["released"] == n and not done.done():
                done.set_result(None)

        began = time.perf_counter()
        for _ in range(min(n, concurrency)):
            launch()
        await done
        return time.perf_counter() - began

    async def one(self, jobspec: dict[str, Any]) -> tuple[float, float, int]:
        """One job: seconds to the start response, to the release, and its id."""
        loop = asyncio.get_running_loop()
        started = loop.create_future()
        released = loop.create_future()
        began = time.perf_counter()

        def response(msg: Message) -> None:
            kind = msg.payload.type
            if kind == "start":
                started.set_result(time.perf_counter() - began)
            elif kind == "release":
                released.set_result(time.perf_counter() - began)

        jobid = self.next_id
        self.next_id += 1 << 24
        payload = {
            "id": jobid,
            "userid": os.getuid(),
            "jobspec": jobspec,
            "reattach": False,
            "R": resources(0),
        }
        self.broker.send("job-exec.start", payload, response, streaming=True)
        return await started, await released, jobid


async def exec_times(broker: Broker, jobid: int) -> dict[str, float]:
    """Seconds from the first exec.eventlog event to each of the others."""
    key = f"{JobID(jobid).kvs}.guest.exec.eventlog"
    text = value_of(await broker.call("kvs.get", {"key": key}))
    events = parse(text)
    return {e.name: e.timestamp - events[0].timestamp for e in events}


async def main(args: argparse.Namespace) -> None:
    state_dir = Path(tempfile.mkdtemp(prefix="pflux-bench-"))
    sock = state_dir / "local"
    broker = Broker(
        os.getuid(),
        attrs={"state-dir": str(state_dir), "uri": uri_for(str(sock)), "hostname": "localhost"},
    )
    broker.register(KVSService(broker))
    broker.register(Manager(broker))
    job_exec = ExecService(broker)
    broker.register(job_exec)
    await broker.start()
    server = await serve(broker, sock)
    driver = Driver(broker)
    ncores = len(os.sched_getaffinity(0))
    concurrency = args.concurrency or ncores
    env = dict(os.environ)

    mock = from_command(["true"])
    mock["attributes"]["system"]["exec"] = {"test": {"run_duration": "0.001s"}}
    await driver.batch(mock, 200, 200, ncores)  # warm-up
    cpu0 = time.process_time()
    seconds = await driver.batch(mock, args.mock, args.mock, ncores)
    cpu = time.process_time() - cpu0
    print(
        f"test mode: {args.mock} jobs (run_duration 1 ms, all at once):"
        f" {args.mock / seconds:.0f} jobs/s, broker CPU {cpu / args.mock * 1e6:.0f} us/job"
    )

    true = from_command(["true"], environment=env)
    await driver.batch(true, 20, concurrency, ncores)  # warm-up: the launcher is ready
    latencies = [await driver.one(true) for _ in range(args.latency)]
    breakdown: dict[str, list[float]] = {}
    for _, _, jobid in latencies:
        for name, t in (await exec_times(broker, jobid)).items():
            breakdown.setdefault(name, []).append(t * 1000)
    print(
        f"real true, one at a time ({args.latency} jobs): start response"
        f" {statistics.median(s for s, _, _ in latencies) * 1000:.1f} ms, release"
        f" {statistics.median(r for _, r, _ in latencies) * 1000:.1f} ms (medians)"
    )
    print(
        "  exec.eventlog, ms after init (medians): "
        + ", ".join(f"{name} {statistics.median(ts):.1f}" for name, ts in breakdown.items())
    )

    pid = job_exec.launcher.pid if job_exec.launcher is not None else None
    if pid is None:
        raise SystemExit("job-exec has no launcher")
    own0, shells0 = launcher_cpu(pid)
    cpu0 = time.process_time()
    seconds = await driver.batch(true, args.real, concurrency, ncores)
    cpu = time.process_time() - cpu0
    own1, shells1 = launcher_cpu(pid)
    server.close()
    await broker.stop()
    per_job = 1000 / args.real
    print(
        f"real true: {args.real} jobs, {concurrency} at a time: {args.real / seconds:.0f} jobs/s;"
        f" CPU per job: broker {cpu * per_job:.2f} ms, launcher {(own1 - own0) * per_job:.2f} ms,"
        f" shells + tasks {(shells1 - shells0) * per_job:.2f} ms"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mock", type=int, default=10000, help="test-mode jobs (default 10000)")
    parser.add_argument("--real", type=int, default=1000, help="real true jobs (default 1000)")
    parser.add_argument("--latency", type=int, default=30, help="jobs timed one by one")
    parser.add_argument("--concurrency", type=int, default=0, help="real jobs at once")
    asyncio.run(main(parser.parse_args()))
