"""The simulator end to end: ``pflux start --simulate`` replays a trace in simulated time.

(a) A 40-job trace in simulation starts every job exactly when the
scheduler's own policy, run offline over the same trace
(``pflux.sim.replay``), says it starts.  (b) A small trace run for real, in
real time (job-exec's test mode, sub-second durations), starts its jobs in
the same order, with the same jobs backfilled, as its simulation.
"""

from __future__ import annotations

import errno
import json
import os
import random
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest

from pflux.api import Client
from pflux.sched.inventory import inventory
from pflux.sim.replay import replay
from pflux.sim.trace import TraceJob, load
from support.instance import PFLUX, LiveInstance

EPOCH = 1_500_000_000.0  # simulated time starts in 2017, far from the real time of day
FOUR_NODES = '[[resource.config]]\nhosts = "node[0-3]"\ncores = "0-7"\n'
TWO_NODES = '[[resource.config]]\nhosts = "node[0-1]"\ncores = "0-3"\n'

REPORT = """
import json
import pytest

from pflux.api import Client
with Client() as client:
    report = client.handle.call("simulator.wait", {}, wait=True)
    ids = [job["id"] for job in report["jobs"] if "id" in job]
    report["R"] = {jobid: json.loads(client.lookup(jobid, ["R"])["R"]) for jobid in ids[:5]}
    report["eventlog"] = client.lookup(ids[0], ["eventlog"])["eventlog"]
print(json.dumps(report))
"""


def write(tmp_path: Path, trace: list[dict[str, Any]], resources: str) -> tuple[Path, Path]:
    path = tmp_path / "trace.jsonl"
    path.write_text("".join(json.dumps(job) + "\n" for job in trace))
    config = tmp_path / "sim.toml"
    config.write_text(f"{resources}\n[simulator]\nepoch = {EPOCH}\n")
    return path, config


def simulate(tmp_path: Path, trace: list[dict[str, Any]], resources: str) -> dict[str, Any]:
    """Run the trace with ``pflux start --simulate``; the simulator's report, and some R."""
    path, config = write(tmp_path, trace, resources)
    script = tmp_path / "report.py"
    script.write_text(REPORT)
    report: dict[str, Any] = json.loads(run_simulated(path, config, script))
    return report


