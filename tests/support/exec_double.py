"""An execution service double speaking RFC 32 to the real job manager.

It says ``exec-hello`` when the test asks, keeps each ``start`` request (by job
id, the latest one) and answers with RFC 32's responses only when the test says
so; ``kill`` and ``exception`` requests are recorded (``kill`` and ``expiration``
answered ``{}``). ``ConnectedHello`` says hello from outside the broker instead.
Like the scheduler double it goes by the messages alone.
"""

from __future__ import annotations

import asyncio
import json
import struct
from pathlib import Path
from typing import Any

from pflux.broker.router import Broker, LocalRoute, Request, Service, method
from pflux.protocol.message import Message
from support.wire import as_sent

TIMEOUT = 10.0  # seconds a test waits for a request that is due


class ExecDouble(Service):
    """An execution service named ``name``: start requests are queued for the test."""

    def __init__(self, broker: Broker, name: str = "exec-double") -> None:
        self.name = name
        super().__init__(broker)
        self.starts: dict[int, Request] = {}  # job id -> its latest start request
        self.start_order: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.exceptions: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.kills: list[dict[str, Any]] = []
        self.hello_route: LocalRoute | None = None

    async def hello(self) -> None:
        """``job-manager.exec-hello``: this service runs the jobs from now on."""
        reply = await self.say_hello()
        reply.raise_for_error()

    async def say_hello(self) -> Message:
        """Send ``exec-hello`` and return the response, error or not."""
        future: asyncio.Future[Message] = self.broker.loop.create_future()
        self.hello_route = self.broker.send(
            "job-manager.exec-hello", {"service": self.name}, future.set_result
        )
        return await asyncio.wait_for(future, TIMEOUT)

    def go_away(self) -> None:
        """The requester of the hello goes, as a service that stops or dies does."""
        assert self.hello_route is not None
        self.hello_route.cancel()

    # --- requests from the job manager --------------------------------------------------

    @method("start")  # not ``start``: that name is the service's start-up hook
    def start_request(self, req: Request) -> None:
        self.starts[as_sent(req.payload)["id"]] = req
        self.start_order.put_nowait(as_sent(req.payload))

    @method("exception")
    def exception_request(self, req: Request) -> None:
        self.exceptions.put_nowait(as_sent(req.payload))

    @method("kill")
    def kill(self, req: Request) -> None:
        self.kills.append(as_sent(req.payload))
        req.respond({})

    @method("expiration")
    def expiration(self, req: Request) -> None:
        req.respond({})

    # --- what the test awaits and answers ---------------------------------------------------

    async def next_start(self) -> dict[str, Any]:
        """The payload of the next start request to arrive."""
        return await asyncio.wait_for(self.start_order.get(), TIMEOUT)

    async def next_exception(self) -> dict[str, Any]:
        return await asyncio.wait_for(self.exceptions.get(), TIMEOUT)

    def respond(
        self, jobid: int, kind: str, data: dict[str, Any] | None = None, req: Request | None = None
    ) -> None:
        """Send ``{id, type, data}`` on ``jobid``'s latest start request (or on ``req``)."""
        (req or self.starts[jobid]).respond({"id": jobid, "type": kind, "data": data or {}})

    def started(self, jobid: int) -> None:
        self.respond(jobid, "start")

    def finished(self, jobid: int, status: int = 0) -> None:
        self.respond(jobid, "finish", {"status": status})

    def released(self, jobid: int, ranks: str = "all", *, final: bool = True) -> None:
        self.respond(jobid, "release", {"ranks": ranks, "final": final})

    def raised(self, jobid: int, etype: str, note: str, severity: int = 0) -> None:
        self.respond(jobid, "exception", {"type": etype, "severity": severity, "note": note})

    def fail(self, jobid: int, errnum: int, text: str) -> None:
        """A conventional error response: RFC 32's sign of a broken service."""
        self.starts[jobid].error(errnum, text)


class ConnectedHello:
    """``exec-hello`` said over a connection to the broker's socket, as a process outside
    the broker would, in the wire's framing (a 4-byte length, then the JSON message)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def say(cls, socket: Path, service: str) -> ConnectedHello:
        """Connect, say hello for ``service`` and check the answer is a success."""
        reader, writer = await asyncio.open_unix_connection(str(socket))
        request = {
            "type": 1,  # a request
            "topic": "job-manager.exec-hello",
            "matchtag": 1,
            "flags": 0,
            "payload": {"service": service},
        }
        body = json.dumps(request).encode()
        writer.write(struct.pack(">I", len(body)) + body)
        (length,) = struct.unpack(">I", await asyncio.wait_for(reader.readexactly(4), TIMEOUT))
        response = json.loads(await asyncio.wait_for(reader.readexactly(length), TIMEOUT))
        assert response.get("errnum", 0) == 0, response
        return cls(reader, writer)

    async def hang_up(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()
