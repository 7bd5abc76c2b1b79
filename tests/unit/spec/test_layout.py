"""Task placement: slots cut from R, tasks spread over them, cores mapped to CPUs."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.errors import ResourceError
from pflux.spec.builder import from_command
from pflux.spec.idset import IdSet
from pflux.spec.jobspec import JobspecView
from pflux.spec.layout import LayoutTarget, cpu_set, layout, targets
from pflux.spec.resource import ResourceSet
from pflux.spec.taskmap import from_json


def resources(
    cores: dict[int, list[int]], gpus: dict[int, list[int]] | None = None
) -> list[LayoutTarget]:
    gpus = gpus or {}
    children = {rank: (IdSet(ids), IdSet(gpus.get(rank, []))) for rank, ids in cores.items()}
    R = ResourceSet.build(children, [f"n{rank}" for rank in sorted(cores)])  # noqa: N806
    return targets(R.to_json())


def test_targets_reads_r_lite_in_rank_order() -> None:
    R = {  # noqa: N806
        "version": 1,
        "execution": {
            "R_lite": [
                {"rank": "2", "children": {"core": "0-1", "gpu": "0"}},
                {"rank": "0-1", "children": {"core": "3"}},
            ],
            "nodelist": ["n[0-2]"],
        },
    }
    assert targets(R) == [
        LayoutTarget(0, (3,), ()),
        LayoutTarget(1, (3,), ()),
        LayoutTarget(2, (0, 1), (0,)),
    ]


@pytest.mark.parametrize(
    "R",
    [
        {},
        {"execution": {"R_lite": []}},
        {"execution": {"R_lite": [{"rank": "x", "children": {"core": "0"}}]}},
        {"execution": {"R_lite": [{"rank": "0"}]}},
        {"execution": {"R_lite": "0"}},
    ],
)
def test_unreadable_r_lite_is_a_resource_error(R: dict[str, object]) -> None:  # noqa: N803
    with pytest.raises(ResourceError, match=r"R: execution\.R_lite"):
        targets(R)


def slot_jobspec(nslots: int, cores: int, count: dict[str, int], gpus: int = 0) -> JobspecView:
    children: list[dict[str, Any]] = [{"type": "core", "count": cores}]
    if gpus:
        children.append({"type": "gpu", "count": gpus})
    return JobspecView(
        {
            "version": 1,
            "resources": [{"type": "slot", "count": nslots, "label": "task", "with": children}],
            "tasks": [{"command": ["true"], "slot": "task", "count": count}],
            "attributes": {"system": {"duration": 0}},
        }
    )


def test_one_task_per_core_slot() -> None:
    placed = layout(JobspecView(from_command(["true"], num_tasks=4)), resources({0: [0, 1, 2, 3]}))
    assert [(t.rank, t.local_id, t.cores) for t in placed.tasks] == [
        (0, 0, (0,)),
        (1, 1, (1,)),
        (2, 2, (2,)),
        (3, 3, (3,)),
    ]
    assert placed.per_node == (4,)
    assert placed.taskmap() == {"version": 1, "map": [[0, 1, 4, 1]]}


def test_per_slot_puts_that_many_tasks_in_each_slot() -> None:
    placed = layout(slot_jobspec(2, 2, {"per_slot": 3}), resources({0: [0, 1, 2, 3]}))
    assert [t.cores for t in placed.tasks] == [(0, 1)] * 3 + [(2, 3)] * 3
    assert [t.rank for t in placed.tasks] == list(range(6))


def test_total_fills_the_first_slots_then_spreads_evenly() -> None:
    three = layout(slot_jobspec(4, 1, {"total": 3}), resources({0: [4, 5, 6, 7]}))
    assert [t.cores for t in three.tasks] == [(4,), (5,), (6,)]
    five = layout(slot_jobspec(2, 1, {"total": 5}), resources({0: [0, 1]}))
    assert [t.cores for t in five.tasks] == [(0,), (0,), (0,), (1,), (1,)]


def test_node_level_takes_slots_per_node_from_each_rank() -> None:
    jobspec = JobspecView(from_command(["true"], num_tasks=3, num_nodes=2))
    placed = layout(jobspec, resources({0: [0, 1, 2, 3], 1: [0, 1, 2, 3]}))
    assert [(t.rank, t.node, t.broker_rank, t.local_id) for t in placed.tasks] == [
        (0, 0, 0, 0),
        (1, 0, 0, 1),
        (2, 1, 1, 0),
    ]
    assert placed.per_node == (2, 1)
    assert placed.taskmap() == {"version": 1, "map": [[0, 1, 2, 1], [1, 1, 1, 1]]}


def test_gpus_are_shared_out_per_slot_or_all_visible_when_not_asked_for() -> None:
    R = resources({0: [0, 1, 2, 3]}, {0: [0, 1, 2, 3]})  # noqa: N806
    placed = layout(slot_jobspec(2, 2, {"per_slot": 1}, gpus=2), R)
    assert [t.gpus for t in placed.tasks] == [(0, 1), (2, 3)]
    unasked = layout(slot_jobspec(2, 2, {"per_slot": 1}), R)
    assert [t.gpus for t in unasked.tasks] == [(0, 1, 2, 3)] * 2


def test_a_target_smaller_than_a_slot_still_holds_one() -> None:
    placed = layout(slot_jobspec(1, 4, {"per_slot": 1}), resources({0: [0, 1]}))
    assert placed.tasks[0].cores == (0, 1)


def test_cpu_set_wraps_core_ids_onto_the_instance_cpus() -> None:
    assert cpu_set([0, 1], [3, 5, 7]) == {3, 5}
    assert cpu_set([3, 4], [3, 5, 7]) == {3, 5}


@settings(max_examples=150, deadline=None)
@given(
    ranks=st.lists(st.integers(1, 8), min_size=1, max_size=4),
    cores=st.integers(1, 3),
    nslots=st.integers(1, 8),
    count=st.one_of(
        st.builds(lambda n: {"per_slot": n}, st.integers(1, 3)),
        st.builds(lambda n: {"total": n}, st.integers(1, 20)),
    ),
)
def test_every_task_is_placed_once_on_cores_it_was_given(
    ranks: list[int], cores: int, nslots: int, count: dict[str, int]
) -> None:
    R = resources({rank: list(range(n)) for rank, n in enumerate(ranks)})  # noqa: N806
    jobspec = slot_jobspec(nslots, cores, count)
    placed = layout(jobspec, R)
    assert [t.rank for t in placed.tasks] == list(range(jobspec.ntasks))
    assert sum(placed.per_node) == jobspec.ntasks
    for node, n in enumerate(placed.per_node):
        on_node = [t for t in placed.tasks if t.node == node]
        assert [t.local_id for t in on_node] == list(range(n))
    for task in placed.tasks:
        assert set(task.cores) <= set(R[task.broker_rank].cores)
    per_slot: dict[tuple[int, tuple[int, ...]], int] = {}
    for task in placed.tasks:
        per_slot[task.broker_rank, task.cores] = per_slot.get((task.broker_rank, task.cores), 0) + 1
    assert max(per_slot.values()) - min(per_slot.values()) <= 1


def with_options(jobspec: dict[str, Any], **options: Any) -> JobspecView:
    jobspec["attributes"]["system"]["shell"] = {"options": options}
    return JobspecView(jobspec)


TWO_NODES = {0: [0, 1, 2, 3], 1: [0, 1, 2, 3]}


def test_cyclic_deals_ranks_to_the_nodes_in_turn() -> None:
    jobspec = with_options(
        from_command(["true"], num_tasks=4, num_nodes=2), taskmap={"scheme": "cyclic", "value": ""}
    )
    placed = layout(jobspec, resources(TWO_NODES))
    assert [(t.rank, t.node, t.local_id, t.cores) for t in placed.tasks] == [
        (0, 0, 0, (0,)),
        (1, 1, 0, (0,)),
        (2, 0, 1, (1,)),
        (3, 1, 1, (1,)),
    ]
    assert placed.per_node == (2, 2)
    assert placed.taskmap() == {"version": 1, "map": [[0, 2, 1, 2]]}


def test_cyclic_with_a_stride_and_uneven_nodes_maps_as_flux_core() -> None:
    jobspec = with_options(
        from_command(["true"], num_tasks=5, num_nodes=2), taskmap={"scheme": "cyclic", "value": "2"}
    )
    placed = layout(jobspec, resources(TWO_NODES))
    assert [t.node for t in placed.tasks] == [0, 0, 1, 1, 0]
    assert placed.taskmap()["map"] == [[0, 2, 2, 1], [0, 1, 1, 1]]
    ones = with_options(slot_jobspec(4, 1, {"per_slot": 1}).data, taskmap={"scheme": "cyclic"})
    uneven = layout(ones, resources({0: [0], 1: [0, 1, 2]}))  # 1 slot on node 0, 3 on node 1
    assert [t.node for t in uneven.tasks] == [0, 1, 1, 1]
    assert uneven.taskmap()["map"] == [[0, 2, 1, 1], [1, 1, 2, 1]]  # flux-core's encoding


@settings(max_examples=150, deadline=None)
@given(
    ranks=st.lists(st.integers(1, 6), min_size=1, max_size=4),
    stride=st.one_of(st.just(""), st.integers(1, 4).map(str)),
    per_slot=st.integers(1, 3),
)
def test_the_task_map_says_where_each_task_was_placed(
    ranks: list[int], stride: str, per_slot: int
) -> None:
    jobspec = slot_jobspec(sum(ranks), 1, {"per_slot": per_slot}).data
    placed = layout(
        with_options(jobspec, taskmap={"scheme": "cyclic", "value": stride}),
        resources({rank: list(range(n)) for rank, n in enumerate(ranks)}),
    )
    taskmap = from_json(placed.taskmap())
    assert [taskmap.nodeid(task.rank) for task in placed.tasks] == [t.node for t in placed.tasks]
    assert [taskmap.ntasks(node) for node in range(taskmap.nnodes)] == list(placed.per_node)


def test_block_is_the_default_and_takes_no_value() -> None:
    jobspec = from_command(["true"], num_tasks=4, num_nodes=2)
    block = layout(
        with_options(jobspec, taskmap={"scheme": "block", "value": ""}), resources(TWO_NODES)
    )
    assert block == layout(
        JobspecView(from_command(["true"], num_tasks=4, num_nodes=2)), resources(TWO_NODES)
    )
    assert block.taskmap()["map"] == [[0, 2, 2, 1]]


def test_tasks_per_node_runs_count_tasks_on_every_node_with_its_cores() -> None:
    jobspec = with_options(
        from_command(["true"], num_tasks=2, num_nodes=2, exclusive=True),
        **{"per-resource": {"type": "node", "count": 3}},
    )
    placed = layout(jobspec, resources({0: [0, 1], 1: [2, 3]}))
    assert [(t.rank, t.node, t.local_id, t.cores) for t in placed.tasks] == [
        (0, 0, 0, (0, 1)),
        (1, 0, 1, (0, 1)),
        (2, 0, 2, (0, 1)),
        (3, 1, 0, (2, 3)),
        (4, 1, 1, (2, 3)),
        (5, 1, 2, (2, 3)),
    ]
    assert placed.taskmap()["map"] == [[0, 2, 3, 1]]


def test_tasks_per_core_runs_count_tasks_on_every_core() -> None:
    jobspec = with_options(
        from_command(["true"], num_tasks=3), **{"per-resource": {"type": "core", "count": 2}}
    )
    placed = layout(jobspec, resources({0: [1, 2, 5]}))
    assert [t.cores for t in placed.tasks] == [(1,), (1,), (2,), (2,), (5,), (5,)]
    assert placed.per_node == (6,)


@settings(max_examples=60, deadline=None)
@given(
    cores_per_task=st.integers(1, 4),
    gpus_per_task=st.integers(0, 2),
    nodes=st.integers(1, 3),
    per_node=st.integers(1, 4),
)
def test_a_one_task_job_is_placed_as_the_general_rules_place_it(
    cores_per_task: int, gpus_per_task: int, nodes: int, per_node: int
) -> None:
    jobspec = from_command(["true"], cores_per_task=cores_per_task, gpus_per_task=gpus_per_task)
    R = resources(  # noqa: N806
        {rank: list(range(per_node)) for rank in range(nodes)},
        {rank: list(range(2)) for rank in range(nodes)},
    )
    general = from_command(["true"], cores_per_task=cores_per_task, gpus_per_task=gpus_per_task)
    general["attributes"]["system"]["shell"] = {"options": {"taskmap": {"scheme": "block"}}}
    assert layout(JobspecView(jobspec), R) == layout(JobspecView(general), R)