def run_simulated(path: Path, config: Path, script: Path) -> str:
    """What ``script`` prints, run in ``pflux start --simulate`` of the trace at ``path``."""
    command = [str(PFLUX), "start", "--simulate", str(path), "--config", str(config)]
    proc = subprocess.run(
        [*command, sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={k: v for k, v in os.environ.items() if k != "PFLUX_URI"},
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def offline(tmp_path: Path, resources: str) -> dict[int, float | None]:
    config = tomllib.loads(resources)
    outcome = replay(load(tmp_path / "trace.jsonl"), inventory(config, "h"), epoch=EPOCH)
    return {index: o.start for index, o in outcome.items()}


def backfilled(
    starts: dict[int, float | None], submits: dict[int, float], slack: float = 0.0
) -> set[int]:
    """Jobs that started more than ``slack`` before a job queued ahead of them (same urgency)."""
    return {
        j
        for j, start_j in starts.items()
        for i, start_i in starts.items()
        if (submits[i], i) < (submits[j], j)
        and start_j is not None
        and (start_i is None or start_i - start_j > slack)
    }


def random_trace(n: int, seed: int) -> list[dict[str, Any]]:
    """Jobs arriving faster than four 8-core nodes run them, of every shape, some over time."""
    rng = random.Random(seed)
    trace = []
    submit = 0.0
    for _ in range(n):
        submit += round(rng.expovariate(1 / 20), 3)
        run = round(rng.uniform(10, 600), 3)
        job: dict[str, Any] = {"submit": submit, "duration": run}
        job["timelimit"] = round(run * rng.choice([0.9, 1.0, 1.5, 3.0]), 3)  # 0.9: killed
        if rng.random() < 0.2:
            job["nodes"] = rng.choice([1, 2, 3])
            job["ntasks"] = job["nodes"] * rng.choice([1, 8])
        else:
            job["ntasks"] = rng.choice([1, 1, 2, 3, 4, 8, 12])
        trace.append(job)
    trace.append({"submit": 0, "duration": 100, "ntasks": 40})  # more than the pool: denied
    return trace


def test_simulation_gives_the_offline_schedule_exactly(tmp_path: Path) -> None:
    trace = random_trace(40, seed=7)
    started = time.time()
    report = simulate(tmp_path, trace, FOUR_NODES)
    expected = offline(tmp_path, FOUR_NODES)
    got = {job["index"]: job.get("start") for job in report["jobs"]}
    assert got == expected
    assert expected[len(trace) - 1] is None  # the job too big for the pool never started
    submits = {job["index"]: job["submit"] for job in report["jobs"]}
    assert len(backfilled(expected, submits)) >= 5  # the trace exercises backfill
    assert report["epoch"] == EPOCH
    # R holds simulated times; eventlogs keep real ones (RFC 18: when the event was posted)
    for jobid, r in report["R"].items():
        index = next(job["index"] for job in report["jobs"] if job.get("id") == int(jobid))
        assert r["execution"]["starttime"] == expected[index]
    first_event = json.loads(report["eventlog"].splitlines()[0])
    assert started - 1 <= first_event["timestamp"] <= time.time()


# (b) 2 nodes of 4 cores, times in units of UNIT seconds.  At 0, job 0 takes six cores
# (rank 0 and half of rank 1) and job 1 (four cores) is blocked behind it, reserved at its
# time limit, 4.5; job 2 ends by then and backfills.  Job 3 is too long for the reservation
# and waits for a core off it; with job 4 it starts when job 2 ends, at 2.  Job 6 (two nodes)
# waits for a core of rank 0; job 5 backfills ahead of it at 4, when job 1 starts.
UNIT = 0.4
SMALL = [
    (0, {"ntasks": 6}, 4),
    (0, {"ntasks": 4}, 2),
    (0, {"ntasks": 2}, 2),
    (0, {"ntasks": 1}, 6),
    (1, {"ntasks": 1}, 1),
    (3, {"ntasks": 2}, 1),
    (0.5, {"nodes": 2, "ntasks": 2}, 1),
]


def small_trace() -> list[dict[str, Any]]:
    return [
        {"submit": t * UNIT, "duration": d * UNIT, "timelimit": (d + 0.5) * UNIT, **shape}
        for t, shape, d in SMALL
    ]


def run_for_real(uri: str, jobs: list[TraceJob]) -> dict[int, float]:
    """Submit each job at its time (the trace's schedule, so sleeps) and return its R start."""
    with Client(uri) as client:
        ids = {}
        t0 = time.monotonic()
        for job in jobs:
            time.sleep(max(0.0, t0 + job.submit - time.monotonic()))
            ids[job.index] = client.submit_many([job.jobspec], urgency=job.urgency)[0]
        for jobid in ids.values():
            assert client.wait(jobid).success
        return {
            index: json.loads(client.lookup(jobid, ["R"])["R"])["execution"]["starttime"]
            for index, jobid in ids.items()
        }


def test_real_time_run_starts_jobs_in_the_simulated_order(tmp_path: Path) -> None:
    trace = small_trace()
    report = simulate(tmp_path, trace, TWO_NODES)
    simulated = {job["index"]: job["start"] - EPOCH for job in report["jobs"]}
    expected = {i: t * UNIT for i, t in enumerate([0, 4, 0, 2, 2, 4, 6])}
    assert simulated == pytest.approx(expected, abs=1e-6)
    submits = {job["index"]: job["submit"] for job in report["jobs"]}
    assert backfilled(simulated, submits) == {2, 3, 4, 5}

    config = tmp_path / "real.toml"
    config.write_text(TWO_NODES)
    with LiveInstance(tmp_path / "state", "--config", str(config), cores=None) as live:
        real = run_for_real(live.uri, load(tmp_path / "trace.jsonl"))
    t0 = min(real.values())
    real = {index: start - t0 for index, start in real.items()}
    for i, sim_i in simulated.items():
        for j, sim_j in simulated.items():
            if sim_i + UNIT / 2 < sim_j:
                assert real[i] < real[j], (i, j, real)
    assert backfilled(real, submits, slack=UNIT / 2) == {2, 3, 4, 5}


def test_bad_traces_are_refused_naming_the_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PFLUX_URI"}

    def simulate(trace: Path) -> subprocess.CompletedProcess[str]:
        command = [str(PFLUX), "start", "--simulate", str(trace), "true"]
        return subprocess.run(
            command, capture_output=True, text=True, timeout=60, check=False, env=env
        )

    missing = simulate(tmp_path / "none.jsonl")
    assert missing.returncode == 1
    assert "pflux-start: ERROR: trace " in missing.stderr
    assert "none.jsonl: No such file or directory" in missing.stderr
    path, _ = write(tmp_path, [{"submit": 0, "duration": 5}, {"submit": 1}], TWO_NODES)
    bad = simulate(path)
    assert bad.returncode == 1
    assert bad.stderr.strip().endswith("trace.jsonl:2: duration: missing")


MALFORMED = """
import json

from pflux.api import Client
from pflux.errors import RPCError

errors = []
with Client() as client:
    for topic, payload in json.loads(%r):
        try:
            client.handle.call(topic, payload)
        except RPCError as exc:
            errors.append([exc.errnum, exc.errstr])
    client.handle.call("simulator.wait", {}, wait=True)
print(json.dumps(errors))
"""


def test_malformed_rfc_32_requests_get_the_one_mapping_s_errors(tmp_path: Path) -> None:
    """The simulator decodes RFC 32's requests with job-exec's types."""
    calls = [
        ["simulator.start", {"id": 1, "userid": 0, "jobspec": {}, "R": [], "reattach": False}],
        ["simulator.kill", {"id": "1", "signum": 15}],
        ["simulator.expiration", {"id": 1, "expiration": -1}],
        ["simulator.exception", {"id": 1, "type": "cancel"}],
    ]
    path, config = write(tmp_path, [{"submit": 0, "duration": 10, "ntasks": 1}], TWO_NODES)
    script = tmp_path / "malformed.py"
    script.write_text(MALFORMED % json.dumps(calls))
    eproto, einval = errno.EPROTO, errno.EINVAL
    assert json.loads(run_simulated(path, config, script)) == [
        [eproto, "simulator.start: R: expected object"],
        [eproto, "simulator.kill: id: expected int, got str"],
        [einval, "simulator.expiration: expiration: expected float >= 0.0"],
        [eproto, "simulator.exception: severity: required"],
    ]
