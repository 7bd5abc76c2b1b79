"""``pflux resource info|status|drain|undrain`` against a live instance of two nodes.

A drained rank gets no new job while the jobs there run on (it is ``draining``
until they end); the drained ranks and their reasons survive a restart.
"""

from __future__ import annotations

import asyncio
import errno
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pflux.api import AsyncClient, Client
from pflux.errors import RPCError
from pflux.spec.fluid import JobID
from support.instance import LiveInstance, fails, ok

TWO_NODES = """
[[resource.config]]
hosts = "node[0-1]"
cores = "0-3"
"""
HOLD = "--setattr=system.exec.test.run_duration=0s"  # runs until canceled


def start(where: Path) -> LiveInstance:
    config = where / "two.toml"
    config.write_text(TWO_NODES)
    return LiveInstance(where / "state", "--config", str(config), cores=None)


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveInstance]:
    with start(tmp_path) as instance:
        yield instance


def test_info_and_status_of_an_idle_instance(live: LiveInstance) -> None:
    assert ok(live.uri, "resource", "info") == "2 Nodes, 8 Cores, 0 GPUs\n"
    assert ok(live.uri, "resource", "info", "-s", "free,allocated", "-i", "node1") == (
        "1 Nodes, 4 Cores, 0 GPUs\n0 Nodes, 0 Cores, 0 GPUs\n"
    )
    assert ok(live.uri, "resource", "status") == (
        "       STATE UP NNODES NODELIST\n       avail  ✔      2 node[0-1]\n"
    )
    # with --states, empty lines are kept; -n drops the header, -o picks the fields
    out = ok(live.uri, "resource", "status", "-n", "-s", "avail,drain", "-o", "{state} {ranks}")
    assert out == "avail 0-1\ndraining \ndrained \n"
    out = ok(live.uri, "resource", "status", "-n", "--skip-empty", "-s", "avail,drain")
    assert out.split() == ["avail", "✔", "2", "node[0-1]"]
    assert "✔" not in ok(live.uri, "resource", "status", "-o", "{up.ascii} {nnodes}")
    assert "\033[01;32m" in ok(live.uri, "resource", "status", "-L")
    assert "\033[" not in ok(live.uri, "resource", "status", "--color=never")
    assert ok(live.uri, "resource", "status", "-s", "help").startswith("valid states: all,")
    assert ok(live.uri, "resource", "status", "-n", "-i", "node1", "-o", "{nodelist}") == "node1\n"
    assert "Invalid resource state bogus specified" in fails(
        live.uri, "resource", "status", "-s", "bogus"
    )


def test_a_drained_rank_gets_no_new_job_and_its_running_job_finishes(live: LiveInstance) -> None:
    uri = live.uri
    running = JobID.parse(ok(uri, "submit", "-N1", "--exclusive", HOLD, "true").strip())
    with Client(uri) as client:
        client.wait_event(running, "start")
        host = json.loads(client.lookup(running, ["R"])["R"])["execution"]["nodelist"][0]
        rank = host[-1]
        other = "1" if rank == "0" else "0"
        ok(uri, "resource", "drain", rank, "bad", "fan")
        ok(uri, "resource", "drain", f"node{other}")
        assert ok(uri, "uptime").split("\n")[0].endswith(",  size 1,  2 drained")
        assert ok(uri, "resource", "status", "-n", "-o", "{state} {nodelist}") == (
            f"draining {host}\ndrained node{other}\n"
        )
        listed = ok(uri, "resource", "drain", "-n", "-o", "{state} {ranks} {reason}")
        assert listed == f"draining {rank} bad fan\ndrained {other} \n"
        # drained ranks are down to resource list; the running job keeps its cores
        lines = ok(uri, "resource", "list", "-n", "-o", "{state} {nnodes} {ncores}").splitlines()
        assert lines == ["free 0 0", "allocated 1 4", "down 2 8"]
        waiting = JobID.parse(ok(uri, "submit", "-n1", "true").strip())
        client.cancel(running)
        client.wait_event(running, "clean")
        assert ok(uri, "resource", "list", "-n", "-s", "allocated", "-o", "{nnodes}") == "0\n"
        assert client.job_info(waiting, ["state"]).state.name == "SCHED"
        assert "drained  ✔      2 node[0-1]" in ok(uri, "resource", "status")
        ok(uri, "resource", "undrain", other, "fixed")
        client.wait_event(waiting, "clean")
        assert json.loads(client.lookup(waiting, ["R"])["R"])["execution"]["nodelist"] == [
            f"node{other}"
        ]


