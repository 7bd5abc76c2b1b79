"""The sched service through a live broker, with the real kvs and a job-manager double."""

from __future__ import annotations

import asyncio
import errno
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest

from pflux.broker.router import Broker, LocalRoute, Request, Service, method
from pflux.errors import PfluxError, RPCError
from pflux.kvs.service import KVSService
from pflux.protocol.kvs import value_of
from pflux.protocol.message import REQUEST, ROLE_USER, Message
from pflux.protocol.sched import AllocResponse
from pflux.sched.service import RESTART_EXCEPTION, Scheduler
from pflux.spec.builder import from_command
from pflux.spec.kvs_keys import job_key
from support.wire import as_sent

HOST = "testhost"


class JobManagerDouble(Service):
    """Answers sched-hello with given entries, records sched-ready and raised exceptions."""

    name = "job-manager"

    def __init__(self, broker: Broker, hello: list[dict[str, Any]]) -> None:
        super().__init__(broker)
        self.hello_entries = hello
        self.ready: list[Any] = []
        self.raised: list[Any] = []

    @method("sched-hello")
    def sched_hello(self, req: Request) -> None:
        for entry in self.hello_entries:
            req.respond(entry)
        req.end()

    @method("sched-ready")
    def sched_ready(self, req: Request) -> None:
        self.ready.append(as_sent(req.payload))
        req.respond({"count": 0})

    @method("raise")
    def raise_(self, req: Request) -> None:
        self.raised.append(req.payload)
        req.respond({})


class Live:
    """A started broker with kvs, the job-manager double and the scheduler."""

    def __init__(self, broker: Broker, jm: JobManagerDouble, sched: Scheduler) -> None:
        self.broker = broker
        self.jm = jm
        self.sched = sched
        self.commits: list[list[Any]] = []
        self.responses: dict[int, asyncio.Queue[Message]] = {}
        self.successes: asyncio.Queue[Message] = asyncio.Queue()
        kvs_commit = broker._handlers["kvs.commit"]

        def counting_commit(req: Request) -> Awaitable[None] | None:
            self.commits.append(as_sent(req.payload)["ops"])
            return kvs_commit(req)

        broker.add_method("kvs.commit", counting_commit)

    def alloc(self, jobid: int, jobspec: Any = None, *, priority: int = 16, **kw: Any) -> None:
        """Send sched.alloc; its responses queue up under ``jobid``."""
        if jobspec is None:
            jobspec = from_command(["true"], **kw)
        queue = self.responses.setdefault(jobid, asyncio.Queue())
        payload = {
            "id": jobid,
            "priority": priority,
            "userid": os.getuid(),
            "t_submit": float(jobid),
            "jobspec": jobspec,
        }

        def deliver(msg: Message) -> None:
            msg.payload = as_sent(msg.payload)  # as the job manager would read it over a link
            queue.put_nowait(msg)
            if isinstance(msg.payload, dict) and msg.payload.get("type") == AllocResponse.SUCCESS:
                self.successes.put_nowait(msg)

        self.broker.send("sched.alloc", payload, deliver, streaming=True)

    async def next(self, jobid: int) -> dict[str, Any]:
        """The next response to ``jobid``'s alloc."""
        msg = await asyncio.wait_for(self.responses[jobid].get(), 5)
        payload: dict[str, Any] = msg.raise_for_error()
        assert payload["id"] == jobid
        return payload

    async def final(self, jobid: int) -> dict[str, Any]:
        """The response that completes ``jobid``'s alloc (annotations skipped)."""
        while True:
            payload = await self.next(jobid)
            if payload["type"] != AllocResponse.ANNOTATE:
                return payload

    async def success(self) -> dict[str, Any]:
        """The next SUCCESS response to any alloc."""
        payload: dict[str, Any] = (await asyncio.wait_for(self.successes.get(), 5)).payload
        return payload

    def quiet(self, jobid: int) -> bool:
        return self.responses[jobid].empty()

    async def kvs_get(self, key: str) -> Any:
        return value_of(await self.broker.call("kvs.get", {"key": key}))

    async def free(self, jobid: int, r: Any, final: bool = True) -> Any:
        return await self.broker.call("sched.free", {"id": jobid, "R": r, "final": final})

    async def turn(self) -> None:
        """Let every request sent so far be handled (a ping goes round the same queue)."""
        await self.broker.call("sched.resource-status", {})


