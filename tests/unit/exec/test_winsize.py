"""job-exec.winsize: the size of a running job's ptys, passed on to its shell."""

from __future__ import annotations

import errno
from typing import Any

import pytest

from pflux.errors import RPCError
from pflux.exec.input import data_context
from pflux.spec.eventlog import parse


def winsize(live: Any, jobid: int, rows: Any, cols: Any) -> Any:
    return live.call("job-exec.winsize", {"id": jobid, "rows": rows, "cols": cols})


def output_of(live: Any, jobid: int) -> str:
    events = parse(live.guest(jobid, "output"))
    return "".join((e.context or {}).get("data", "") for e in events if e.name == "data")


def test_the_size_reaches_the_pty_before_later_input(live: Any) -> None:
    jobspec = live.job(["sh", "-c", "read x; stty size"])
    jobspec["attributes"]["system"]["shell"] = {"options": {"pty": 1}}
    stream = live.start(jobspec)
    assert stream.next() == ("start", {})
    assert winsize(live, stream.id, 30, 90) == {}
    live.call("job-exec.stdin", {"id": stream.id, **data_context("all", b"\n", False)})
    stream.all()
    assert stream.status() == 0
    assert output_of(live, stream.id).endswith("30 90\r\n")


def test_a_size_for_a_job_without_a_pty_or_out_of_range_is_refused(live: Any) -> None:
    stream = live.start(live.job(["sh", "-c", "exec sleep 100"]))
    stream.next()
    with pytest.raises(RPCError, match="has no pty") as error:
        winsize(live, stream.id, 30, 90)
    assert error.value.errnum == errno.ENOSYS
    live.call("job-exec.kill", {"id": stream.id, "signum": 9})
    stream.all()
    jobspec = live.job(["sh", "-c", "exec sleep 100"])
    jobspec["attributes"]["system"]["shell"] = {"options": {"pty": 1}}
    stream = live.start(jobspec)
    stream.next()
    for rows, cols, errnum, message in (
        (0, 80, errno.EINVAL, "rows: expected int >= 1"),
        (24, 65536, errno.EINVAL, "cols: expected int <= 65535"),
        ("24", 80, errno.EPROTO, "rows: expected int, got str"),
        (24, True, errno.EPROTO, "cols: expected int, got bool"),
    ):
        with pytest.raises(RPCError) as error:
            winsize(live, stream.id, rows, cols)
        assert error.value.errnum == errnum
        assert error.value.errstr == f"job-exec.winsize: {message}"
    live.call("job-exec.kill", {"id": stream.id, "signum": 9})
    stream.all()
