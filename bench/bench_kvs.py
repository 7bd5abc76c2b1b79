"""The KVS: eventlog appends in batched commits, gets and the restart walk.

The workload is the job manager's: N jobs, each with J and jobspec put at
ingest, then ten RFC 18 events appended to its eventlog, one event per job
per commit, B jobs per commit (job-manager sends one commit per batch of
jobs). It runs three ways:

- store:   the SQLite store alone (Store.apply in a transaction per commit);
- service: a broker in this process, one kvs.commit per loop turn;
- socket:  a broker in a child process, a client pipelining over its socket.

Each figure is the median of ``--repeat`` runs on a fresh database, with CPU
time of this process beside wall time (this machine is shared). The
instance's budget for ten appends is about 0.1 ms per job.

Run by hand or by ``make bench``; never part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from pflux.broker.router import Broker
from pflux.client.handle import Handle
from pflux.kvs.service import KVSService
from pflux.kvs.store import Store
from pflux.spec.eventlog import Event
from pflux.spec.kvs_keys import job_key
from support.kvs_broker import kvs_broker

EVENTS = (
    "submit",
    "validate",
    "depend",
    "priority",
    "alloc",
    "start",
    "finish",
    "release",
    "free",
    "clean",
)
JOBSPEC = orjson.dumps(
    {
        "version": 1,
        "resources": [
            {"type": "slot", "count": 1, "label": "task", "with": [{"type": "core", "count": 1}]}
        ],
        "tasks": [{"command": ["true"], "slot": "task", "count": {"per_slot": 1}}],
        "attributes": {
            "system": {
                "duration": 0,
                "cwd": "/home/user/work",
                "environment": {f"VAR{i}": "x" * 30 for i in range(25)},
            }
        },
    }
).decode()
J = "eyJ2ZXJzaW9uIjoxLCJtZWNoYW5pc20iOiJub25lIiwidXNlcmlkIjoxMDAwfQ." + "A" * len(JOBSPEC) + ".none"
Ops = list[list[Any]]


def workload(n: int, batch: int) -> tuple[list[Ops], list[list[Ops]], list[str]]:
    """Ingest commits, then per event the commits of that round, and the eventlog keys."""
    ids = [(i + 1) << 24 for i in range(n)]
    logs = [job_key(i, "eventlog") for i in ids]
    ingest = [
        [
            op
            for i in ids[b : b + batch]
            for op in (["put", job_key(i, "J"), J], ["put", job_key(i, "jobspec"), JOBSPEC])
        ]
        for b in range(0, n, batch)
    ]
    rounds = []
    for k, name in enumerate(EVENTS):
        line = Event(1738774194.185372 + k, name, {"userid": 1000, "n": k}).to_line()
        rounds.append(
            [[["append", key, line] for key in logs[b : b + batch]] for b in range(0, n, batch)]
        )
    return ingest, rounds, logs


class Timer:
    """Wall and CPU time of a block, accumulated."""

    def __init__(self) -> None:
        self.wall = 0.0
        self.cpu = 0.0

    def __enter__(self) -> Timer:
        self._wall = time.perf_counter()
        self._cpu = time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall += time.perf_counter() - self._wall
        self.cpu += time.process_time() - self._cpu


Result = dict[str, tuple[float, float]]  # figure -> (wall, cpu)


def run_store(path: Path, n: int, batch: int) -> Result:
    ingest, rounds, logs = workload(n, batch)
    with Store(path) as store:
        with Timer() as put:
            for ops in ingest:
                with store.transaction():
                    store.apply(ops)
        with Timer() as app:
            for commits in rounds:
                for ops in commits:
                    with store.transaction():
                        store.apply(ops)
        with Timer() as walk:
            assert sum(1 for _ in store.walk("job", "eventlog")) == n
        with Timer() as get:
            for key in logs:
                store.get(key)
    return per_job(n, put, app, walk, get)


def run_service(path: Path, n: int, batch: int) -> Result:
    ingest, rounds, logs = workload(n, batch)

    async def main() -> Result:
        broker = Broker(os.getuid(), attrs={"state-dir": str(path.parent)})
        broker.register(KVSService(broker))
        await broker.start()
        try:
            with Timer() as put:
                for ops in ingest:
                    await broker.call("kvs.commit", {"ops": ops})
            with Timer() as app:
                for commits in rounds:
                    for ops in commits:
                        await broker.call("kvs.commit", {"ops": ops})
            with Timer() as walk:
                count = 0
                async for reply in broker.stream("kvs.walk", {"key": "job", "suffix": "eventlog"}):
                    count += len(reply["entries"])
                assert count == n
            with Timer() as get:
                await asyncio.gather(*(broker.call("kvs.get", {"key": k}) for k in logs))
        finally:
            await broker.stop()
        return per_job(n, put, app, walk, get)

    return asyncio.run(main())


def run_socket(path: Path, n: int, batch: int) -> Result:
    ingest, rounds, logs = workload(n, batch)
    with kvs_broker(path.parent) as (child, uri):
        with Handle(uri) as h:

            def pipelined(payloads: list[dict[str, Any]], topic: str = "kvs.commit") -> None:
                for rpc in [h.rpc(topic, p) for p in payloads]:
                    rpc.get()

            with Timer() as put:
                pipelined([{"ops": ops} for ops in ingest])
            with Timer() as app:
                for commits in rounds:  # a round's commits in flight together, as job-manager's
                    pipelined([{"ops": ops} for ops in commits])
            with Timer() as walk:
                count = sum(
                    len(r["entries"])
                    for r in h.rpc("kvs.walk", {"key": "job", "suffix": "eventlog"}, streaming=True)
                )
                assert count == n
            with Timer() as get:
                pipelined([{"key": k} for k in logs], "kvs.get")
            h.call("broker.shutdown", {})
        child.wait(timeout=60)
    return per_job(n, put, app, walk, get)


def per_job(n: int, put: Timer, app: Timer, walk: Timer, get: Timer) -> Result:
    us = 1e6 / n
    return {
        "ingest J+jobspec (µs/job)": (put.wall * us, put.cpu * us),
        "10 appends (µs/job)": (app.wall * us, app.cpu * us),
        "walk eventlogs (µs/job)": (walk.wall * us, walk.cpu * us),
        "get eventlog (µs/get)": (get.wall * us, get.cpu * us),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10000, help="jobs (default 10000)")
    parser.add_argument("--batch", default="16,256", help="jobs per commit, comma separated")
    parser.add_argument(
        "--repeat", type=int, default=5, help="runs per figure; the median is shown"
    )
    parser.add_argument(
        "--ways", default="store,service,socket", help="which of store,service,socket"
    )
    args = parser.parse_args()
    runners: dict[str, Callable[[Path, int, int], Result]] = {
        "store": run_store,
        "service": run_service,
        "socket": run_socket,
    }
    print(f"{args.jobs} jobs, 10 events each; median of {args.repeat}; wall / CPU of this process")
    for batch in [int(b) for b in args.batch.split(",")]:
        for way in args.ways.split(","):
            runs: list[Result] = []
            for _ in range(args.repeat):
                tmp = Path(tempfile.mkdtemp(prefix="pflux-bench-"))
                try:
                    runs.append(runners[way](tmp / "kvs.sqlite", args.jobs, batch))
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
            print(f"\n{way}, {batch} jobs per commit:")
            for figure in runs[0]:
                wall = statistics.median(r[figure][0] for r in runs)
                cpu = statistics.median(r[figure][1] for r in runs)
                print(f"  {figure:28} {wall:8.1f} wall {cpu:8.1f} cpu")


if __name__ == "__main__":
    main()
