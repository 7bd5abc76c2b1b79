"""``pflux jobs`` of a running job whose duration ``pflux update`` changed: the counts
R gives (nodes, cores, tasks per node) stay; only the time limit moves."""

from __future__ import annotations

from typing import Any

import pytest

from pflux.api import Client
from support.instance import jobspec, ok

FIELDS = "{nnodes} {ncores} {ntasks} {ranks}"


def slots() -> dict[str, Any]:
    """Two cores, no node asked for: only R says how many nodes."""
    return jobspec("0", cores=2)


def whole_node() -> dict[str, Any]:
    """A whole node, a task per node: R says how many cores and so tasks."""
    spec = jobspec("0", cores=2)
    spec["resources"] = [{"type": "node", "count": 1, "exclusive": True, "with": spec["resources"]}]
    spec["attributes"]["system"]["shell"] = {"options": {"per-resource": {"type": "node"}}}
    return spec


@pytest.mark.parametrize(
    ("spec", "counts"), [(slots, ["1", "2", "1"]), (whole_node, ["1", "4", "1"])]
)
def test_update_keeps_r_counts(uri: str, client: Client, spec: Any, counts: list[str]) -> None:
    request = spec()
    request["attributes"]["system"]["duration"] = 600
    jobid = client.submit(request)
    client.wait_event(jobid, "start")
    before = ok(uri, "jobs", "-n", "-o", FIELDS, str(jobid)).split()
    assert before[:3] == counts
    ok(uri, "update", str(jobid), "duration=+10m")
    client.wait_event(jobid, "resource-update")
    assert ok(uri, "jobs", "-n", "-o", FIELDS, str(jobid)).split() == before
    client.cancel(jobid)
    client.wait(jobid)
    assert ok(uri, "jobs", "-n", "-o", FIELDS, str(jobid)).split() == before
