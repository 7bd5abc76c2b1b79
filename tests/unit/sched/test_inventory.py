"""The instance's resources: [[resource.config]], [resource] path, or this machine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pflux.errors import PfluxError
from pflux.sched.inventory import count_gpus, inventory


def test_counts_or_this_machine() -> None:
    assert inventory({"resource": {"cores": 2, "gpus": 1}}, "h").summary() == "rank0/core[0-1],gpu0"
    assert inventory({"resource": {"cores": 0, "gpus": 0}}, "h").nnodes == 0
    machine = inventory({}, "h")
    assert machine.nodelist == ("h",)
    assert machine.ngpus() == count_gpus()


def test_config_entries_give_ranks_in_order_of_first_appearance() -> None:
    config = {
        "resource": {
            "config": [
                {"hosts": "node[2-3]", "cores": "0-7"},
                {"hosts": "node[0-1]", "cores": "0-3"},
                {"hosts": "node3", "gpus": "0-1"},  # updates a host already listed
            ]
        }
    }
    resources = inventory(config, "ignored")
    assert resources.nodelist == ("node2", "node3", "node0", "node1")
    assert resources.cores(0) == resources.cores(1)
    assert len(resources.cores(1)) == 8
    assert len(resources.cores(2)) == 4
    assert resources.ngpus(1) == 2
    assert resources.ngpus(0) == 0
    assert resources.ncores() == 24


def test_config_entries_give_their_hosts_properties() -> None:
    config = {
        "resource": {
            "config": [
                {"hosts": "node[0-3]", "cores": "0-1", "properties": ["batch"]},
                {"hosts": "node[2-3]", "properties": ["debug", "batch"]},  # adds to node2, node3
            ]
        }
    }
    resources = inventory(config, "ignored")
    assert {name: ids.encode() for name, ids in resources.properties.items()} == {
        "batch": "0-3",
        "debug": "2-3",
    }
    assert resources.to_json()["execution"]["properties"] == {"batch": "0-3", "debug": "2-3"}


def test_path_loads_an_r_file_without_its_times(tmp_path: Path) -> None:
    r = {
        "version": 1,
        "execution": {
            "R_lite": [{"rank": "0-3", "children": {"core": "0-31"}}],
            "nodelist": ["sim[0-3]"],
            "starttime": 5.0,
            "expiration": 10.0,
        },
    }
    path = tmp_path / "R.json"
    path.write_text(json.dumps(r))
    resources = inventory({"resource": {"path": str(path)}}, "h")
    assert resources.nodelist == ("sim0", "sim1", "sim2", "sim3")
    assert resources.ncores() == 128
    assert (resources.starttime, resources.expiration) == (0.0, 0.0)


ENTRY = r"\[resource.config\[0\]\]"  # the first [[resource.config]] entry


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"config": []}, r"\[resource\] config: must be a non-empty array of tables"),
        ({"config": ["node0"]}, rf"{ENTRY}: must be a table"),
        ({"config": [{"hosts": 3}]}, rf"{ENTRY} hosts: must be a hostlist"),
        ({"config": [{"hosts": "n[1-"}]}, rf"{ENTRY} hosts: "),
        ({"config": [{"hosts": "n1", "cores": 4}]}, rf"{ENTRY} cores: must be an idset"),
        ({"config": [{"hosts": "n1", "cores": "3-1"}]}, rf"{ENTRY} cores: "),
        (
            {"config": [{"hosts": "n1", "cores": "0", "colour": "red"}]},
            rf"{ENTRY} colour: unknown key \(known: hosts, cores, gpus, properties\)",
        ),
        (
            {"config": [{"hosts": "n1", "cores": "0", "properties": "batch"}]},
            rf"{ENTRY} properties: must be an array of names",
        ),
        (
            {"config": [{"hosts": "n1", "cores": "0", "properties": ["a|b"]}]},
            rf"{ENTRY} properties: invalid character '\|' in 'a\|b'",
        ),
        ({"config": [{"hosts": "n1", "gpus": "0"}]}, r"\[resource.config\]: host n1 has no cores"),
        (
            {"config": [{"hosts": "n1", "cores": "0"}], "cores": 4},
            r"\[resource\] cores: cannot be combined with config",
        ),
        ({"path": 7}, r"\[resource\] path: must be the path of an R file"),
        ({"path": "/nonexistent/R.json"}, r"\[resource\] path: /nonexistent/R.json: No such file"),
        ({"cores": -1}, r"\[resource\] cores: must be an integer >= 0, got -1"),
    ],
)
def test_bad_configuration_names_the_key(section: dict[str, Any], message: str) -> None:
    with pytest.raises(PfluxError, match=message):
        inventory({"resource": section}, "h")


def test_bad_r_file_names_the_file_and_the_rule(tmp_path: Path) -> None:
    path = tmp_path / "R.json"
    path.write_text("{not json")
    with pytest.raises(PfluxError, match="not JSON"):
        inventory({"resource": {"path": str(path)}}, "h")
    path.write_text(json.dumps({"version": 2}))
    with pytest.raises(PfluxError, match=r"R.json: version: unsupported R version 2"):
        inventory({"resource": {"path": str(path)}}, "h")
