"""RFC 34 task maps: the three text forms decode to the same blocks flux-core's
libtaskmap builds, encode back, and answer which tasks run where; bad text is
refused with libtaskmap's messages."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from pflux.spec.taskmap import Taskmap, TaskmapError, decode, decode_pmi, decode_raw, from_json


@pytest.mark.parametrize(
    ("text", "rfc34", "raw", "pmi"),
    [
        ("0-3;4-7", "[[0,2,4,1]]", "0-3;4-7", "(vector,(0,2,4))"),
        ("(vector,(0,2,4))", "[[0,2,4,1]]", "0-3;4-7", "(vector,(0,2,4))"),
        ('{"version":1,"map":[[0,2,4,1]]}', "[[0,2,4,1]]", "0-3;4-7", "(vector,(0,2,4))"),
        ("0,2;1,3", "[[0,2,1,2]]", "0,2;1,3", "(vector,(0,2,1),(0,2,1))"),
        ("[[0,1,1,1],[1,1,1,1],[0,1,1,1]]", "[[0,2,1,1],[0,1,1,1]]", "0,2;1", None),
        ("0;;1", "[[0,2,1,1]]", "0;1", "(vector,(0,2,1))"),  # empty nodes are skipped
        ("[[1,1,2,1],[0,1,1,1]]", "[[1,1,2,1],[0,1,1,1]]", "2;0-1", "(vector,(1,1,2),(0,1,1))"),
        ("0-1;2-5;6-7", "[[0,1,2,1],[1,1,4,1],[2,1,2,1]]", "0-1;2-5;6-7", None),
    ],
)
def test_every_form_decodes_to_flux_cores_blocks(
    text: str, rfc34: str, raw: str, pmi: str | None
) -> None:
    taskmap = decode(text)
    assert taskmap.encode() == f'{{"version":1,"map":{rfc34}}}'
    assert taskmap.encode_raw() == raw
    if pmi is not None:
        assert taskmap.encode_pmi() == pmi


def test_which_tasks_run_where() -> None:
    taskmap = decode("0,2;1,3-4")
    assert (taskmap.nnodes, taskmap.total_ntasks) == (2, 5)
    assert [str(taskmap.taskids(node)) for node in (0, 1)] == ["0,2", "1,3-4"]
    assert [taskmap.ntasks(node) for node in (0, 1)] == [2, 3]
    assert [taskmap.nodeid(task) for task in range(5)] == [0, 1, 0, 1, 1]
    with pytest.raises(TaskmapError, match=r"^No taskids for node 2$"):
        taskmap.taskids(2)
    with pytest.raises(TaskmapError, match=r"^failed to get task count for node 2$"):
        taskmap.ntasks(2)
    with pytest.raises(TaskmapError, match=r"^failed to get nodeid for task 5$"):
        taskmap.nodeid(5)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0;2", "missing taskid: 1"),
        ("0;3-4", "missing taskids: 1-2"),
        ("0-2;1", "duplicate taskid specified: 1"),
        ("0-3;2-5", "duplicate taskids specified: 2-3"),
        ("(0,1,1),(vector,", "vector prefix must precede blocklist"),
        ("(vector,(0,1))", "unable to parse block: (0,1))"),
        ("(vector,(0,0,1))", "invalid number in block: (0,0,1))"),
        ("(vector,)", "no tasks found in PMI_process_mapping"),
        ('{"version":2,"map":[]}', "expected version=1, got 2"),
        ("[[0,1,1]]", "error in taskmap entry 0: expected 4 integers"),
        ("[[0,0,1,1]]", "invalid entry [0,0,1,1]"),
        ("[1]", "entry 0 in taskmap is not an array"),
        ("5", "missing taskids: 0-4"),  # no brackets: a raw map
    ],
)
def test_bad_text_is_refused_in_libtaskmaps_words(text: str, message: str) -> None:
    with pytest.raises(TaskmapError) as caught:
        decode(text)
    assert str(caught.value) == message


def test_what_the_json_must_be_and_what_raw_cannot_say() -> None:
    with pytest.raises(TaskmapError, match=r"^taskmap must be an object or array$"):
        from_json("x")
    with pytest.raises(TaskmapError, match=r"^failed to convert taskmap to raw$"):
        decode("[[3,1,2,1]]").encode_raw()  # nodes 0-2 run nothing


def test_an_empty_pmi_mapping_is_an_empty_map() -> None:
    assert decode("").blocks == []
    assert decode_pmi("").encode_pmi() == ""


blocks = st.lists(
    st.tuples(st.integers(0, 6), st.integers(1, 3), st.integers(1, 4), st.integers(1, 3)).map(list),
    min_size=1,
    max_size=5,
)


@given(blocks)
@example([[2, 1, 1, 3], [3, 1, 1, 3]])
def test_each_form_round_trips(value: list[list[int]]) -> None:
    taskmap = from_json(value)
    placement = [taskmap.nodeid(task) for task in range(taskmap.total_ntasks)]
    for again in (decode(taskmap.encode()), decode_pmi(taskmap.encode_pmi())):
        assert [again.nodeid(task) for task in range(again.total_ntasks)] == placement
        # a block grown into its predecessor's shape merges with it when read back, as
        # flux-core's libtaskmap appends them ([[2,1,1,3],[3,1,1,3]] reads as
        # [[2,1,3,1],[3,1,3,1]], which reads back as [[2,2,3,1]]); then it stays
        assert decode(again.encode()).blocks == again.blocks
    if set(placement) == set(range(taskmap.nnodes)):  # raw says nothing of an idle node
        raw = decode_raw(taskmap.encode_raw())  # where each task runs, not the blocks
        assert [raw.nodeid(task) for task in range(raw.total_ntasks)] == placement
    assert sum(taskmap.ntasks(node) for node in set(placement)) == len(placement)


def test_appending_merges_as_libtaskmap() -> None:
    taskmap = Taskmap()
    for node, nnodes, ppn in ((0, 1, 2), (1, 1, 2), (0, 2, 2), (0, 1, 1), (0, 1, 1)):
        taskmap.append(node, nnodes, ppn)
    assert taskmap.blocks == [[0, 2, 2, 2], [0, 1, 2, 1]]
