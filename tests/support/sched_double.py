"""A scheduler double speaking RFC 27 to the real job manager, answered by the test.

The mirror of the sched tests' ``JobManagerDouble``: it registers the ``sched``
service's topics, keeps every request it gets, and answers only when the test
says so, with the payloads RFC 27 defines. It knows nothing of the job
manager's insides, only the messages.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pflux.broker.router import Broker, Request, Service, method
from support.wire import as_sent

TIMEOUT = 10.0  # seconds a test waits for a request that is due

# RFC 27's alloc response types
SUCCESS, ANNOTATE, DENY, CANCEL = 0, 1, 2, 3


class SchedulerDouble(Service):
    """The ``sched`` service: requests are queued for the test, which answers them."""

    name = "sched"

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker)
        self.allocs: dict[int, Request] = {}  # job id -> its alloc request, while unanswered
        self.alloc_order: asyncio.Queue[int] = asyncio.Queue()
        self.canceled: asyncio.Queue[int] = asyncio.Queue()
        self.frees: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.prioritized: list[list[list[int]]] = []

    # --- the scheduler's side of start-up ---------------------------------------------

    async def hello(self) -> list[dict[str, Any]]:
        """``job-manager.sched-hello``: the jobs holding resources."""
        return [entry async for entry in self.broker.stream("job-manager.sched-hello", {})]

    async def ready(self, limit: int = 0) -> int:
        """``job-manager.sched-ready``, unlimited or with ``limit``; the job manager's count."""
        mode = {"mode": "limited", "limit": limit} if limit else {"mode": "unlimited"}
        reply = await self.broker.call("job-manager.sched-ready", mode)
        count: int = reply["count"]
        return count

    # --- requests from the job manager --------------------------------------------------

    @method("alloc")
    def alloc(self, req: Request) -> None:
        jobid = as_sent(req.payload)["id"]
        self.allocs[jobid] = req
        self.alloc_order.put_nowait(jobid)

    @method("cancel")
    def cancel(self, req: Request) -> None:
        self.canceled.put_nowait(as_sent(req.payload)["id"])

    @method("free")
    def free(self, req: Request) -> None:
        self.frees.put_nowait(as_sent(req.payload))

    @method("prioritize")
    def prioritize(self, req: Request) -> None:
        self.prioritized.append(as_sent(req.payload)["jobs"])

    # --- what the test awaits and answers ---------------------------------------------------

    async def next_alloc(self) -> dict[str, Any]:
        """The payload of the next alloc request to arrive."""
        jobid = await asyncio.wait_for(self.alloc_order.get(), TIMEOUT)
        payload: dict[str, Any] = as_sent(self.allocs[jobid].payload)
        return payload

    async def next_free(self) -> dict[str, Any]:
        return await asyncio.wait_for(self.frees.get(), TIMEOUT)

    async def next_cancel(self) -> int:
        return await asyncio.wait_for(self.canceled.get(), TIMEOUT)

    def annotate(self, jobid: int, annotations: dict[str, Any]) -> None:
        self.allocs[jobid].respond({"id": jobid, "type": ANNOTATE, "annotations": annotations})

    def grant(self, jobid: int, R: Any, annotations: dict[str, Any] | None = None) -> None:  # noqa: N803
        payload: dict[str, Any] = {"id": jobid, "type": SUCCESS, "R": R}
        if annotations is not None:
            payload["annotations"] = annotations
        self.allocs.pop(jobid).respond(payload)

    def deny(self, jobid: int, note: str) -> None:
        self.allocs.pop(jobid).respond({"id": jobid, "type": DENY, "note": note})

    def cancel_alloc(self, jobid: int) -> None:
        self.allocs.pop(jobid).respond({"id": jobid, "type": CANCEL})


def r_json(ranks: dict[int, str]) -> dict[str, Any]:
    """RFC 20 R: ``ranks`` maps each rank (on host ``node<rank>``) to its cores (an idset)."""
    return {
        "version": 1,
        "execution": {
            "R_lite": [
                {"rank": str(rank), "children": {"core": cores}} for rank, cores in ranks.items()
            ],
            "nodelist": [f"node{rank}" for rank in ranks],
            "starttime": 0.0,
            "expiration": 0.0,
        },
    }
