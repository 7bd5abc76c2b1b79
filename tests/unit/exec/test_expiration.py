"""``job-exec.expiration``: a running job's new expiration re-arms its time limit (flux-core's)."""

from __future__ import annotations

import errno
import queue
import time
from typing import Any

import pytest

from pflux.errors import RPCError

TIMELIMIT = (
    "exception",
    {"severity": 0, "type": "timelimit", "note": "resource allocation expired"},
)


def test_a_shorter_expiration_fires_the_time_limit_then(live: Any) -> None:
    now = time.time()
    stream = live.start(live.mock_job(), live.make_R(starttime=now, expiration=now + 100))
    assert stream.next() == ("start", {})
    live.call("job-exec.expiration", {"id": stream.id, "expiration": time.time() + 0.2})
    assert stream.next(timeout=10) == TIMELIMIT
    assert stream.kinds() == ["finish", "release"]


def test_a_later_or_no_expiration_keeps_the_job_past_its_old_one(live: Any) -> None:
    now = time.time()
    extended = live.start(live.mock_job(), live.make_R(starttime=now, expiration=now + 0.3))
    unlimited = live.start(live.mock_job(), live.make_R(starttime=now, expiration=now + 0.3))
    assert extended.next() == ("start", {})
    assert unlimited.next() == ("start", {})
    live.call("job-exec.expiration", {"id": extended.id, "expiration": now + 100})
    live.call("job-exec.expiration", {"id": unlimited.id, "expiration": 0})
    # a witness whose limit is later than theirs was: once it has fired, theirs would have
    witness = live.start(live.mock_job(), live.make_R(starttime=now, expiration=now + 0.5))
    assert witness.until("exception")[-1] == TIMELIMIT
    for stream in (extended, unlimited):
        with pytest.raises(queue.Empty):
            stream.next(timeout=0)
        live.call("job-exec.kill", {"id": stream.id, "signum": 9})
        assert stream.kinds() == ["finish", "release"]


def test_an_expiration_before_the_start_is_kept_for_it(live: Any) -> None:
    now = time.time()
    # a real job: its shell reports the tasks started well after the update is handled
    stream = live.start(
        live.job(["sleep", "100"]), live.make_R(starttime=now, expiration=now + 100)
    )
    live.call("job-exec.expiration", {"id": stream.id, "expiration": time.time() + 0.2})
    assert stream.next() == ("start", {})
    assert stream.next(timeout=10) == TIMELIMIT
    assert stream.kinds() == ["finish", "release"]


@pytest.mark.parametrize(
    ("payload", "errnum", "text"),
    [
        ({"id": 99, "expiration": 1.0}, errno.ENOENT, "not running"),
        ({"expiration": 1.0}, errno.EPROTO, r"^job-exec\.expiration: id: required$"),
    ],
)
def test_errors(live: Any, payload: dict[str, Any], errnum: int, text: str) -> None:
    with pytest.raises(RPCError, match=text) as info:
        live.call("job-exec.expiration", payload)
    assert info.value.errnum == errnum


def test_a_bad_expiration_is_refused(live: Any) -> None:
    stream = live.start(live.mock_job())
    assert stream.next() == ("start", {})
    for bad, errnum, rule in (
        (-1, errno.EINVAL, "expected float >= 0.0"),
        ("soon", errno.EPROTO, "expected float, got str"),
        (True, errno.EPROTO, "expected float, got bool"),
        (None, errno.EPROTO, "expected float, got null"),
        (float("inf"), errno.EINVAL, "expected float < inf"),
    ):
        with pytest.raises(RPCError) as info:
            live.call("job-exec.expiration", {"id": stream.id, "expiration": bad})
        assert info.value.errnum == errnum
        assert info.value.errstr == f"job-exec.expiration: expiration: {rule}"
    live.call("job-exec.kill", {"id": stream.id, "signum": 9})
    assert stream.kinds() == ["finish", "release"]
