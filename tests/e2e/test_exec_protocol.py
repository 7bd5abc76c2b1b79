"""RFC 32 end to end: an execution service overriding job-exec, its death, and partial release.

``Remote`` is a second execution service, ``exec-double``, served from this
test process over the instance's socket exactly as a service in a process of
its own is (``pflux.broker.module``); the test answers its start requests.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import queue
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest

from pflux.api import Client
from pflux.broker.module import Link
from pflux.broker.router import Broker, Request, Service, method
from pflux.errors import RPCError
from pflux.protocol.exec import ExecResponse, response
from pflux.protocol.uri import socket_path
from pflux.spec.eventlog import parse
from pflux.spec.fluid import JobID
from support.instance import LiveInstance, jobspec, ok

TIMEOUT = 30.0


class ExecDouble(Service):
    """Queues each start request for the test to answer."""

    name = "exec-double"

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker)
        self.starts: queue.Queue[Request] = queue.Queue()

    @method("start")
    def start(self, req: Request) -> None:
        self.starts.put(req)

    @method("exception")
    def exception(self, req: Request) -> None:
        req.respond({})


class Remote:
    """An ExecDouble on an event loop in a thread of its own, linked to the instance."""

    def __init__(self, uri: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.run(self._connect(uri))

    async def _connect(self, uri: str) -> None:
        self.local = Broker(os.getuid())
        self.link = Link(self.local)
        await self.loop.create_unix_connection(lambda: self.link, socket_path(uri))
        self.local.fallback = self.link.forward
        self.service = ExecDouble(self.local)
        self.local.register(self.service)
        await self.link.call("broker.service-add", {"service": ExecDouble.name})

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(TIMEOUT)

    def hello(self, service: str = ExecDouble.name) -> Any:
        return self.run(self.link.call("job-manager.exec-hello", {"service": service}))

    def next_start(self) -> Request:
        return self.service.starts.get(timeout=TIMEOUT)

    def answer(self, req: Request, kind: ExecResponse, data: dict[str, Any]) -> None:
        payload = response(req.payload["id"], kind, data)
        self.loop.call_soon_threadsafe(req.respond, payload)

    def fail(self, req: Request, errnum: int, text: str) -> None:
        self.loop.call_soon_threadsafe(req.error, errnum, text)

    def close(self) -> None:
        async def hang_up() -> None:
            assert self.link.transport is not None
            self.link.transport.close()
            await self.link.closed

        self.run(hang_up())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveInstance]:
    with LiveInstance(tmp_path / "state") as instance:
        yield instance


def names(client: Client, jobid: JobID) -> list[str]:
    return [event.name for event in parse(client.lookup(jobid, ["eventlog"])["eventlog"])]


def quiet(client: Client) -> None:
    """Return once the job manager has nothing in flight (every event acted on)."""
    client.handle.call("job-manager.quiescent", {}, wait=True)


def test_override_refused_while_starting_then_death_and_recovery(live: LiveInstance) -> None:
    with Client(live.uri) as client:
        running = client.submit(jobspec("0s"))  # job-exec runs it until it is canceled
        client.wait_event(running, "start")
        remote = Remote(live.uri)
        try:
            with pytest.raises(RPCError) as refused:
                remote.hello()
            assert refused.value.errnum == errno.EINVAL
            assert "1 job(s) have a start request outstanding to job-exec" in str(refused.value)
            client.cancel(running)
            client.wait(running)

            # the override: start requests go to exec-double now, job-exec runs nothing
            assert remote.hello() == {}
            echo = client.submit(["sh", "-c", "echo ran"])
            req = remote.next_start()
            assert (req.payload["id"], req.payload["reattach"]) == (echo, False)
            assert req.payload["R"]["execution"]["R_lite"]
            remote.answer(req, ExecResponse.START, {})
            remote.answer(req, ExecResponse.FINISH, {"status": 0})
            remote.answer(req, ExecResponse.RELEASE, {"ranks": "0", "final": True})
            assert client.wait(echo).success
            assert names(client, echo)[-5:] == ["start", "finish", "release", "free", "clean"]
            with pytest.raises(RPCError) as missing:
                client.handle.call("kvs.get", {"key": f"{echo.kvs}.guest.output"})
            assert missing.value.errnum == errno.ENOENT  # no job shell ever ran it

            # a conventional error response: the service is dead, jobs wait in RUN
            lost = client.submit(["sh", "-c", "echo lost"], debug=True)
            remote.fail(remote.next_start(), errno.EIO, "exec-double broke")
            event = client.wait_event(lost, "debug.start-lost")
            assert "start response error" in event.context["note"]
            waiting = client.submit(["sh", "-c", "echo waiting"])
            client.wait_event(waiting, "alloc")
            quiet(client)
            assert remote.service.starts.empty()  # nothing more is sent to it
            for jobid in (lost, waiting):  # still in RUN, untouched
                assert not {"start", "exception", "finish"} & set(names(client, jobid))

            # a new hello (naming job-exec) starts them both
            assert remote.hello("job-exec") == {}
            assert client.wait(lost).success
            assert client.wait(waiting).success
        finally:
            remote.close()

        # the connection that said hello went away: the broker's own job-exec runs jobs again
        after = client.submit(["sh", "-c", "echo after"])
        assert client.wait(after).success


def test_the_broker_s_service_takes_over_when_the_hello_s_sender_goes_away(
    live: LiveInstance,
) -> None:
    """A connection that says hello and hangs up leaves the instance with job-exec, not with
    no execution service until a restart; the job it was sent is started again there."""
    with Client(live.uri) as client:
        remote = Remote(live.uri)
        try:
            assert remote.hello() == {}
            waiting = client.submit(["sh", "-c", "echo waiting"])
            assert remote.next_start().payload["id"] == waiting
        finally:
            remote.close()
        assert client.wait(waiting).success
        assert client.wait(client.submit(["true"])).success


def test_a_malformed_start_response_fails_the_job_naming_the_field(
    live: LiveInstance,
) -> None:
    """The envelope is decoded, then its data by type: each fault is EPROTO's one message,
    logged and raised on the job as a fatal exception, so that a broken execution
    service cannot leave a job running with what it did not say."""
    with Client(live.uri) as client:
        remote = Remote(live.uri)
        try:
            assert remote.hello() == {}
            echo = client.submit(["sh", "-c", "echo ran"])
            req = remote.next_start()
            remote.answer(req, ExecResponse.START, {})
            remote.answer(req, ExecResponse.FINISH, {"status": "0"})
            remote.answer(req, ExecResponse.RELEASE, {"ranks": 0, "final": True})
            payload = {"id": echo, "type": "done", "data": {}}
            remote.loop.call_soon_threadsafe(req.respond, payload)
            remote.answer(req, ExecResponse.FINISH, {"status": 256})
            remote.answer(req, ExecResponse.RELEASE, {"ranks": "0", "final": True})
            assert not client.wait(echo).success
        finally:
            remote.close()
        events = parse(client.lookup(echo, ["eventlog"])["eventlog"])
        assert [(e.name, e.context) for e in events if e.name in ("finish", "release")] == [
            ("finish", {"status": 256}),
            ("release", {"ranks": "0", "final": True}),
        ]
        notes = [e.context["note"] for e in events if e.name == "exception"]
        assert notes[0] == "bad response: exec-double.start: finish: status: expected int, got str"
        log = ok(live.uri, "dmesg")
        for text in (
            "exec-double.start: finish: status: expected int, got str",
            "exec-double.start: release: ranks: expected str, got int",
            "exec-double.start: type: invalid enum value 'done'",
        ):
            assert f"bad response for {int(echo)}: {text}" in log


def test_released_ranks_go_to_a_waiting_job_before_the_final_release(tmp_path: Path) -> None:
    config = tmp_path / "two-nodes.toml"
    config.write_text('[[resource.config]]\nhosts = "node[0-1]"\ncores = "0-1"\n')
    wide = jobspec("1.5s", cores=2)
    wide["resources"] = [{"type": "node", "count": 2, "with": wide["resources"]}]
    wide["tasks"][0]["count"] = {"per_slot": 1}
    wide["attributes"]["system"]["exec"]["test"]["node_durations"] = ["0.1s"]
    narrow = jobspec("0.01s", cores=2)
    narrow["resources"] = [{"type": "node", "count": 1, "with": narrow["resources"]}]
    with (
        LiveInstance(tmp_path / "state", "--config", str(config), cores=None) as live,
        Client(live.uri) as client,
    ):
        first = client.submit(wide)
        client.wait_event(first, "start")
        second = client.submit(narrow)
        assert client.wait(second).success
        assert client.wait(first).success
        events = parse(client.lookup(first, ["eventlog"])["eventlog"])
        releases = [e for e in events if e.name == "release"]
        assert [e.context for e in releases] == [
            {"ranks": "0", "final": False},
            {"ranks": "all", "final": True},
        ]
        later = parse(client.lookup(second, ["eventlog"])["eventlog"])
        alloc = next(e for e in later if e.name == "alloc")
        clean = next(e for e in later if e.name == "clean")
        assert releases[0].timestamp <= alloc.timestamp
        assert clean.timestamp < releases[1].timestamp  # done before the first let go
        r_first = json.loads(client.lookup(first, ["R"])["R"])
        r_second = json.loads(client.lookup(second, ["R"])["R"])
        assert r_first["execution"]["R_lite"] == [{"rank": "0-1", "children": {"core": "0-1"}}]
        assert r_second["execution"]["R_lite"] == [{"rank": "0", "children": {"core": "0-1"}}]


def test_the_job_manager_names_the_jobs_in_run_for_a_starting_job_exec(
    live: LiveInstance,
) -> None:
    """``job-manager.running``: what job-exec may take over at a restart, from the one
    replay of the job manager; pending and ended jobs are not in it."""
    with Client(live.uri) as client:
        ended = client.submit(jobspec())
        assert client.wait(ended).success
        pending = client.submit(jobspec(), urgency="hold")
        client.wait_event(pending, "priority")
        running = client.submit(jobspec("0"))  # runs until killed
        client.wait_event(running, "start")
        assert client.handle.call("job-manager.running", {}) == {"jobs": [[running, True]]}
        with pytest.raises(RPCError) as refused:
            client.handle.call("job-manager.running", [])
        assert refused.value.errnum == errno.EPROTO
        client.cancel(running)
        client.cancel(pending)
        assert client.handle.call("job-manager.drain", {}) == {}
        assert client.handle.call("job-manager.running", {}) == {"jobs": []}