@asynccontextmanager
async def live(
    tmp_path: Path,
    *,
    cores: int = 4,
    gpus: int = 0,
    hello: list[dict[str, Any]] | None = None,
    before: Callable[[Broker], Awaitable[None]] | None = None,
    hosts: list[dict[str, str]] | None = None,
    simulated: bool = False,
    size: int = 1,
    **sched: Any,
) -> AsyncIterator[Live]:
    config: dict[str, Any] = {"resource": {"cores": cores, "gpus": gpus}}
    if hosts is not None:
        config["resource"] = {"config": hosts}
    if simulated:
        config["simulator"] = {"trace": "unused"}
    if sched:
        config["sched"] = sched
    broker = Broker(
        os.getuid(), attrs={"hostname": HOST, "state-dir": str(tmp_path)}, config=config
    )
    broker.register(KVSService(broker))
    jm = JobManagerDouble(broker, hello or [])
    broker.register(jm)
    if before is not None:  # prepare the KVS in an instance of its own
        first = Broker(os.getuid(), attrs={"state-dir": str(tmp_path)})
        first.register(KVSService(first))
        await first.start()
        await before(first)
        await first.stop()
    broker.size = size  # as the instance sets it from its bootstrap
    scheduler = Scheduler(broker)
    broker.register(scheduler)
    await broker.start()
    try:
        yield Live(broker, jm, scheduler)
    finally:
        await broker.stop()


def run(body: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(body(), 20))


def json_text(doc: Any) -> str:
    return orjson.dumps(doc).decode()


def r_json(cores: str, *, rank: int = 0, host: str = HOST, **times: float) -> dict[str, Any]:
    return {
        "version": 1,
        "execution": {
            "R_lite": [{"rank": str(rank), "children": {"core": cores}}],
            "nodelist": [host],
            "starttime": times.get("starttime", 0.0),
            "expiration": times.get("expiration", 0.0),
        },
    }


# --- start-up ------------------------------------------------------------------------


def test_hello_marks_running_jobs_and_ready_is_unlimited(tmp_path: Path) -> None:
    async def body() -> None:
        hello = [{"id": 7, "priority": 16, "userid": 0, "t_submit": 1.0, "R": r_json("0-1")}]
        async with live(tmp_path, hello=hello) as t:
            assert t.jm.ready == [{"mode": "unlimited"}]
            assert t.sched.ready
            status = await t.broker.call("sched.resource-status", {})
            assert status["allocated"]["execution"]["R_lite"] == [
                {"rank": "0", "children": {"core": "0-1"}}
            ]
            t.alloc(1, num_tasks=3)
            assert (await t.next(1))["type"] == AllocResponse.ANNOTATE  # 2 cores are free
            assert await t.free(7, r_json("0-1")) == {"id": 7}
            assert (await t.final(1))["type"] == AllocResponse.SUCCESS

    run(body)


def test_hello_reads_r_from_the_kvs_when_not_given(tmp_path: Path) -> None:
    async def seed(broker: Broker) -> None:
        text = orjson.dumps(r_json("0-2")).decode()
        await broker.call("kvs.commit", {"ops": [["put", job_key(9, "R"), text]]})

    async def body() -> None:
        hello = [{"id": 9, "priority": 16, "userid": 0, "t_submit": 1.0}]
        async with live(tmp_path, hello=hello, before=seed) as t:
            assert t.sched.pool.free_cores == 1
            assert not t.jm.raised

    run(body)


def test_hello_takes_r_as_text_and_skips_malformed_entries(tmp_path: Path) -> None:
    async def body() -> None:
        hello: list[Any] = [
            {"id": "x"},
            {"id": 3, "priority": 16, "userid": 0, "t_submit": 1.0, "R": json_text(r_json("0"))},
            {"id": 3, "priority": 16, "userid": 0, "t_submit": 1.0, "R": r_json("1")},
            {"id": 4, "priority": 16, "userid": 0, "t_submit": 1.0, "R": "{not json"},
        ]
        async with live(tmp_path, hello=hello) as t:
            await t.turn()
            assert t.sched.ready
            assert t.sched.pool.held(3).summary() == "rank0/core0"
            assert [p["id"] for p in t.jm.raised] == [4]

    run(body)


def test_hello_job_that_no_longer_fits_is_killed(tmp_path: Path) -> None:
    async def body() -> None:
        hello = [
            {"id": 5, "priority": 16, "userid": 0, "t_submit": 1.0, "R": r_json("0-7")},
            {"id": 6, "priority": 16, "userid": 0, "t_submit": 1.0, "R": {"version": 9}},
        ]
        async with live(tmp_path, hello=hello) as t:
            await t.turn()
            assert [(p["id"], p["type"], p["severity"]) for p in t.jm.raised] == [
                (5, RESTART_EXCEPTION, 0),
                (6, RESTART_EXCEPTION, 0),
            ]
            assert t.sched.pool.free_cores == 0  # job 5 keeps what did fit until it is freed
            assert await t.free(5, r_json("0-7")) == {"id": 5}
            assert await t.free(6, {"version": 9}) == {"id": 6}
            assert t.sched.pool.free_cores == 4

    run(body)


