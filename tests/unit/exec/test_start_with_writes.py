"""A run's ``start`` goes out at the end of the turn that writes its shells' start
records, after them, with every answer of that turn after it, in order: a short job,
whose shell reports its start and its end together, has its ``start``, ``finish`` and
``release`` reach the job manager in one turn, to be posted and committed together."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pflux.exec.job import ExecJob

JOBID = 7 << 40


class _Writes:
    """The turn's writes, as ``GuestWrites`` has them: callbacks for the turn's end."""

    def __init__(self) -> None:
        self.after: list[Callable[[], None]] = []

    def after_flush(self, fn: Callable[[], None]) -> None:
        self.after.append(fn)

    def end_turn(self) -> None:
        after, self.after = self.after, []
        for fn in after:
            fn()


class _Request:
    def __init__(self) -> None:
        self.answers: list[tuple[str, dict[str, Any]]] = []

    def respond(self, payload: Any) -> None:
        data = {f: getattr(payload.data, f) for f in payload.data.__struct_fields__}
        self.answers.append((payload.type.name.lower(), data))


class _Broker:
    loop = None  # no timer is armed: R sets no expiration


class _Service:
    def __init__(self) -> None:
        self.broker = _Broker()
        self.kill_timeout = 5.0
        self.writes = _Writes()
        self.gone: list[int] = []

    def ended(self, jobid: int) -> None:
        self.gone.append(jobid)


def _job(reattach: bool = False) -> tuple[ExecJob, _Service, _Request]:
    service, req = _Service(), _Request()
    job = ExecJob(
        service,  # type: ignore[arg-type]
        req,  # type: ignore[arg-type]
        jobid=JOBID,
        userid=0,
        jobspec={},
        R={},
        reattach=reattach,
    )
    job.started = True
    return job, service, req


def test_start_and_what_follows_in_its_turn_go_out_after_the_turns_writes() -> None:
    job, service, req = _job()
    job.set_running(after_writes=True)
    job.raise_exception("test", 1, "a note")
    job.release("1")
    job.complete(0)
    assert req.answers == []  # nothing before the turn's writes are sent
    service.writes.end_turn()
    assert req.answers == [
        ("start", {}),
        ("exception", {"severity": 1, "type": "test", "note": "a note"}),
        ("release", {"ranks": "1", "final": False}),
        ("finish", {"status": 0}),
        ("release", {"ranks": "all", "final": True}),
    ]
    assert service.gone == [JOBID]
    job.raise_exception("test", 1, "later")  # the next turn's answers go at once
    assert req.answers[-1] == ("exception", {"severity": 1, "type": "test", "note": "later"})


def test_a_start_without_writes_is_answered_at_once() -> None:
    job, service, req = _job()
    job.set_running()
    assert req.answers == [("start", {})]
    assert service.writes.after == []


def test_a_reattached_job_is_not_started_again_but_its_answers_wait_all_the_same() -> None:
    job, service, req = _job(reattach=True)
    job.set_running(after_writes=True)
    job.complete(256)
    assert req.answers == []
    service.writes.end_turn()
    assert req.answers == [
        ("finish", {"status": 256}),
        ("release", {"ranks": "all", "final": True}),
    ]
