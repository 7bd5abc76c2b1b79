"""What the scheduler costs per job: the pure policy, and the ``sched`` service in a broker.

Run by hand or by ``make bench``; never part of the test suite.

- ``policy``: N one-core jobs queued at once on a C-core pool; passes allocate,
  every allocation is freed, until the queue is empty (FIFO, no durations).
- ``backfill``: N jobs of 1-4 cores with 10-100 s durations on the same pool,
  simulated to completion with EASY backfill (depth 32): every pass looks
  behind a blocked head job.
- ``request``: reading the resource request from a jobspec (once per job).
- ``service``: a job-manager double drives ``sched.alloc`` for N jobs through a
  live broker (windows of W allocs in flight, as the job manager's submit
  batches arrive) and frees each job as soon as it is allocated, so R goes
  to the KVS and back.  ``--kvs null`` answers commits at once, to show the
  scheduler's own share; ``real`` is the SQLite KVS service.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from pflux.broker.router import Broker, Request, Service, method
from pflux.protocol.message import Message
from pflux.protocol.sched import AllocResponse
from pflux.sched.policy import PendingJob, Policy
from pflux.sched.pool import Pool, ResourceRequest
from pflux.sched.service import Scheduler
from pflux.spec.builder import from_command
from pflux.spec.idset import IdSet
from pflux.spec.resource import ResourceSet, Target

NOW = 1_700_000_000.0


def pool_of(cores: int) -> Pool:
    return Pool(ResourceSet({0: Target("node0", IdSet.range(0, cores - 1), IdSet())}))


def median_seconds(work: Callable[[], object], repeats: int) -> float:
    """This process's CPU time for ``work``, the median of ``repeats`` runs.

    CPU time rather than wall-clock: on a shared machine it is much steadier.
    """
    times = []
    for _ in range(repeats):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return statistics.median(times)


def bench_policy(n: int, cores: int) -> None:
    """FIFO throughput: queue n jobs, then pass and free until the queue is empty."""
    request = ResourceRequest(1, 1)

    def work() -> None:
        policy = Policy(pool_of(cores))
        for jobid in range(n):
            policy.queue.add(PendingJob(jobid, 16, float(jobid), request))
        while len(policy.queue):
            for job, _ in policy.schedule(NOW).allocated:
                policy.pool.free(job.id)

    seconds = median_seconds(work, 5)
    print(f"policy   {n} 1-core jobs, {cores} cores: {seconds / n * 1e6:6.1f} us/job")


def bench_backfill(n: int, cores: int, depth: int) -> None:
    """EASY backfill on a simulated clock: mixed sizes and durations."""
    rng = random.Random(27)
    shapes = [(rng.randint(1, 4), float(rng.randint(10, 100))) for _ in range(n)]
    passes = [0]

    def work() -> None:
        policy = Policy(pool_of(cores), depth=depth)
        for jobid, (size, duration) in enumerate(shapes):
            request = ResourceRequest(1, size, duration=duration)
            policy.queue.add(PendingJob(jobid, 16, float(jobid), request))
        now = NOW
        ends: dict[int, float] = {}
        passes[0] = 0
        while len(policy.queue) or ends:
            passes[0] += 1
            for job, r in policy.schedule(now).allocated:
                ends[job.id] = r.expiration
            now = min(ends.values())
            for jobid in [j for j, end in ends.items() if end <= now]:
                del ends[jobid]
                policy.pool.free(jobid)

    seconds = median_seconds(work, 3)
    print(
        f"backfill {n} jobs of 1-4 cores, {cores} cores, depth {depth}:"
        f" {seconds / n * 1e6:6.1f} us/job ({passes[0]} passes)"
    )


def bench_request(n: int) -> None:
    spec = from_command(["true"], num_tasks=1, duration=60)

    def work() -> None:
        for _ in range(n):
            ResourceRequest.from_jobspec(spec)

    seconds = median_seconds(work, 5)
    print(f"request  from a jobspec: {seconds / n * 1e6:6.1f} us/job")


class NullKVS(Service):
    """Answers every commit at once: the scheduler's cost without SQLite."""

    name = "kvs"

    @method("commit")
    def commit(self, req: Request) -> None:
        req.respond({})