def test_no_job_manager_leaves_the_scheduler_not_ready(tmp_path: Path) -> None:
    async def body() -> None:
        broker = Broker(os.getuid(), attrs={"hostname": HOST, "state-dir": str(tmp_path)})
        broker.register(KVSService(broker))
        scheduler = Scheduler(broker)
        broker.register(scheduler)
        await broker.start()
        try:
            assert not scheduler.ready
            status = await broker.call("sched.resource-status", {})
            assert status["all"]["execution"]["nodelist"] == [HOST]
        finally:
            await broker.stop()

    run(body)


# --- alloc ----------------------------------------------------------------------------------


def test_alloc_commits_r_before_answering(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path) as t:
            t.alloc(1, num_tasks=2, duration=60)
            reply = await t.next(1)
            assert reply["type"] == AllocResponse.SUCCESS
            assert reply["annotations"] == {"sched": {"resource_summary": "rank0/core[0-1]"}}
            execution = reply["R"]["execution"]
            assert execution["R_lite"] == [{"rank": "0", "children": {"core": "0-1"}}]
            assert execution["nodelist"] == [HOST]
            assert execution["nslots"] == 2
            assert execution["expiration"] == execution["starttime"] + 60
            stored = await t.kvs_get(job_key(1, "R"))
            assert orjson.loads(stored) == reply["R"]

    run(body)


def test_allocs_of_one_turn_share_one_commit(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path) as t:
            for jobid in (1, 2, 3):
                t.alloc(jobid)
            summaries = [(await t.next(j))["annotations"]["sched"] for j in (1, 2, 3)]
            assert [s["resource_summary"] for s in summaries] == [
                "rank0/core0",
                "rank0/core1",
                "rank0/core2",
            ]
            assert [len(ops) for ops in t.commits] == [3]

    run(body)


def test_priority_order_then_submit_order_and_prioritize(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path, cores=1) as t:
            t.alloc(1)
            r = (await t.success())["R"]
            for jobid in (2, 3, 4, 5):
                t.alloc(jobid, priority=20 if jobid == 3 else 16)
            with pytest.raises(
                RPCError, match=r"sched.prioritize: jobs\[1\]: expected array"
            ) as exc:
                await t.broker.call("sched.prioritize", {"jobs": [[4, 30], "junk"]})
            assert exc.value.errnum == errno.EPROTO  # refused whole: job 4 keeps its priority
            t.broker.send("sched.prioritize", {"jobs": [[5, 25], [99, 1]]})
            await t.turn()
            order = []
            previous = 1
            for _ in range(4):
                await t.free(previous, r)
                reply = await t.success()
                previous, r = reply["id"], reply["R"]
                order.append(previous)
            assert order == [5, 3, 2, 4]

    run(body)


def test_blocked_job_is_annotated_once_and_cleared_on_success(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path, cores=2) as t:
            t.alloc(1, num_tasks=2, duration=100)
            r = (await t.final(1))["R"]
            t.alloc(2, num_tasks=2)
            blocked = await t.next(2)
            assert blocked["type"] == AllocResponse.ANNOTATE
            assert blocked["annotations"] == {
                "sched": {
                    "reason_pending": "insufficient resources",
                    "t_estimate": r["execution"]["expiration"],
                }
            }
            t.alloc(3)  # another pass: job 2's annotations are unchanged, so not re-sent
            t.alloc(4, num_tasks=9)  # and a denial on the way
            assert (await t.next(4))["type"] == AllocResponse.DENY
            await t.turn()
            assert t.quiet(2)
            await t.free(1, r)
            success = await t.next(2)
            assert success["type"] == AllocResponse.SUCCESS
            assert success["annotations"] == {
                "sched": {
                    "reason_pending": None,
                    "t_estimate": None,
                    "resource_summary": "rank0/core[0-1]",
                }
            }

    run(body)


def test_impossible_requests_are_denied_at_once(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path, cores=4, gpus=1) as t:
            t.alloc(1, num_tasks=5)
            t.alloc(2, num_tasks=1, gpus_per_task=2)
            t.alloc(3, num_tasks=2, num_nodes=2)
            notes = [await t.next(j) for j in (1, 2, 3)]
            assert [n["type"] for n in notes] == [AllocResponse.DENY] * 3
            assert notes[0]["note"] == (
                "unsatisfiable request: need 5 slot(s) of 1 core(s),"
                " only 4 such slot(s) available (total cores: 4)"
            )
            assert notes[2]["note"].startswith("unsatisfiable request: need 2 node(s)")
            assert not t.commits

    run(body)


