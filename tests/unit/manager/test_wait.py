"""``job-manager.wait``'s rules (``pflux.manager.wait``), as flux-core's wait.c has them."""

from __future__ import annotations

import errno
from collections.abc import Callable
from typing import Any

import pytest

from pflux.errors import RPCError
from pflux.manager.job import Job
from pflux.manager.wait import ANY, HAS_WAITER, NONE_LEFT, NOT_WAITABLE, UNKNOWN, Waits
from pflux.spec.states import FLAG_WAITABLE, State
from support.wire import as_sent


class Request:
    """What ``Waits`` uses of a request: its role, its answer, its disconnection."""

    def __init__(self, *, owner: bool = True) -> None:
        self.owner = owner
        self.answer: Any = None
        self.errnum = 0
        self.errstr = ""
        self.gone: list[Callable[[], None]] = []

    def respond(self, payload: Any) -> None:
        self.answer = as_sent(payload)  # as the requester reads it

    def error(self, errnum: int, errstr: str) -> None:
        self.errnum, self.errstr = errnum, errstr

    def on_disconnect(self, callback: Callable[[], None]) -> None:
        self.gone.append(callback)


def job(jobid: int, *, waitable: bool = True, status: int = 0) -> Job:
    new = Job(jobid)
    new.flags = FLAG_WAITABLE if waitable else 0
    new.finish_status = status
    return new


def end(waits: Waits, ended: Job) -> None:
    ended.state = State.INACTIVE
    waits.ended(ended)


def ask(waits: Waits, jobid: int, active: Job | None = None, **kw: Any) -> Request:
    req = Request(**kw)
    waits.request(req, jobid, active)  # type: ignore[arg-type]
    return req


def refused(waits: Waits, jobid: int, active: Job | None = None, **kw: Any) -> RPCError:
    with pytest.raises(RPCError) as info:
        ask(waits, jobid, active, **kw)
    return info.value


def test_a_result_is_kept_until_taken_once() -> None:
    waits = Waits()
    one = job(1, status=256)
    waits.accepted(one)
    end(waits, one)
    assert ask(waits, 1).answer == {
        "id": 1,
        "success": False,
        "errstr": "task(s) exited with exit code 1",
    }
    again = refused(waits, 1)
    assert (again.errnum, again.errstr) == (errno.ECHILD, UNKNOWN)


def test_a_wait_by_id_is_answered_when_the_job_ends() -> None:
    waits = Waits()
    one = job(1)
    waits.accepted(one)
    req = ask(waits, 1, one)
    assert req.answer is None
    second = refused(waits, 1, one)
    assert (second.errnum, second.errstr) == (errno.ECHILD, HAS_WAITER)
    end(waits, one)
    assert req.answer["success"] is True
    assert not waits.zombies


def test_jobs_not_waitable_cannot_be_waited_for() -> None:
    waits = Waits()
    plain = job(1, waitable=False)
    waits.accepted(plain)
    error = refused(waits, 1, plain)
    assert (error.errnum, error.errstr) == (errno.ECHILD, NOT_WAITABLE)
    end(waits, plain)
    assert not waits.zombies
    assert refused(waits, 1).errstr == UNKNOWN


def test_any_takes_zombies_in_order_then_the_next_to_end() -> None:
    waits = Waits()
    jobs = [job(i) for i in (1, 2, 3)]
    for each in jobs:
        waits.accepted(each)
    end(waits, jobs[1])
    end(waits, jobs[0])
    assert [ask(waits, ANY).answer["id"] for _ in range(2)] == [2, 1]
    pending = ask(waits, ANY)
    assert pending.answer is None
    end(waits, jobs[2])
    assert pending.answer["id"] == 3


def test_any_is_refused_when_no_waitable_job_is_left_for_it() -> None:
    waits = Waits()
    assert ask(waits, ANY).errstr == NONE_LEFT
    one = job(1)
    waits.accepted(one)
    by_id = ask(waits, 1, one)
    late = ask(waits, ANY)  # the one job is already waited for by id
    assert (late.errnum, late.errstr) == (errno.ECHILD, NONE_LEFT)
    end(waits, one)
    assert by_id.answer["id"] == 1


def test_a_disconnected_waiter_leaves_the_result_as_a_zombie() -> None:
    waits = Waits()
    one = job(1)
    waits.accepted(one)
    req = ask(waits, ANY)
    for callback in req.gone:
        callback()
    end(waits, one)
    assert req.answer is None
    assert list(waits.zombies) == [1]


def test_only_the_owner_may_wait() -> None:
    error = refused(Waits(), ANY, owner=False)
    assert error.errnum == errno.EPERM