class Driver(Service):
    """The job-manager side: hello with nothing, ready; then allocs and frees."""

    name = "job-manager"

    @method("sched-hello")
    def sched_hello(self, req: Request) -> None:
        req.end()

    @method("sched-ready")
    def sched_ready(self, req: Request) -> None:
        req.respond({"count": 0})

    async def run(self, n: int, window: int) -> tuple[float, float]:
        """Send n allocs, ``window`` at a time; free each as soon as it is allocated.

        Returns the wall-clock and CPU seconds taken.
        """
        spec = from_command(["true"], num_tasks=1)
        done = asyncio.get_running_loop().create_future()
        state = {"sent": 0, "finished": 0, "in_flight": 0}

        def refill() -> None:
            while state["in_flight"] < window and state["sent"] < n:
                jobid = state["sent"]
                state["sent"] += 1
                state["in_flight"] += 1
                payload: dict[str, Any] = {"id": jobid, "priority": 16, "userid": 0}
                payload.update(t_submit=float(jobid), jobspec=spec)
                self.broker.send("sched.alloc", payload, on_alloc(jobid), streaming=True)

        def on_alloc(jobid: int) -> Callable[[Message], None]:
            def response(msg: Message) -> None:
                if msg.payload["type"] == AllocResponse.SUCCESS:
                    freed = {"id": jobid, "R": msg.payload["R"], "final": True}
                    self.broker.send("sched.free", freed, on_free)

            return response

        def on_free(msg: Message) -> None:
            state["finished"] += 1
            state["in_flight"] -= 1
            if state["finished"] == n:
                done.set_result(None)
            else:
                refill()

        start, cpu = time.perf_counter(), time.process_time()
        refill()
        await done
        return time.perf_counter() - start, time.process_time() - cpu


async def service_run(n: int, cores: int, window: int, kvs: str) -> tuple[float, float]:
    with tempfile.TemporaryDirectory(prefix="pflux-bench-") as state_dir:
        broker = Broker(
            os.getuid(),
            attrs={"hostname": "bench", "state-dir": state_dir},
            config={"resource": {"cores": cores, "gpus": 0}},
        )
        if kvs == "real":
            from pflux.kvs.service import KVSService

            broker.register(KVSService(broker))
        else:
            broker.register(NullKVS(broker))
        driver = Driver(broker)
        broker.register(driver)
        broker.register(Scheduler(broker))
        await broker.start()
        try:
            return await driver.run(n, window)
        finally:
            await broker.stop()


def bench_service(n: int, cores: int, window: int, kvs: str) -> None:
    runs = [asyncio.run(service_run(n, cores, window, kvs)) for _ in range(3)]
    wall = statistics.median(w for w, _ in runs)
    cpu = statistics.median(c for _, c in runs)
    print(
        f"service  {n} jobs, {cores} cores, window {window}, kvs {kvs}:"
        f" {n / wall:6.0f} jobs/s, {cpu / n * 1e6:5.1f} us CPU/job (broker, driver, sched, kvs)"
    )


def bench_services(n: int, cores: int, window: int) -> None:
    for kvs in ("null", "real"):
        bench_service(n, cores, window, kvs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="jobs per run")
    parser.add_argument("--cores", type=int, default=16, help="cores in the pool")
    parser.add_argument("--depth", type=int, default=32, help="backfill depth")
    parser.add_argument("--window", type=int, default=1024, help="allocs in flight (service)")
    parser.add_argument(
        "--only", choices=("policy", "backfill", "request", "service"), help="run one benchmark"
    )
    args = parser.parse_args()
    runs: dict[str, Callable[[], None]] = {
        "request": lambda: bench_request(args.n),
        "policy": lambda: bench_policy(args.n, args.cores),
        "backfill": lambda: bench_backfill(args.n, args.cores, args.depth),
        "service": lambda: bench_services(args.n, args.cores, args.window),
    }
    for name, run in runs.items():
        if args.only in (None, name):
            run()


if __name__ == "__main__":
    main()