def test_exclusive_node_request_takes_the_whole_node(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path, cores=4, gpus=2) as t:
            t.alloc(1, num_tasks=1, num_nodes=1, exclusive=True)
            reply = await t.final(1)
            assert reply["annotations"]["sched"]["resource_summary"] == "rank0/core[0-3],gpu[0-1]"

    run(body)


def test_malformed_jobspec_is_denied(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path) as t:
            t.alloc(1, {"version": 1, "resources": "lots"})
            reply = await t.next(1)
            assert reply["type"] == AllocResponse.DENY
            assert reply["note"].startswith("cannot parse jobspec: ")
            assert "resources" in reply["note"]

    run(body)


P, V = errno.EPROTO, errno.EINVAL  # a wrong shape, a value the type rules out


@pytest.mark.parametrize(
    ("payload", "errnum", "message"),
    [
        ({"priority": 1, "userid": 0, "jobspec": {}}, P, "sched.alloc: id: required"),
        (
            {"id": -1, "priority": 1, "userid": 0, "jobspec": {}},
            V,
            "sched.alloc: id: expected int >= 0",
        ),
        (
            {"id": 2**64, "priority": 1, "userid": 0, "jobspec": {}},
            V,
            "sched.alloc: id: expected int <= 18446744073709551615",
        ),
        ({"id": 1, "userid": 0, "jobspec": {}}, P, "sched.alloc: priority: required"),
        (
            {"id": 1, "priority": 2**32, "userid": 0, "jobspec": {}},
            V,
            "sched.alloc: priority: expected int <=",
        ),
        (
            {"id": 1, "priority": 1, "userid": 0, "t_submit": "now", "jobspec": {}},
            P,
            "t_submit: expected float, got str",
        ),
        (
            {"id": 1, "priority": 1, "userid": 0, "t_submit": 1e999, "jobspec": {}},
            V,
            "t_submit: expected float < inf",
        ),
        (
            {"id": 1, "priority": 1, "userid": 0, "jobspec": []},
            P,
            "sched.alloc: jobspec: expected object",
        ),
        ([1, 2], P, "sched.alloc: payload: expected object, got array"),
    ],
)
def test_bad_alloc_requests_get_errors(
    tmp_path: Path, payload: Any, errnum: int, message: str
) -> None:
    async def body() -> None:
        async with live(tmp_path) as t:
            queue: asyncio.Queue[Message] = asyncio.Queue()
            t.broker.send("sched.alloc", payload, queue.put_nowait, streaming=True)
            msg = await asyncio.wait_for(queue.get(), 5)
            assert msg.errnum == errnum
            assert message in (msg.errstr or "")

    run(body)


def test_alloc_must_stream_and_must_not_repeat(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path, cores=1) as t:
            with pytest.raises(RPCError, match="streaming"):
                await t.broker.call(
                    "sched.alloc", {"id": 1, "priority": 1, "userid": 0, "jobspec": {}}
                )
            t.alloc(1)
            await t.final(1)
            t.alloc(2)
            t.alloc(2)
            msg = await asyncio.wait_for(t.responses[2].get(), 5)
            assert msg.errnum == errno.EEXIST
            t.alloc(1)
            msg = await asyncio.wait_for(t.responses[1].get(), 5)
            assert msg.errnum == errno.EEXIST

    run(body)


def test_guests_may_only_read_status(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path) as t:
            replies: asyncio.Queue[Message] = asyncio.Queue()
            route = LocalRoute(t.broker.queue, replies.put_nowait)
            topics = ("sched.alloc", "sched.free", "sched.resource-status", "sched.drain",
                      "sched.undrain")  # fmt: skip
            for tag, topic in enumerate(topics):
                payload = {"id": 1, "targets": "0"}
                msg = Message(REQUEST, topic, tag, payload, userid=4242, rolemask=ROLE_USER)
                t.broker.dispatch(msg, route)
            got = {}
            for _ in range(len(topics)):
                msg = await asyncio.wait_for(replies.get(), 5)
                got[msg.topic] = msg.errnum
            assert got == {"sched.alloc": errno.EPERM, "sched.free": errno.EPERM,
                           "sched.resource-status": 0, "sched.drain": errno.EPERM,
                           "sched.undrain": errno.EPERM}  # fmt: skip

    run(body)


# --- cancel, free, expiration ----------------------------------------------------------------


def test_cancel_answers_the_pending_alloc(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path, cores=1) as t:
            t.alloc(1, duration=10)
            await t.final(1)
            t.alloc(2)
            assert (await t.next(2))["type"] == AllocResponse.ANNOTATE
            t.broker.send("sched.cancel", {"id": 2})
            t.broker.send("sched.cancel", {"id": 99})  # nothing pending: ignored
            clear = await t.next(2)
            assert clear == {
                "id": 2,
                "type": AllocResponse.ANNOTATE,
                "annotations": {"sched": {"reason_pending": None, "t_estimate": None}},
            }
            assert await t.next(2) == {"id": 2, "type": AllocResponse.CANCEL}
            assert len(t.sched.policy.queue) == 0

    run(body)


