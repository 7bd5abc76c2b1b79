"""The table of shell options: known names and their values, refusals naming the option."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pflux.errors import IdsetError
from pflux.spec.idset import IdSet
from pflux.spec.shell_options import check, cpu_map, exit_timeout, signal_option, taskmap_scheme


@given(st.lists(st.frozensets(st.integers(0, 255), min_size=1), min_size=1, max_size=4))
def test_cpu_map_reads_lists_and_masks(sets: list[frozenset[int]]) -> None:
    lists = ";".join(",".join(map(str, sorted(cpus))) for cpus in sets)
    masks = ";".join(hex(sum(1 << cpu for cpu in cpus)) for cpus in sets)
    assert cpu_map(lists) == cpu_map(masks) == sets


@pytest.mark.parametrize("text", ["", "x", "3-1", "0x0", "1;", "70000"])
def test_cpu_map_refuses_empty_and_bad_sets(text: str) -> None:
    with pytest.raises(ValueError, match="contains no cores or is invalid"):
        cpu_map(text)


def test_exit_timeout_and_signal_values() -> None:
    assert exit_timeout("1m") == 60.0
    assert exit_timeout("none") is None
    assert exit_timeout(2) == 2.0
    assert signal_option(1) == (10, 60.0)
    assert signal_option(0) is None
    assert signal_option({"signum": 12, "timeleft": "2m"}) == (12, 120.0)
    for bad, why in (
        ({"signum": 0}, "signum must be a signal number"),
        ({"when": 1}, "unknown key 'when'"),
        ("x", "must be an integer or a mapping"),
        ({"timeleft": "soon"}, "timeleft=.* is invalid"),
    ):
        with pytest.raises(ValueError, match=why):
            signal_option(bad)


def test_check_names_each_problem() -> None:
    assert check({"output": {}, "verbose": 2, "pmi": "simple", "pty": {"interactive": 1}}) == []
    assert check({"bogus": 1, "oom": {"adjust": 1}, "verbose": -1}) == [
        ("bogus", "unknown shell option"),
        ("oom", "not supported by pflux"),
        ("verbose", "must be an integer >= 0"),
    ]
    assert check({"rlimit": {"files": 1}})[0][1].startswith("files: unknown resource limit")
    assert check({"per-resource": {"type": "socket"}}) != []


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ({"scheme": "block", "value": "2"}, "block taskmap does not accept a value (got 2)"),
        (
            {"scheme": "manual", "value": "[[0,2,1,1]]"},
            "taskmap scheme 'manual' is not supported by pflux (block, cyclic[:N])",
        ),
        ({"scheme": "spiral"}, "unknown taskmap scheme 'spiral' (block, cyclic[:N])"),
        ({"scheme": "cyclic", "value": "0"}, "invalid cyclic stride: 0"),
        ({"scheme": "cyclic", "value": "x"}, "invalid cyclic stride: x"),
        ({"scheme": "cyclic", "value": 2}, "value must be a string"),
        ("cyclic", "must be an object with a scheme"),
    ],
)
def test_taskmaps_pflux_cannot_follow_are_refused(option: object, message: str) -> None:
    assert check({"taskmap": option}) == [("taskmap", message)]
    with pytest.raises(ValueError, match=re.escape(message)):
        taskmap_scheme(option)


def test_taskmap_scheme_reads_block_and_cyclic_strides() -> None:
    assert taskmap_scheme(None) == ("block", 1)
    assert taskmap_scheme({"scheme": "block", "value": ""}) == ("block", 1)
    assert taskmap_scheme({"scheme": "cyclic"}) == ("cyclic", 1)
    assert taskmap_scheme({"scheme": "cyclic", "value": "3"}) == ("cyclic", 3)


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ({"type": "socket", "count": 1}, "must be a mapping whose type is node or core"),
        ({"type": "node", "count": 0}, "count must be an integer >= 1, not 0"),
    ],
)
def test_a_bad_per_resource_is_refused(option: object, message: str) -> None:
    assert check({"per-resource": option}) == [("per-resource", message)]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("pmix", "unknown value 'pmix' (one of simple, pmi1, pmi2, off)"),
        ("simple,", "unknown value '' (one of simple, pmi1, pmi2, off)"),
        (1, "must be a string"),
    ],
)
def test_an_unknown_pmi_is_refused(value: object, message: str) -> None:
    assert check({"pmi": value}) == [("pmi", message)]


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("yes", "must be true or a mapping of interactive, capture and ranks"),
        ({"rank": "0"}, "rank: unknown key (expected ranks, capture or interactive)"),
        ({"capture": "x"}, "capture: must be a boolean or an integer"),
        ({"capture": 0}, "capture: must be true: a pty's output is kept only by capturing it"),
        ({"ranks": [0]}, 'ranks: must be an idset or "all"'),
        ({"ranks": -1}, 'ranks: must be an idset or "all"'),
    ],
)
def test_a_pty_option_that_cannot_work_is_refused_naming_the_key(
    option: object, message: str
) -> None:
    assert check({"pty": option}) == [("pty", message)]


@given(st.text(max_size=12))
def test_any_pty_ranks_text_is_an_idset_or_refused_naming_the_key(text: str) -> None:
    try:
        IdSet.decode(text)
    except IdsetError as exc:
        expected = [] if text == "all" else [("pty", f"ranks: {exc}")]
    else:
        expected = []
    assert check({"pty": {"ranks": text}}) == expected


def test_mpi_none_is_accepted_and_other_mpi_values_refused() -> None:
    # flux's nested-instance jobspecs ask for mpi=none; pflux's shell has no MPI plugins
    assert check({"mpi": "none"}) == []
    assert check({"mpi": "spectrum"}) == [
        (
            "mpi",
            'must be "none": pflux\'s shell has no MPI plugins (MPI programs start through PMI-1)',
        )
    ]
