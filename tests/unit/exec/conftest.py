"""A live broker for the job-exec tests: kvs, job-exec and a stand-in job-manager.

The broker runs its event loop in a background thread and serves its socket,
so job shells forked by the launcher connect to it as they would in an
instance. Tests send ``job-exec.start`` as the job-manager would and read the
responses from a queue. Test modules cannot import this file (pytest runs in
importlib mode), so the jobspec and R builders are static methods of ``Live``,
reached through the ``live`` fixture.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import os
import queue
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from pflux.broker.connector import serve
from pflux.broker.router import Broker, Request, Route, Service, method
from pflux.errors import RPCError
from pflux.exec.service import ExecService
from pflux.kvs.service import KVSService
from pflux.protocol.kvs import value_of
from pflux.protocol.message import Message
from pflux.protocol.uri import uri_for
from pflux.spec.builder import from_command
from pflux.spec.fluid import JobID
from pflux.spec.idset import IdSet
from pflux.spec.kvs_keys import job_id_from_key
from pflux.spec.replay import replay
from pflux.spec.resource import ResourceSet
from pflux.spec.states import State
from support.wire import as_sent

TIMEOUT = 30.0
_ids = itertools.count(1 << 24, 1 << 24)


class FakeManager(Service):
    """The job-manager's side of exec-hello, recording who said hello, and of
    ``running``, answered from the eventlogs in the KVS as its restart replays them."""

    name = "job-manager"

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker)
        self.hellos: list[Any] = []
        self.refuse = False

    @method("exec-hello")
    def exec_hello(self, req: Request) -> None:
        self.hellos.append(as_sent(req.payload))
        if self.refuse:
            raise RPCError(16, "exec-hello: busy")
        req.respond({})

    @method("running")
    async def running(self, req: Request) -> None:
        jobs = []
        async for payload in self.broker.stream("kvs.walk", {"key": "job", "suffix": "eventlog"}):
            for key, text in payload.get("entries", []):
                jobid = job_id_from_key(key, "eventlog")
                job = replay(jobid, text) if jobid is not None else None
                if job is not None and job.state is State.RUN:
                    jobs.append([job.id, job.started])
        req.respond({"jobs": jobs})


class Stream:
    """The responses to one job-exec.start, as the job-manager sees them."""

    def __init__(self, jobid: int) -> None:
        self.id = jobid
        self.queue: queue.Queue[Message] = queue.Queue()
        self.seen: list[tuple[str, dict[str, Any]]] = []

    def put(self, msg: Message) -> None:
        self.queue.put(msg)

    def next(self, timeout: float = TIMEOUT) -> tuple[str, dict[str, Any]]:
        msg = self.queue.get(timeout=timeout)
        if msg.errnum:
            raise RPCError(msg.errnum, msg.errstr)
        payload = msgspec.to_builtins(msg.payload)  # as it would cross the wire
        assert payload["id"] == self.id
        item = (payload["type"], payload["data"])
        self.seen.append(item)
        return item

    def until(self, kind: str, timeout: float = TIMEOUT) -> list[tuple[str, dict[str, Any]]]:
        """Responses up to and including the first of type ``kind``."""
        got = []
        while True:
            item = self.next(timeout)
            got.append(item)
            if item[0] == kind:
                return got

    def all(self, timeout: float = TIMEOUT) -> list[tuple[str, dict[str, Any]]]:
        """Every response up to the final release, which must be last."""
        got = self.until("release", timeout)
        assert got[-1][1] == {"ranks": "all", "final": True}
        return got

    def kinds(self, timeout: float = TIMEOUT) -> list[str]:
        return [kind for kind, _ in self.all(timeout)]

    def status(self) -> int:
        return next(data["status"] for kind, data in self.seen if kind == "finish")


class Live:
    """A broker with kvs, job-exec and a FakeManager, on a loop in its own thread."""

    def __init__(
        self, state_dir: Path, config: dict[str, Any] | None = None, *, refuse_hello: bool = False
    ) -> None:
        self.refuse_hello = refuse_hello
        self.state_dir = state_dir
        self.socket = state_dir / "local"
        self.uri = uri_for(str(self.socket))
        self.config = config or {}
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.run(self._setup())

    async def _setup(self) -> None:
        attrs = {"state-dir": str(self.state_dir), "uri": self.uri, "hostname": "testhost"}
        self.broker = Broker(os.getuid(), attrs=attrs, config=self.config)
        self.sent: list[tuple[str, type]] = []  # each request's topic and payload type
        dispatch = self.broker.dispatch

        def record(msg: Message, route: Route) -> None:
            self.sent.append((msg.topic, type(msg.payload)))
            dispatch(msg, route)

        self.broker.dispatch = record  # type: ignore[method-assign]
        self.manager = FakeManager(self.broker)
        self.manager.refuse = self.refuse_hello
        self.kvs = KVSService(self.broker)
        self.exec = ExecService(self.broker)
        for service in (self.kvs, self.manager, self.exec):
            self.broker.register(service)
        await self.broker.start()
        self.server = await serve(self.broker, self.socket)

    def run(self, coro: Coroutine[Any, Any, Any], timeout: float = TIMEOUT) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, topic: str, payload: Any = None) -> Any:
        return self.run(self._call(topic, payload))

    async def _call(self, topic: str, payload: Any) -> Any:
        return await self.broker.call(topic, payload)

    def send(self, topic: str, payload: Any) -> None:
        self.loop.call_soon_threadsafe(self.broker.send, topic, payload)

    def start(
        self,
        jobspec: dict[str, Any],
        R: dict[str, Any] | None = None,  # noqa: N803
        *,
        jobid: int | None = None,
        reattach: bool = False,
        payload: dict[str, Any] | None = None,
    ) -> Stream:
        stream = Stream(jobid if jobid is not None else next(_ids))
        body = (
            payload
            if payload is not None
            else {
                "id": stream.id,
                "userid": os.getuid(),
                "jobspec": jobspec,
                "reattach": reattach,
                "R": R if R is not None else self.make_R(),
            }
        )
        send = functools.partial(self.broker.send, streaming=True)
        self.loop.call_soon_threadsafe(send, "job-exec.start", body, stream.put)
        return stream

    def guest(self, jobid: int, key: str) -> str:
        """A key of the job's guest namespace, read through the primary namespace."""
        return value_of(self.call("kvs.get", {"key": f"{JobID(jobid).kvs}.guest.{key}"}))

    def watch_output(self, jobid: int) -> queue.Queue[str]:
        """Text appended to the job's output eventlog, as it is committed."""
        appended: queue.Queue[str] = queue.Queue()

        def deliver(msg: Message) -> None:
            if not msg.errnum:
                appended.put(msg.payload["value"])

        key = f"{JobID(jobid).kvs}.guest.output"
        send = functools.partial(self.broker.send, streaming=True)
        body = {"key": key, "append": True, "waitcreate": True}
        self.loop.call_soon_threadsafe(send, "kvs.watch", body, deliver)
        return appended

    def wait_output(self, jobid: int, text: str, timeout: float = TIMEOUT) -> None:
        """Wait until ``text`` appears in the job's output eventlog."""
        appended = self.watch_output(jobid)
        seen = ""
        while text not in seen:
            seen += appended.get(timeout=timeout)

    def namespaces(self) -> list[str]:
        return [ns["name"] for ns in self.call("kvs.namespace-list", {})["namespaces"]]

    def close(self) -> None:
        async def teardown() -> None:
            self.server.close()
            await self.broker.stop()

        self.run(teardown(), timeout=60)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()

    @staticmethod
    def make_R(  # noqa: N802
        cores: str = "0-3", gpus: str = "", *, expiration: float = 0.0, starttime: float = 0.0
    ) -> dict[str, Any]:
        R = ResourceSet.build({0: (IdSet.decode(cores), IdSet.decode(gpus))}, "testhost")  # noqa: N806
        if expiration:
            R = R.with_times(starttime, expiration)  # noqa: N806
        return R.to_json()

    @staticmethod
    def job(command: list[str], **kwargs: Any) -> dict[str, Any]:
        """A jobspec for ``command`` with this process's environment, as ``pflux run`` builds it."""
        kwargs.setdefault("environment", dict(os.environ))
        return from_command(command, **kwargs)

    @staticmethod
    def mock_job(**test: Any) -> dict[str, Any]:
        """A test-mode jobspec (``attributes.system.exec.test``)."""
        jobspec = from_command(["true"], duration=test.pop("duration", None))
        jobspec["attributes"]["system"]["exec"] = {"test": test}
        return jobspec


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    broker = Live(tmp_path_factory.mktemp("live"))
    yield broker
    broker.close()