def test_free_of_unknown_or_foreign_r_is_an_error(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path) as t:
            with pytest.raises(RPCError, match="holds no resources") as info:
                await t.free(1, r_json("0"))
            assert info.value.errnum == errno.EINVAL
            t.alloc(1)
            await t.final(1)
            with pytest.raises(RPCError, match=r"does not hold rank 0 core\[1-2\]"):
                await t.free(1, r_json("0-2"))
            with pytest.raises(RPCError, match="R must be a JSON object"):
                await t.free(1, "R")
            with pytest.raises(RPCError, match=r"sched\.free: final: expected bool, got int"):
                await t.broker.call("sched.free", {"id": 1, "R": r_json("0"), "final": 1})
            assert await t.free(1, r_json("0")) == {"id": 1}
            assert t.sched.pool.free_cores == 4

    run(body)


def test_partial_free_then_final(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path) as t:
            t.alloc(1, num_tasks=2)
            await t.final(1)
            assert await t.free(1, r_json("1"), final=False) == {"id": 1}
            assert t.sched.pool.free_cores == 3
            assert await t.free(1, r_json("0"), final=True) == {"id": 1}
            assert t.sched.pool.free_cores == 4
            assert 1 not in t.sched.pool

    run(body)


def test_expiration_update_moves_the_estimate(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path, cores=1) as t:
            t.alloc(1)
            await t.final(1)
            t.alloc(2)
            first = await t.next(2)
            assert first["annotations"] == {"sched": {"reason_pending": "insufficient resources"}}
            assert await t.broker.call("sched.expiration", {"id": 1, "expiration": 5e9}) == {}
            update = await t.next(2)
            assert update["annotations"] == {"sched": {"t_estimate": 5e9}}
            with pytest.raises(RPCError, match="holds no resources") as info:
                await t.broker.call("sched.expiration", {"id": 2, "expiration": 1.0})
            assert info.value.errnum == errno.ENOENT
            bad = r"sched\.expiration: expiration: expected float >= 0\.0$"
            with pytest.raises(RPCError, match=bad):
                await t.broker.call("sched.expiration", {"id": 1, "expiration": -1})

    run(body)


def test_resource_status_reports_all_allocated_and_down(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path, cores=4, gpus=2) as t:
            t.alloc(1, num_tasks=1, gpus_per_task=1)
            await t.final(1)
            status = await t.broker.call("sched.resource-status", {})
            assert status["all"]["execution"]["R_lite"] == [
                {"rank": "0", "children": {"core": "0-3", "gpu": "0-1"}}
            ]
            assert status["allocated"]["execution"]["R_lite"] == [
                {"rank": "0", "children": {"core": "0", "gpu": "0"}}
            ]
            assert status["down"]["execution"] == {
                "R_lite": [],
                "nodelist": [],
                "starttime": 0.0,
                "expiration": 0.0,
            }

    run(body)


def test_requester_disconnect_drops_its_pending_allocs(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path, cores=1) as t:
            t.alloc(1)
            await t.final(1)
            payload = {"id": 2, "priority": 1, "userid": 0, "jobspec": from_command(["true"])}
            route = t.broker.send("sched.alloc", payload, lambda msg: None, streaming=True)
            await t.turn()
            assert 2 in t.sched.policy.queue
            route.cancel()  # the requester hangs up
            assert 2 not in t.sched.policy.queue

    run(body)


def test_requests_of_the_job_manager_from_a_connection_are_refused(tmp_path: Path) -> None:
    """Only the job manager's allocs are freed: one from a connection would hold its cores
    for ever (the owner's connections included)."""

    class Connection:
        def __init__(self) -> None:
            self.delivered: list[Message] = []

        def deliver(self, msg: Message) -> None:
            self.delivered.append(msg)

        def add_disconnect(self, callback: Callable[[], None]) -> None:
            """Never disconnects."""

        def discard_disconnect(self, callback: Callable[[], None]) -> None:
            """Never disconnects."""

        async def drain(self) -> None:
            """Reads everything at once."""

    async def body() -> None:
        async with live(tmp_path, cores=1) as t:
            conn = Connection()
            alloc = {"id": 2, "priority": 1, "userid": 0, "jobspec": from_command(["true"])}
            topics = {
                "sched.alloc": alloc,
                "sched.cancel": {"id": 2},
                "sched.prioritize": {"jobs": [[2, 5]]},
                "sched.free": {"id": 2, "R": None},
                "sched.expiration": {"id": 2, "expiration": 0.0},
            }
            for tag, (topic, payload) in enumerate(topics.items(), 1):
                flags = 1 if topic == "sched.alloc" else 0
                msg = Message(
                    REQUEST, topic, tag, payload, flags=flags, userid=os.getuid(), rolemask=1
                )
                t.broker.dispatch(msg, conn)
            await t.turn()
            assert 2 not in t.sched.policy.queue
            assert {(m.topic, m.errnum) for m in conn.delivered} == {
                (topic, errno.EPERM) for topic in topics
            }
            assert conn.delivered[0].errstr == (
                "sched.alloc: only the job manager may send this request"
            )
            t.alloc(1)  # the one core is still free
            assert (await asyncio.wait_for(t.final(1), 5))["type"] == AllocResponse.SUCCESS

    run(body)


