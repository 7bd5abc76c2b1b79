"""Test mode's node_durations: a node whose time is up is released before the job ends."""

from __future__ import annotations

from typing import Any

import pytest

from pflux.errors import PfluxError
from pflux.exec.testexec import simulation_config
from pflux.spec.idset import IdSet
from pflux.spec.resource import ResourceSet


def two_nodes() -> dict[str, Any]:
    cores = IdSet.range(0, 1)
    R = ResourceSet.build({4: (cores, IdSet()), 6: (cores, IdSet())}, ["h4", "h6"])  # noqa: N806
    return R.to_json()


def through_final_release(stream: Any) -> list[tuple[str, dict[str, Any]]]:
    got = []
    while not got or got[-1] != ("release", {"ranks": "all", "final": True}):
        got.append(stream.next())
    return got


def test_node_released_before_the_job_finishes(live: Any) -> None:
    jobspec = live.mock_job(run_duration="0.5s", node_durations=["0.05s"])
    stream = live.start(jobspec, two_nodes())
    assert through_final_release(stream) == [
        ("start", {}),
        ("release", {"ranks": "4", "final": False}),
        ("finish", {"status": 0}),
        ("release", {"ranks": "all", "final": True}),
    ]


def test_a_killed_job_releases_everything_at_once(live: Any) -> None:
    jobspec = live.mock_job(run_duration="0s", node_durations=["30s", "60s"])
    stream = live.start(jobspec, two_nodes())
    assert stream.next() == ("start", {})
    live.call("job-exec.kill", {"id": stream.id, "signum": 15})
    final = ("release", {"ranks": "all", "final": True})
    assert stream.all() == [("finish", {"status": 15}), final]


@pytest.mark.parametrize("value", ["2s", [2], ["soon"]])
def test_bad_node_durations_are_named(value: object) -> None:
    jobspec = {"attributes": {"system": {"exec": {"test": {"node_durations": value}}}}}
    with pytest.raises(PfluxError, match=r"attributes\.system\.exec\.test\.node_durations"):
        simulation_config(jobspec)
