"""``pflux resource`` and the configured queues, against a live instance of four nodes
with properties (flux-core's t2350 cases): ``-q/--queue`` keeps a queue's resources,
``{queue}`` names the queues of each line, ``{propertiesx}`` hides the queues' names."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support.instance import LiveInstance, fails, ok

CONFIG = """
[[resource.config]]
hosts = "node0"
cores = "0-1"
properties = ["batch", "foo"]

[[resource.config]]
hosts = "node1"
cores = "0-1"
properties = ["batch"]

[[resource.config]]
hosts = "node[2-3]"
cores = "0-1"
properties = ["debug"]

[queues.every]

[queues.batch]
requires = ["batch"]

[queues.debug]
requires = ["debug"]

[policy.jobspec.defaults.system]
queue = "batch"
"""
HOLD = "--setattr=system.exec.test.run_duration=0s"  # runs until canceled


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveInstance]:
    config = tmp_path / "queues.toml"
    config.write_text(CONFIG)
    with LiveInstance(tmp_path / "state", "--config", str(config), cores=None) as instance:
        yield instance


def test_resource_commands_show_and_select_queues(live: LiveInstance) -> None:
    uri = live.uri
    jobid = ok(uri, "submit", "-q", "debug", "-N1", HOLD, "true").strip()
    ok(uri, "job", "wait-event", jobid, "start")
    assert ok(uri, "resource", "list", "-s", "free,allocated") == (
        "     STATE QUEUE       PROPERTIES NNODES NCORES NGPUS NODELIST\n"
        "      free every,batch foo             1      2     0 node0\n"
        "      free every,batch                 1      2     0 node1\n"
        "      free every,debug                 1      2     0 node3\n"
        " allocated every,debug                 1      2     0 node2\n"
    )
    assert ok(uri, "resource", "list", "-no", "{state} {nnodes} {queue}") == (
        "free 2 every,batch\nfree 1 every,debug\nallocated 1 every,debug\n"
        "down 0 every\ndown 0 batch\ndown 0 debug\n"
    )
    assert ok(uri, "resource", "list", "-s", "free", "-no", "{nnodes} {properties}") == (
        "1 batch,foo\n1 batch\n1 debug\n"
    )
    assert ok(uri, "resource", "list", "-q", "batch", "-no", "{state} {nnodes} {queue}") == (
        "free 2 batch\nallocated 0 batch\ndown 0 batch\n"
    )
    assert ok(uri, "resource", "info", "--queue=debug,every") == "4 Nodes, 8 Cores, 0 GPUs\n"
    assert ok(uri, "resource", "info", "-q", "debug", "-s", "free") == "1 Nodes, 2 Cores, 0 GPUs\n"
    assert '"nodelist":["node[0-1]"]' in ok(uri, "resource", "R", "-q", "batch")
    assert ok(uri, "resource", "status", "-q", "debug", "-no", "{state} {nodelist}") == (
        "avail node[2-3]\n"
    )
    ok(uri, "resource", "drain", "node1", "fan")
    assert ok(uri, "resource", "drain", "-q", "debug", "-no", "{nodelist}") == ""
    assert ok(uri, "resource", "drain", "-q", "batch", "-no", "{nodelist} {reason}") == (
        "node1 fan\n"
    )
    for command in ("list", "info", "R", "status", "drain"):
        assert fails(uri, "resource", command, "-q", "nope") == (
            "pflux-resource: ERROR: --queue: nope: no such queue\n"
        )