# --- simulated time and partial frees ---------------------------------------------------


def test_simulated_time_runs_a_pass_only_when_set(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path, simulated=True, **{"queue-depth": 0}) as t:
            t.alloc(1, num_tasks=2, duration=60)
            t.alloc(2, num_tasks=4)
            await t.turn()
            assert t.quiet(1)  # no pass until the simulator sets the time
            first = await t.broker.call("sched.sim-time", {"time": 1000.0})
            assert first == {"allocated": [1], "closed": 16}  # job 2 blocked, nothing behind
            granted = await t.final(1)  # answered before sim-time is
            assert granted["type"] == AllocResponse.SUCCESS
            execution = granted["R"]["execution"]
            assert (execution["starttime"], execution["expiration"]) == (1000.0, 1060.0)
            estimate = (await t.next(2))["annotations"]["sched"]["t_estimate"]
            assert estimate == 1060.0
            # nothing changed since: no pass is due
            idle = await t.broker.call("sched.sim-time", {"time": 1001.0})
            assert idle == {"allocated": [], "closed": 16}
            with pytest.raises(RPCError, match=r"cannot go back from 1001\.0 to 999\.0"):
                await t.broker.call("sched.sim-time", {"time": 999.0})
            with pytest.raises(RPCError, match=r"sched\.sim-time: time: expected float, got str"):
                await t.broker.call("sched.sim-time", {"time": "soon"})
            t.alloc(3, num_tasks=4)
            # job 2 waits for job 1, job 3 is beyond the window (depth 0): nothing starts
            # now, and jobs of priority 16 or less submitted later cannot change that
            blocked = await t.broker.call("sched.sim-time", {"time": 1010.0})
            assert blocked == {"allocated": [], "closed": 16}
            assert await t.free(1, granted["R"]) == {"id": 1}
            assert t.quiet(2)
            freed = await t.broker.call("sched.sim-time", {"time": 1030.0})
            assert freed["allocated"] == [2]
            assert (await t.final(2))["R"]["execution"]["starttime"] == 1030.0

    run(body)


def test_sim_time_outside_a_simulation_is_refused(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path) as t:
            with pytest.raises(RPCError, match="not a simulation") as exc:
                await t.broker.call("sched.sim-time", {"time": 1.0})
            assert exc.value.errnum == errno.EINVAL

    run(body)


def test_partial_free_gives_ranks_to_others_before_the_final_one(tmp_path: Path) -> None:
    async def body() -> None:
        hosts = [{"hosts": "n[0-1]", "cores": "0-1"}]
        async with live(tmp_path, hosts=hosts) as t:
            t.alloc(1, num_tasks=2, num_nodes=2)
            first = (await t.final(1))["R"]
            t.alloc(2, num_tasks=1, num_nodes=1, cores_per_task=2)
            assert (await t.next(2))["type"] == AllocResponse.ANNOTATE  # blocked
            fragment = r_json("0", rank=1, host="n1")  # one core of each node is its
            assert await t.free(1, fragment, final=False) == {"id": 1}
            granted = await t.final(2)
            assert granted["R"]["execution"]["R_lite"] == [
                {"rank": "1", "children": {"core": "0-1"}}
            ]
            assert 1 in t.sched.pool  # job 1 still holds rank 0
            with pytest.raises(RPCError, match="does not hold rank 1"):
                await t.free(1, fragment, final=False)
            rest = {"version": 1, "execution": {"R_lite": [], "nodelist": []}}
            with pytest.raises(RPCError, match="must name at least one execution target"):
                await t.free(1, rest, final=False)
            assert await t.free(1, rest, final=True) == {"id": 1}  # nothing left: fine
            assert 1 not in t.sched.pool
            status = await t.broker.call("sched.resource-status", {})
            assert status["allocated"]["execution"]["R_lite"] == [
                {"rank": "1", "children": {"core": "0-1"}}
            ]
            assert first["execution"]["nodelist"] == ["n[0-1]"]

    run(body)


