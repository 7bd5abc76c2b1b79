"""Brokers' places through PMI-1, against real servers: MPICH's mpiexec and pflux's job shell."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.instance import PFLUX, ok

#: one broker's bootstrap as a task: bind a real ZeroMQ socket, write the Boot as JSON to
#: a file of its own (mpiexec forwards the tasks' output mixed, not line by line)
BROKER = """
import json, os, socket, sys, zmq
from pflux.broker import bootstrap
from pflux.broker.pmiclient import PMIClient

context = zmq.Context()
router = context.socket(zmq.ROUTER)

def bind(endpoint):
    router.bind(endpoint)
    return router.getsockopt_string(zmq.LAST_ENDPOINT)

with PMIClient.from_env(os.environ) as client:
    boot = bootstrap.from_pmi(client, bind, f"host{client.rank}", fanout=2)
router.close(0)
context.term()
with open(os.path.join(sys.argv[1], str(boot.rank)), "w") as out:
    out.write(json.dumps({
    "rank": boot.rank, "size": boot.size, "hosts": boot.hostnames, "bind": boot.bind,
    "parent": boot.parent, "public": boot.cert.public, "secret": bool(boot.cert.secret),
    "parent_key": boot.parent_key, "allowed": sorted(boot.allowed),
    }))
"""


def _check(where: Path, size: int) -> None:
    boots: list[dict[str, Any]] = sorted(
        (json.loads(path.read_text()) for path in where.iterdir()), key=lambda b: b["rank"]
    )
    assert [b["rank"] for b in boots] == list(range(size))
    assert {b["size"] for b in boots} == {size}
    assert all(b["hosts"] == [f"host{r}" for r in range(size)] for b in boots)
    assert all(b["secret"] for b in boots)
    assert len({b["public"] for b in boots}) == size  # a key pair each
    root, *rest = boots
    assert root["bind"].startswith("tcp://")
    assert not root["bind"].endswith(":*")  # the port bound, not the wildcard
    assert (root["parent"], root["parent_key"]) == (None, "")
    assert root["allowed"] == sorted(b["public"] for b in boots[1:3])
    for b in rest:
        parent = boots[(b["rank"] - 1) // 2]
        assert (b["parent"], b["parent_key"]) == (parent["bind"], parent["public"])
        kids = [c["public"] for c in boots if c["rank"] and (c["rank"] - 1) // 2 == b["rank"]]
        assert b["allowed"] == sorted(kids)
        assert (b["bind"] is None) == (not kids)


def test_brokers_under_mpich_mpiexec(tmp_path: Path) -> None:
    mpiexec = shutil.which("mpiexec")
    if mpiexec is None:
        pytest.skip("mpiexec not found: install MPICH (apt-get install mpich)")
    script = tmp_path / "broker.py"
    script.write_text(BROKER)
    out = tmp_path / "boots"
    out.mkdir()
    proc = subprocess.run(
        [mpiexec, "-n", "4", sys.executable, str(script), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    _check(out, 4)


def test_brokers_as_tasks_of_a_pflux_job(uri: str, tmp_path: Path) -> None:
    script = tmp_path / "broker.py"
    script.write_text(BROKER)
    out = tmp_path / "boots"
    out.mkdir()
    ok(uri, "run", "-n3", sys.executable, str(script), str(out))
    _check(out, 3)


def test_mpiexec_starts_one_instance_of_three_brokers() -> None:
    mpiexec = shutil.which("mpiexec")
    if mpiexec is None:
        pytest.skip("mpiexec not found: install MPICH (apt-get install mpich)")
    script = "pflux getattr size; pflux resource list -n -o '{nnodes}'"
    proc = subprocess.run(
        [mpiexec, "-n", "3", str(PFLUX), "start", "sh", "-c", script],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["3", "3", "0", "0"]  # only rank 0 runs the program
