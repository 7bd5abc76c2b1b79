"""The table of shell options: known names and their values, refusals naming the option."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pflux.spec.shell_options import check, cpu_map, exit_timeout, signal_option


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