# --- configuration -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"resource": {"cores": -1}}, r"\[resource\] cores: must be an integer >= 0"),
        ({"resource": {"gpus": "two"}}, r"\[resource\] gpus: must be an integer >= 0"),
        ({"resource": []}, r"\[resource\]: must be a table"),
        ({"sched": {"queue-depth": -3}}, r"\[sched\] queue-depth: must be an integer >= 0"),
        ({"sched": 5}, r"\[sched\]: must be a table, got 5"),
    ],
)
def test_bad_configuration_is_refused(config: dict[str, Any], message: str) -> None:
    broker = Broker(os.getuid(), attrs={"hostname": HOST}, config=config)
    with pytest.raises(PfluxError, match=message):
        Scheduler(broker)


def test_queue_depth_is_configurable(tmp_path: Path) -> None:
    broker = Broker(os.getuid(), attrs={"hostname": HOST}, config={"sched": {"queue-depth": 7}})
    assert Scheduler(broker).policy.depth == 7


# --- ranks of a multi-broker instance ----------------------------------------------------


def hello(host: str, cores: str = "0-1", gpus: str = "") -> dict[str, Any]:
    return {"hostname": host, "cores": cores, "gpus": gpus, "version": "0"}


def ranks_of(r: dict[str, Any]) -> list[dict[str, Any]]:
    return list(r["execution"]["R_lite"])


def test_ranks_join_the_pool_as_they_say_hello(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path, cores=2, size=3) as t:
            t.alloc(1, num_tasks=3, num_nodes=3)
            assert (await t.next(1))["type"] == AllocResponse.ANNOTATE  # waits for ranks
            t.alloc(2, num_tasks=4, num_nodes=4)
            assert (await t.next(2)) == {
                "id": 2,
                "type": AllocResponse.DENY,
                "note": "unsatisfiable request: need 4 node(s) with 1 cores each, only 3 eligible",
            }
            status = await t.broker.call("sched.resource-status", {})
            assert (status["online"], status["offline"]) == ("0", "1-2")
            t.broker.rank_changed(1, hello("node1"))
            t.broker.rank_changed(2, hello("node2", "0-3", "0"))
            granted = await t.final(1)
            assert granted["type"] == AllocResponse.SUCCESS
            assert granted["R"]["execution"]["nodelist"] == [f"{HOST},node[1-2]"]
            assert ranks_of(granted["R"]) == [{"rank": "0-2", "children": {"core": "0"}}]
            status = await t.broker.call("sched.resource-status", {})
            assert ranks_of(status["all"]) == [
                {"rank": "0-1", "children": {"core": "0-1"}},
                {"rank": "2", "children": {"core": "0-3", "gpu": "0"}},
            ]
            assert (status["online"], status["offline"]) == ("0-2", "")

    run(body)


def test_ranks_joining_out_of_order_are_listed_in_rank_order(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path, cores=2, size=3) as t:
            t.broker.rank_changed(2, hello("node2", "0-1"))
            t.broker.rank_changed(1, hello("node1", "0-1"))
            status = await t.broker.call("sched.resource-status", {})
            assert ranks_of(status["all"]) == [{"rank": "0-2", "children": {"core": "0-1"}}]
            assert status["all"]["execution"]["nodelist"] == [f"{HOST},node[1-2]"]

    run(body)


def test_a_rank_down_is_not_allocatable_until_it_is_back(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path, cores=2, size=2) as t:
            t.broker.rank_changed(1, hello("node1"))
            t.alloc(1, num_tasks=2, num_nodes=2)
            r1 = (await t.final(1))["R"]
            t.broker.rank_changed(1, None)
            status = await t.broker.call("sched.resource-status", {})
            assert (status["online"], status["offline"]) == ("0", "1")
            assert ranks_of(status["down"]) == [{"rank": "1", "children": {"core": "0-1"}}]
            assert await t.free(1, r1) == {"id": 1}  # rank 1's cores go back as down
            t.alloc(2, num_tasks=2, num_nodes=2)
            assert (await t.next(2))["type"] == AllocResponse.ANNOTATE  # waits
            await t.turn()
            assert t.quiet(2)
            t.broker.rank_changed(1, hello("node1"))
            granted = await t.final(2)
            assert granted["type"] == AllocResponse.SUCCESS
            assert granted["R"]["execution"]["nodelist"] == [f"{HOST},node1"]

    run(body)


