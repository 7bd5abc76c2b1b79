"""The job manager's end of RFC 27 through a live broker: the real job manager, job-ingest
and kvs, and a scheduler double that sends what a test gives it."""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from pflux.broker.router import Broker, Request, Service, method
from pflux.errors import RPCError
from pflux.ingest.service import IngestService
from pflux.kvs.service import KVSService
from pflux.manager.service import JobManager
from pflux.spec.builder import from_command
from support.wire import as_sent

FLAG_WAITABLE = 2  # pflux.manager.job.FLAG_WAITABLE (RFC 21)


class SchedDouble(Service):
    """Answers each ``sched.alloc`` with ``reply(jobid)`` and records the requests."""

    name = "sched"

    def __init__(self, broker: Broker, reply: Callable[[int], Any]) -> None:
        super().__init__(broker)
        self.reply = reply
        self.requests: list[Any] = []

    @method("alloc")
    def alloc(self, req: Request) -> None:
        payload = as_sent(req.payload)
        self.requests.append(payload)
        req.respond(self.reply(payload["id"]))

    @method("cancel")
    def cancel(self, req: Request) -> None:
        pass

    @method("free")
    def free(self, req: Request) -> None:
        pass


async def with_manager(
    tmp_path: Path, reply: Callable[[int], Any], body: Callable[[Broker], Awaitable[None]]
) -> None:
    broker = Broker(os.getuid(), attrs={"state-dir": str(tmp_path)}, config={})
    for service in (KVSService(broker), JobManager(broker), IngestService(broker)):
        broker.register(service)
    broker.register(SchedDouble(broker, reply))
    await broker.start()
    try:
        await body(broker)
    finally:
        await broker.stop()


def run(
    tmp_path: Path, reply: Callable[[int], Any], body: Callable[[Broker], Awaitable[None]]
) -> None:
    asyncio.run(asyncio.wait_for(with_manager(tmp_path, reply, body), 20))


@pytest.mark.parametrize(
    ("payload", "errnum", "message"),
    [
        (
            {"mode": "limited"},
            errno.EINVAL,
            "job-manager.sched-ready: limit: required in limited mode",
        ),
        (
            {"mode": "limited", "limit": 0},
            errno.EINVAL,
            "job-manager.sched-ready: limit: expected int >= 1",
        ),
        (
            {"mode": "some"},
            errno.EINVAL,
            "job-manager.sched-ready: mode: invalid enum value 'some'",
        ),
        ({}, errno.EPROTO, "job-manager.sched-ready: mode: required"),
        ([], errno.EPROTO, "job-manager.sched-ready: payload: expected object, got array"),
    ],
)
def test_a_bad_sched_ready_is_refused_naming_the_field(
    tmp_path: Path, payload: Any, errnum: int, message: str
) -> None:
    async def body(broker: Broker) -> None:
        with pytest.raises(RPCError) as info:
            await broker.call("job-manager.sched-ready", payload)
        assert info.value.errnum == errnum
        assert info.value.errstr == message

    run(tmp_path, lambda jobid: {}, body)


async def submit_and_wait(broker: Broker) -> tuple[int, dict[str, Any]]:
    await broker.call("job-manager.sched-ready", {"mode": "unlimited"})
    jobspec = from_command(["true"])
    reply = await broker.call("job-ingest.submit", {"jobspec": jobspec, "flags": FLAG_WAITABLE})
    jobid = reply["id"]
    return jobid, as_sent(await broker.call("job-manager.wait", {"id": jobid}))


def test_malformed_alloc_response_raises_an_exception_naming_the_field(tmp_path: Path) -> None:
    async def body(broker: Broker) -> None:
        _, result = await submit_and_wait(broker)
        assert result["success"] is False
        assert "sched.alloc: type: invalid enum value 9" in result["errstr"]

    run(tmp_path, lambda jobid: {"id": jobid, "type": 9}, body)


def test_alloc_request_and_deny_response_as_typed(tmp_path: Path) -> None:
    sent: list[Any] = []

    async def body(broker: Broker) -> None:
        jobid, result = await submit_and_wait(broker)
        assert result["success"] is False
        assert "no such luck" in result["errstr"]
        [request] = broker.services["sched"].requests
        assert request["id"] == jobid
        assert set(request) == {"id", "priority", "userid", "t_submit", "jobspec"}
        assert request["userid"] == os.getuid()
        sent.append(request)

    run(tmp_path, lambda jobid: {"id": jobid, "type": 2, "note": "no such luck"}, body)
    assert sent
