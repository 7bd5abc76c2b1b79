"""What ``job-manager.update`` allows: flux-core's rules for pending and running jobs."""

from __future__ import annotations

import errno
from typing import Any

import pytest

from pflux.errors import RPCError
from pflux.manager.job import Job
from pflux.manager.update import (
    DURATION,
    QUEUE,
    check_supported,
    check_updates,
    running_expiration,
    with_expiration,
)

START = 1000.0


def running(R: Any = None) -> Job:  # noqa: N803
    job = Job(1)
    job.R = R if R is not None else {"version": 1, "execution": {"starttime": START}}
    return job


def check(exc: RPCError, errnum: int, text: str) -> None:
    assert (exc.errnum, text in exc.errstr) == (errnum, True), exc.errstr


@pytest.mark.parametrize(
    ("updates", "errnum", "text"),
    [
        ({"attributesx": 1}, errno.EINVAL, "only attributes, resources and tasks keys"),
        ({"job.name": 1}, errno.EINVAL, "'job.name'"),
        ({DURATION: -1}, errno.EINVAL, "must be a number of seconds >= 0, not -1"),
        ({DURATION: True}, errno.EINVAL, "not True"),
        ({DURATION: float("inf")}, errno.EINVAL, "not inf"),
    ],
)
def test_updates_that_cannot_be_made(updates: Any, errnum: int, text: str) -> None:
    with pytest.raises(RPCError) as info:
        check_updates(updates)
    check(info.value, errnum, text)


def test_well_formed_updates() -> None:
    updates = {"attributes": {}, "tasks.0.command": ["x"], "resources": [], DURATION: 60}
    assert check_updates(updates) is updates


def test_a_running_jobs_expiration_is_its_start_plus_the_duration() -> None:
    assert running_expiration(running(), {DURATION: 60}, owner=True, now=START + 1) == START + 60
    assert running_expiration(running(), {DURATION: 0}, owner=True, now=START + 1) == 0.0


@pytest.mark.parametrize(
    ("job", "updates", "owner", "errnum", "text"),
    [
        (running(), {DURATION: 60}, False, errno.EPERM, "requires instance owner privileges"),
        (running(), {DURATION: 0.5}, True, errno.EINVAL, "places job expiration in the past"),
        (running({"execution": {}}), {DURATION: 60}, True, errno.EINVAL, "job starttime"),
        (running({}), {DURATION: 60}, True, errno.EINVAL, "unable to get job starttime"),
    ],
)
def test_running_jobs_take_only_an_owners_duration(
    job: Job, updates: dict[str, Any], owner: bool, errnum: int, text: str
) -> None:
    with pytest.raises(RPCError) as info:
        running_expiration(job, updates, owner=owner, now=START + 1)
    check(info.value, errnum, text)


@pytest.mark.parametrize(
    ("updates", "running", "text"),
    [
        ({"attributes.system.bogus": 1}, False, "update of attributes.system.bogus not supported"),
        ({DURATION: 60, "tasks.0.command": ["x"]}, False, "update of tasks.0.command not"),
        ({"attributes.system.job.name": "x"}, True, "update of attributes.system.job.name not"),
        ({QUEUE: "batch"}, False, "'batch' is not a valid queue"),
        ({QUEUE: "batch"}, True, "update of queue for running job not supported"),
    ],
)
def test_only_the_duration_is_supported(updates: dict[str, Any], running: bool, text: str) -> None:
    with pytest.raises(RPCError) as info:
        check_supported(updates, running=running, named=False)
    check(info.value, errno.EINVAL, text)
    check_supported({DURATION: 60}, running=running, named=False)


def test_a_pending_jobs_queue_is_supported_with_named_queues() -> None:
    check_supported({QUEUE: "batch"}, running=False, named=True)
    with pytest.raises(RPCError, match="update of queue for running job not supported"):
        check_supported({QUEUE: "batch"}, running=True, named=True)


def test_with_expiration_copies() -> None:
    R = {"version": 1, "execution": {"starttime": 1.0, "expiration": 2.0}}  # noqa: N806
    assert with_expiration(R, 5.0) == {
        "version": 1,
        "execution": {"starttime": 1.0, "expiration": 5.0},
    }
    assert R["execution"]["expiration"] == 2.0
    assert with_expiration(None, 5.0) is None