def test_drain_refusals_and_modes(live: LiveInstance) -> None:
    uri = live.uri
    ok(uri, "resource", "drain", "0", "first")
    err = fails(uri, "resource", "drain", "0-1", "second")
    assert err == (
        "pflux-resource: ERROR: rank 0 already drained\n"
        "Use --force to overwrite existing drain reason\n"
    )
    assert ok(uri, "resource", "drain", "-n", "-o", "{ranks}") == "0\n"  # 1 untouched
    ok(uri, "resource", "drain", "-u", "0-1", "second")
    assert ok(uri, "resource", "drain", "-n", "-o", "{ranks} {reason}") == "0 first\n1 second\n"
    ok(uri, "resource", "drain", "-f", "node0", "third")
    assert ok(uri, "resource", "drain", "-n", "-o", "{reason}") == "third\nsecond\n"
    assert ok(uri, "resource", "drain", "-n", "-i", "1", "-o", "{ranks}") == "1\n"
    assert "\033[01;32m" in ok(uri, "resource", "drain", "--color=always", "-o", "{color_up}")
    assert "Only one of --force and --update" in fails(uri, "resource", "drain", "-fu", "0")
    assert "idset is out of range" in fails(uri, "resource", "drain", "5")
    assert "invalid targets: nodeX is not a host here" in fails(uri, "resource", "drain", "nodeX")
    ok(uri, "resource", "undrain", "0")
    assert "rank 0 not drained" in fails(uri, "resource", "undrain", "0-1")
    ok(uri, "resource", "undrain", "-u", "0-1")
    assert ok(uri, "resource", "drain", "-n") == ""


def test_drained_ranks_survive_a_restart(tmp_path: Path) -> None:
    with start(tmp_path) as first:
        ok(first.uri, "resource", "drain", "node1", "disk", "errors")
    with start(tmp_path) as second:
        out = ok(second.uri, "resource", "drain", "-n", "-o", "{state} {nodelist} {reason}")
        assert out == "drained node1 disk errors\n"
        assert ok(second.uri, "resource", "info", "-s", "up") == "1 Nodes, 4 Cores, 0 GPUs\n"


def test_malformed_drain_requests_name_the_field(live: LiveInstance) -> None:
    with Client(live.uri) as client:
        with pytest.raises(RPCError) as bad_mode:
            client.drain_resources("0", mode="bogus")
        assert (bad_mode.value.errnum, bad_mode.value.errstr) == (
            errno.EINVAL,
            "sched.drain: mode: invalid enum value 'bogus'",
        )
        with pytest.raises(RPCError) as empty:
            client.undrain_resources("")
        assert (empty.value.errnum, empty.value.errstr) == (errno.EINVAL, "idset is empty")


def test_the_async_client_drains_and_undrains(live: LiveInstance) -> None:
    async def session() -> None:
        async with AsyncClient(live.uri) as client:
            await client.drain_resources("node0", "cable")
            await client.drain_resources("0-1", "cable", mode="update")
            status = await client.resource_status()
            assert status["drained"] == "0-1"
            assert status["drain"]["0"]["reason"] == "cable"
            assert status["drain"]["1"]["reason"] == "cable"
            await client.undrain_resources("0-1", "fixed")
            assert (await client.resource_status())["drain"] == {}

    asyncio.run(session())
