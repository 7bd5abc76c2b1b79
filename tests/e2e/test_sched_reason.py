"""The scheduler's ``reason_pending`` follows the head of the queue: after ``pflux job
urgency`` puts another job first, the new head has it and the old one, which no pass
looks at while nothing is free, no longer does (as ``t_estimate``)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from pflux.api import Client
from support.instance import jobspec, ok, quiesce

REASON = "insufficient resources"


@pytest.fixture(autouse=True)
def _clean(client: Client) -> Iterator[None]:
    quiesce(client)
    yield
    quiesce(client)


def reasons(uri: str, *jobids: int) -> list[str]:
    out = ok(uri, "jobs", "-n", "-o", "{id.dec}:{sched.reason_pending}", *map(str, jobids))
    found = dict(line.split(":", 1) for line in out.splitlines())
    return [found[str(int(jobid))] for jobid in jobids]


def until(uri: str, jobids: tuple[int, ...], expected: list[str]) -> None:
    """Wait for the listing to show ``expected`` (annotations are not events: no event
    to wait on; a generous deadline)."""
    deadline = time.monotonic() + 30
    while (shown := reasons(uri, *jobids)) != expected:
        assert time.monotonic() < deadline, shown
        time.sleep(0.05)


def test_reason_pending_moves_to_the_new_head(uri: str, client: Client) -> None:
    blocker = client.submit(jobspec("0", cores=4))
    client.wait_event(blocker, "start")
    first, second = client.submit(jobspec()), client.submit(jobspec())
    until(uri, (first, second), [REASON, ""])
    client.urgency(second, 31)
    until(uri, (first, second), ["", REASON])
    client.cancel(blocker)
    assert client.wait(first).success
    assert client.wait(second).success
