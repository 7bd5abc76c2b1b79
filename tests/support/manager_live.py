"""The real job manager in a broker of this process, with doubles for sched and exec.

The broker has the real kvs, job-ingest and job-manager (taken from the list an
instance loads, by service name, so that they are found wherever they live),
a ``SchedulerDouble`` and an ``ExecDouble``. Jobs are submitted through
job-ingest and their events read from the job manager's journal: the tests see
the job manager only through its messages.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from pflux.broker import instance
from pflux.broker.connector import serve
from pflux.broker.router import Broker, Service
from pflux.protocol.message import Message
from support.exec_double import ExecDouble
from support.sched_double import SchedulerDouble
from support.wire import as_sent

TIMEOUT = 10.0  # seconds a test waits for an event that is due
REAL = ("kvs", "job-manager", "job-ingest")  # the services of the instance that are real

# flags of job-ingest.submit
DEBUG = 1

JOBSPEC: dict[str, Any] = {
    "version": 1,
    "resources": [
        {"type": "slot", "count": 1, "label": "task", "with": [{"type": "core", "count": 1}]}
    ],
    "tasks": [{"command": ["true"], "slot": "task", "count": {"per_slot": 1}}],
    "attributes": {"system": {"duration": 0}},
}


def _real_services() -> list[type[Service]]:
    classes = []
    for path in instance.SERVICES:
        module, _, name = path.partition(":")
        cls: type[Service] = getattr(importlib.import_module(module), name)
        if cls.name in REAL:
            classes.append(cls)
    assert sorted(cls.name for cls in classes) == sorted(REAL)
    return classes


class Live:
    """The started broker, the doubles, and each job's events as the journal sends them."""

    def __init__(self, broker: Broker, sched: SchedulerDouble, exec_: ExecDouble) -> None:
        self.broker = broker
        self.sched = sched
        self.exec = exec_
        self.events: dict[int, list[dict[str, Any]]] = {}  # job id -> entries, in order
        self.annotations: dict[int, list[dict[str, Any]]] = {}
        self.servers: list[tuple[asyncio.AbstractServer, Path]] = []
        self._changed = asyncio.Event()
        broker.send("job-manager.events-journal", {}, self._journal, streaming=True)

    def _journal(self, msg: Message) -> None:
        for item in msg.raise_for_error()["events"]:
            entry = item["entry"]
            if entry["name"] == "annotations":
                self.annotations.setdefault(item["id"], []).append(entry["context"])
            else:
                self.events.setdefault(item["id"], []).append(entry)
        self._changed.set()

    async def _until(self, done: Callable[[], bool]) -> None:
        async def wait() -> None:
            while not done():
                self._changed.clear()
                await self._changed.wait()

        await asyncio.wait_for(wait(), TIMEOUT)

    async def listen(self) -> Path:
        """Serve connections on a new socket (in a short path of its own); its path."""
        path = Path(tempfile.mkdtemp(prefix="pflux-jm-")) / "sock"
        self.servers.append((await serve(self.broker, path), path))
        return path

    def names(self, jobid: int) -> list[str]:
        """The names of ``jobid``'s events journalled so far."""
        return [entry["name"] for entry in self.events.get(jobid, [])]

    async def event(self, jobid: int, name: str, nth: int = 1) -> dict[str, Any]:
        """The context of ``jobid``'s ``nth`` event called ``name``, once journalled."""

        def found() -> list[dict[str, Any]]:
            return [e for e in self.events.get(jobid, []) if e["name"] == name]

        await self._until(lambda: len(found()) >= nth)
        context: dict[str, Any] = found()[nth - 1].get("context", {})
        return context

    async def annotated(self, jobid: int, count: int = 1) -> list[dict[str, Any]]:
        """``jobid``'s first ``count`` annotations entries, once journalled."""
        await self._until(lambda: len(self.annotations.get(jobid, [])) >= count)
        return self.annotations[jobid][:count]

    async def submit(self, urgency: int = 16, flags: int = 0) -> int:
        payload = {"jobspec": JOBSPEC, "urgency": urgency, "flags": flags}
        reply = await self.broker.call("job-ingest.submit", payload)
        jobid: int = reply["id"]
        return jobid

    async def call(self, topic: str, payload: Any = None) -> Any:
        """The reply as a client reads it (a typed one made JSON's types)."""
        return as_sent(await self.broker.call(topic, {} if payload is None else payload))

    async def running(self, R: Any, flags: int = 0) -> tuple[int, dict[str, Any]]:  # noqa: N803
        """A job granted ``R`` and sent to the exec double (which must have said hello):
        its id and start request."""
        jobid = await self.submit(flags=flags)
        assert (await self.sched.next_alloc())["id"] == jobid
        self.sched.grant(jobid, R)
        start = await self.exec.next_start()
        assert start["id"] == jobid
        return jobid, start


@asynccontextmanager
async def live(tmp_path: Path, *, limit: int = 0, ready: bool = True) -> AsyncIterator[Live]:
    """A started broker; the scheduler double has said hello and ready (with ``limit``)
    unless ``ready`` is false. The exec double has not said hello."""
    broker = Broker(os.getuid(), attrs={"hostname": "node0", "state-dir": str(tmp_path)})
    for cls in _real_services():
        broker.register(cls(broker))
    sched = SchedulerDouble(broker)
    broker.register(sched)
    exec_ = ExecDouble(broker)
    broker.register(exec_)
    await broker.start()
    t = Live(broker, sched, exec_)
    try:
        if ready:
            assert await sched.hello() == []
            await sched.ready(limit)
        yield t
    finally:
        for server, path in t.servers:
            server.close()
            path.unlink(missing_ok=True)
            path.parent.rmdir()
        await broker.stop()


def run(body: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(body(), 30))
