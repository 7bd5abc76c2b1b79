"""``pflux queue list`` and ``-q NAME`` against a live instance, with flux-core's expected
values for the anonymous queue (its t2240 tests): one line, no limits, its state."""

from __future__ import annotations

import errno

import pytest

from pflux.api import Client
from pflux.errors import RPCError
from support.instance import fails, ok

ALL_LIMITS = (
    "{defaults.timelimit},{limits.timelimit},"
    "{limits.range.nnodes},{limits.range.ncores},{limits.range.ngpus},"
    "{limits.min.nnodes},{limits.min.ncores},{limits.min.ngpus},"
    "{limits.max.nnodes},{limits.max.ncores},{limits.max.ngpus}"
)


def test_list_shows_the_anonymous_queue_with_no_limits(uri: str) -> None:
    lines = ok(uri, "queue", "list").splitlines()
    assert lines == [
        " EN ST TDEFAULT   TLIMIT     NNODES     NCORES      NGPUS",
        "  ✔  ✔      inf      inf      0-inf      0-inf      0-inf",
    ]
    assert ok(uri, "queue", "list", "-n", "-o", "{queue},{queuem}") == ",\n"
    limits = ok(uri, "queue", "list", "--no-header", "--format", ALL_LIMITS)
    assert limits == "inf,inf,0-inf,0-inf,0-inf,0,0,0,inf,inf,inf\n"
    fsd = ok(uri, "queue", "list", "-no", "{defaults.timelimit!F},{limits.timelimit!F}")
    assert fsd == "inf,inf\n"
    header = ok(uri, "queue", "list", "-o", "{limits.min.nnodes} {limits.max.ngpus}")
    assert header.splitlines()[0] == "MINNODES MAXGPUS"
    assert "default " in ok(uri, "queue", "list", "-o", "help")


def test_list_follows_the_queue_state(uri: str) -> None:
    fields = "{submission},{scheduling},{enabled},{started},{enabled.ascii}{started.ascii}"
    assert ok(uri, "queue", "list", "-no", fields) == "enabled,started,✔,✔,yy\n"
    ok(uri, "queue", "stop", "--quiet")
    try:
        assert ok(uri, "queue", "list", "-no", fields) == "enabled,stopped,✔,✗,yn\n"
        ok(uri, "queue", "disable", "--quiet", "-m", "testing")
        assert ok(uri, "queue", "list", "-no", fields) == "disabled,stopped,✗,✗,nn\n"
    finally:
        ok(uri, "queue", "enable", "--quiet")
        ok(uri, "queue", "start", "--quiet")


def test_a_queue_name_is_refused_as_flux_refuses_an_unknown_queue(uri: str, client: Client) -> None:
    assert "pflux-queue: ERROR: No such queue: batch" in fails(uri, "queue", "list", "-q", "batch")
    assert "No such queue: debug" in fails(uri, "queue", "list", "--queue=debug")
    assert "Unknown format field: foobar" in fails(uri, "queue", "list", "-o", "{foobar}")
    for command, what in (
        ("status", "status"),
        ("enable", "enable"),
        ("disable", "enable"),
        ("start", "start"),
        ("stop", "start"),
    ):
        err = fails(uri, "queue", command, "-q", "batch")
        assert f"pflux-queue: ERROR: {what}: 'batch' is not a valid queue" in err
    assert ok(uri, "queue", "status") == "Job submission is enabled\nScheduling is started\n"
    with pytest.raises(RPCError) as raised:
        client.handle.call("job-manager.queue-start", {"start": False, "name": "batch"})
    assert raised.value.errnum == errno.EINVAL
    assert raised.value.errstr == "'batch' is not a valid queue"
    assert client.handle.call("job-manager.queue-list", {}) == {"queues": []}
