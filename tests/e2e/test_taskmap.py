"""Task placement options on an instance of four nodes: --tasks-per-node, --tasks-per-core,
--cores, --taskmap, as flux-core's t2616-job-shell-taskmap checks them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.instance import LiveInstance, fails, ok

FOUR_NODES = '[[resource.config]]\nhosts = "node[0-3]"\ncores = "0-3"\n'
# each task's rank, local id, job size and PMI rank; its node is that of its output file
SHOW = ["sh", "-c", "echo $FLUX_TASK_RANK $FLUX_TASK_LOCAL_ID $FLUX_JOB_SIZE $PMI_RANK"]


@pytest.fixture(scope="module")
def uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    where = tmp_path_factory.mktemp("four")
    (where / "four.toml").write_text(FOUR_NODES)
    with LiveInstance(where / "state", "--config", str(where / "four.toml"), cores=None) as live:
        yield live.uri


def run(uri: str, where: Path, *options: str) -> tuple[list[list[list[int]]], list[int]]:
    """Run SHOW with ``options``: the job's RFC 34 task map, and each task's node by rank."""
    where.mkdir(exist_ok=True)
    jobid = ok(uri, "submit", "--wait", f"--output={where}/out.{{{{node.id}}}}", *options, *SHOW)
    events = ok(uri, "job", "eventlog", "-p", "exec", "-f", "json", jobid.strip())
    start = next(e for e in map(json.loads, events.splitlines()) if e["name"] == "shell.start")
    nodes: dict[int, int] = {}
    for path in sorted(where.glob("out.*")):
        local_ids = []
        for line in path.read_text().splitlines():
            rank, local_id, size, pmi_rank = map(int, line.split())
            assert pmi_rank == rank
            nodes[rank] = int(path.suffix[1:])
            local_ids.append((rank, local_id))
        assert [i for _, i in sorted(local_ids)] == list(range(len(local_ids)))
    assert size == len(nodes)
    return start["context"]["taskmap"]["map"], [nodes[rank] for rank in sorted(nodes)]


def test_tasks_per_node(uri: str, tmp_path: Path) -> None:
    assert run(uri, tmp_path, "-N4", "--tasks-per-node=2") == (
        [[0, 4, 2, 1]],
        [0, 0, 1, 1, 2, 2, 3, 3],
    )
    assert ok(uri, "jobs", "-a", "-n", "-o", "{ntasks}").split()[0] == "8"


def test_taskmap_block_changes_nothing(uri: str, tmp_path: Path) -> None:
    taskmap, nodes = run(uri, tmp_path, "-N4", "--tasks-per-node=4", "--taskmap=block")
    assert taskmap == [[0, 4, 4, 1]]
    assert nodes == [node for node in range(4) for _ in range(4)]


def test_taskmap_cyclic(uri: str, tmp_path: Path) -> None:
    taskmap, nodes = run(uri, tmp_path, "-N4", "--tasks-per-node=4", "--taskmap=cyclic")
    assert taskmap == [[0, 4, 1, 4]]
    assert nodes == [0, 1, 2, 3] * 4


def test_taskmap_cyclic_with_strides(uri: str, tmp_path: Path) -> None:
    assert run(uri, tmp_path / "2", "-N4", "--tasks-per-node=4", "--taskmap=cyclic:2")[0] == [
        [0, 4, 2, 2]
    ]
    taskmap, nodes = run(uri, tmp_path / "3", "-N4", "--tasks-per-node=4", "--taskmap=cyclic:3")
    assert taskmap == [[0, 4, 3, 1], [0, 4, 1, 1]]
    assert nodes == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 0, 1, 2, 3]


def test_cores_and_tasks_per_core(uri: str, tmp_path: Path) -> None:
    taskmap, nodes = run(uri, tmp_path, "--cores=4", "--tasks-per-core=2")
    assert taskmap == [[0, 1, 8, 1]]
    assert nodes == [0] * 8
    ntasks = ok(uri, "jobs", "-a", "-n", "-o", "{ntasks}").split()[0]
    assert ntasks == "8"


def test_block_with_a_value_fails_the_job(uri: str) -> None:
    assert "block taskmap does not accept a value (got oops)" in fails(
        uri, "run", "-N2", "--tasks-per-node=1", "--taskmap=block:oops", "true"
    )


def test_ntasks_known_only_from_r_agree_with_what_ran(uri: str, tmp_path: Path) -> None:
    taskmap, nodes = run(uri, tmp_path / "a", "--cores=2", "--tasks-per-node=3")
    assert (taskmap, nodes) == ([[0, 1, 3, 1]], [0, 0, 0])
    assert ok(uri, "jobs", "-a", "-n", "-o", "{ntasks}").split()[0] == "3"
    taskmap, nodes = run(uri, tmp_path / "b", "-N2", "--tasks-per-core=1")  # whole nodes
    assert (taskmap, nodes) == ([[0, 2, 4, 1]], [0] * 4 + [1] * 4)
    assert ok(uri, "jobs", "-a", "-n", "-o", "{ntasks}").split()[0] == "8"