def test_ranks_leaving_once_the_tree_was_told_to_stop_are_no_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Stopping 128 ranks, each said it was down at WARNING: 127 warnings for a
    shutdown that went as asked."""

    async def body() -> None:
        async with live(tmp_path, cores=2, size=3) as t:
            t.broker.rank_changed(1, hello("node1"))
            t.broker.rank_changed(2, hello("node2"))
            t.broker.rank_changed(1, None)
            t.broker.ranks_stopping = True
            t.broker.rank_changed(2, None)
            status = await t.broker.call("sched.resource-status", {})
            assert (status["online"], status["offline"]) == ("0", "1-2")

    with caplog.at_level(logging.INFO, logger="pflux.sched"):
        run(body)
    down = {r.getMessage(): r.levelno for r in caplog.records if "is down" in r.getMessage()}
    assert down == {
        "rank 1 is down: its resources are not allocatable": logging.WARNING,
        "rank 2 is down: its resources are not allocatable": logging.INFO,
    }


def test_configured_r_ranks_are_down_until_their_hello(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def body() -> None:
        hosts = [{"hosts": "n[0-3]", "cores": "0-1"}]
        async with live(tmp_path, hosts=hosts, size=4) as t:
            status = await t.broker.call("sched.resource-status", {})
            assert (status["online"], status["offline"]) == ("0", "1-3")
            assert status["down"]["execution"]["nodelist"] == ["n[1-3]"]
            t.alloc(1, num_tasks=2, num_nodes=2)
            assert (await t.next(1))["type"] == AllocResponse.ANNOTATE
            t.alloc(2, num_tasks=5, num_nodes=5)
            assert (await t.next(2))["type"] == AllocResponse.DENY
            t.broker.rank_changed(3, hello("elsewhere", "0-7"))
            granted = await t.final(1)
            assert granted["R"]["execution"]["nodelist"] == ["n[0,3]"]
            assert ranks_of(granted["R"])[0]["children"] == {"core": "0"}  # R's, not the hello's
            status = await t.broker.call("sched.resource-status", {})
            assert (status["online"], status["offline"]) == ("0,3", "1-2")
        assert "rank 3 says its host is 'elsewhere', the configured R says 'n3'" in caplog.text

    run(body)


def test_a_rank_not_yet_joined_can_be_drained_and_stays_drained(tmp_path: Path) -> None:
    async def body() -> None:
        async with live(tmp_path, cores=2, size=3) as t:
            await t.broker.call("sched.drain", {"targets": "2", "reason": "bad fan"})
            with pytest.raises(RPCError, match="idset is out of range"):
                await t.broker.call("sched.drain", {"targets": "3"})
            t.broker.rank_changed(2, hello("node2"))
            t.broker.rank_changed(1, hello("node1"))
            t.alloc(1, num_tasks=3, num_nodes=3)
            assert (await t.next(1))["type"] == AllocResponse.ANNOTATE
            status = await t.broker.call("sched.resource-status", {})
            assert status["drained"] == "2"
            assert ranks_of(status["down"]) == [{"rank": "2", "children": {"core": "0-1"}}]
            await t.broker.call("sched.undrain", {"targets": "2"})
            assert (await t.final(1))["type"] == AllocResponse.SUCCESS

    run(body)


def test_a_malformed_hello_is_logged_and_the_rank_stays_out(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def body() -> None:
        async with live(tmp_path, cores=2, size=2) as t:
            t.broker.rank_changed(1, {"hostname": "node1", "cores": "zero"})
            status = await t.broker.call("sched.resource-status", {})
            assert (status["online"], status["offline"]) == ("0", "1")
            assert len(ranks_of(status["all"])) == 1
        assert "rank 1: ignoring its hello" in caplog.text

    run(body)


def test_a_single_broker_is_online_whatever_its_r(tmp_path: Path) -> None:
    async def body() -> None:
        hosts = [{"hosts": "n[0-3]", "cores": "0-1"}]
        async with live(tmp_path, hosts=hosts) as t:
            status = await t.broker.call("sched.resource-status", {})
            assert (status["online"], status["offline"]) == ("0-3", "")
            assert status["down"]["execution"]["R_lite"] == []

    run(body)


def test_a_restart_keeps_running_jobs_on_ranks_yet_to_rejoin(tmp_path: Path) -> None:
    async def body() -> None:
        r = {
            "version": 1,
            "execution": {
                "R_lite": [{"rank": "0-1", "children": {"core": "0"}}],
                "nodelist": [f"{HOST},node1"],
            },
        }
        entry = {"id": 7, "priority": 16, "userid": 0, "t_submit": 1.0, "R": r}
        async with live(tmp_path, cores=2, size=2, hello=[entry]) as t:
            assert t.jm.raised == []
            t.broker.rank_changed(1, hello("node1"))
            t.alloc(1, num_tasks=2, num_nodes=2)  # one core left on each rank
            assert ranks_of((await t.final(1))["R"]) == [{"rank": "0-1", "children": {"core": "1"}}]

    run(body)
