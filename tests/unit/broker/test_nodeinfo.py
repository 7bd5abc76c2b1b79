"""What a rank offers in its hello: its share of the machine, or what the config says."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from pflux.broker.instance import Instance
from pflux.broker.nodeinfo import core_share, node_info
from pflux.spec.idset import IdSet


@given(st.integers(min_value=0, max_value=256), st.integers(min_value=1, max_value=64))
def test_shares_split_the_cores_among_the_ranks_giving_none_twice(ncores: int, size: int) -> None:
    cores = list(range(100, 100 + ncores))
    shares = [core_share(cores, rank, size) for rank in range(size)]
    assert sorted(c for share in shares for c in share) == cores  # each core once
    assert max(map(len, shares)) - min(map(len, shares)) <= 1
    assert all(shares) == (ncores >= size)


def test_a_hello_says_this_machine_by_default() -> None:
    info = node_info()
    assert IdSet.decode(info["cores"]) == IdSet(os.sched_getaffinity(0))
    assert set(info) == {"hostname", "cores", "gpus", "version"}
    assert node_info("n1", cores=[4, 5, 6], gpus=[]) | {"version": ""} == {
        "hostname": "n1",
        "cores": "4-6",
        "gpus": "",
        "version": "",
    }


def test_test_size_ranks_offer_a_share_or_the_configured_counts(tmp_path: Path) -> None:
    shared = Instance(tmp_path / "a", test_size=2, test_hosts=["h0", "h1"])
    mine = sorted(os.sched_getaffinity(0))
    assert shared._hello(1)["hostname"] == "h1"
    assert IdSet.decode(shared._hello(1)["cores"]) == IdSet(core_share(mine, 1, 2))
    counted = Instance(tmp_path / "b", config={"resource": {"cores": 6, "gpus": 1}}, test_size=4)
    hellos = [counted._hello(rank) for rank in range(4)]
    assert [(h["cores"], h["gpus"]) for h in hellos] == [
        ("0-1", "0"),
        ("2-3", ""),
        ("4", ""),
        ("5", ""),
    ]
