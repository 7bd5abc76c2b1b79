"""The overlay: in-process brokers joined by real ZeroMQ sockets (ipc and tcp), with CURVE.

Each test builds a small tree (``Tree``) of ``Broker`` objects in one event loop,
each with an ``echo`` service that answers with its rank, and checks how requests
are routed, how ranks come and go, and who may connect.
"""

from __future__ import annotations

import asyncio
import errno
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import zmq

from pflux.broker.boot import Boot, Cert
from pflux.broker.overlay import FLAG_FROM_SERVICE, Overlay
from pflux.broker.router import Broker, Request, Service, method
from pflux.broker.testsize import test_size_boots
from pflux.errors import RPCError
from pflux.protocol.message import REQUEST, Message, encode_body

HEARTBEAT = 0.05
TIMEOUT = 30.0  # no stall of a loaded machine is as long: no peer is lost but on purpose
LOSS = 1.0  # the timeout of the tests that lose a peer on purpose
WAIT = 10.0  # the most any awaited event may take under load


class Echo(Service):
    """Answers with this broker's rank and what it was sent; ``hang`` never answers."""

    name = "echo"

    @method("rank")
    def rank(self, req: Request) -> None:
        req.respond({"rank": self.broker.rank, "payload": req.payload})

    @method("raw")
    def raw(self, req: Request) -> None:
        assert isinstance(req.payload, bytes)
        req.respond(req.payload[::-1])

    @method("hang")
    def hang(self, req: Request) -> None:
        self.broker.attrs["hanging"] = "1"

    @method("long")
    def long(self, req: Request) -> None:
        """An answer of ``req.payload`` characters."""
        req.respond("x" * req.payload)

    @method("count")
    def count(self, req: Request) -> None:
        """Two responses of a stream, then wait for the requester to go."""
        req.respond(1)
        req.respond(2)
        req.on_disconnect(self.gone.set)

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker)
        self.gone = asyncio.Event()


class OnlyZero(Service):
    name = "zero"

    @method("where")
    def where(self, req: Request) -> None:
        req.respond({"rank": self.broker.rank, "userid": req.userid})

    @method("internal")
    def internal(self, req: Request) -> None:
        req.require_internal("a service")
        req.respond({})


class ClientRoute:
    """A connection's route, as the local connector's: its responses are collected."""

    def __init__(self) -> None:
        self.responses: asyncio.Queue[Message] = asyncio.Queue()

    def deliver(self, msg: Message) -> None:
        self.responses.put_nowait(msg)

    def add_disconnect(self, callback: Callable[[], None]) -> None:
        pass

    def discard_disconnect(self, callback: Callable[[], None]) -> None:
        pass

    async def drain(self) -> None:
        pass


def tcp_boots(size: int, fanout: int) -> list[Boot]:
    """Boots for tcp 127.0.0.1, each binding a port of its own (the parents' are filled in
    as they start: ``Tree.start``)."""
    public, secret = (k.decode() for k in zmq.curve_keypair())
    cert = Cert(public, secret)
    return [
        Boot(
            rank=r,
            size=size,
            hostnames=tuple(f"node{i}" for i in range(size)),
            fanout=fanout,
            bind="tcp://127.0.0.1:*" if r * fanout + 1 < size else None,
            parent=None,
            cert=cert,
            parent_key=public,
            allowed=frozenset((public,)),
        )
        for r in range(size)
    ]


class Tree:
    """Brokers of ranks 0..N-1 with their overlays; ``changes``: rank 0's rank_changed calls."""

    def __init__(
        self, boots: list[Boot], timeout: float, count: int, limit: int | None = None
    ) -> None:
        self.boots = boots
        self.limit = limit  # each overlay's, when given
        self.timeout = timeout
        self.count = count  # the ranks started at first
        self.brokers: dict[int, Broker] = {}
        self.overlays: dict[int, Overlay] = {}
        self.changes: asyncio.Queue[tuple[int, dict[str, Any] | None]] = asyncio.Queue()

    async def start_rank(self, rank: int) -> Overlay:
        boot = self.boots[rank]
        parent_rank = boot.parent_rank()
        if boot.parent is None and parent_rank is not None:  # tcp: the port its parent got
            boot = Boot(**{**boot.__dict__, "parent": self.overlays[parent_rank].endpoint})
            self.boots[rank] = boot
        broker = Broker(1000)
        broker.rank, broker.size = rank, boot.size
        broker.register(Echo(broker))
        if rank == 0:
            broker.register(OnlyZero(broker))
            broker.rank_changed(0, {"hostname": "node0"})
            broker.watch_ranks(lambda r, info: self.changes.put_nowait((r, info)))
        await broker.start()
        overlay = Overlay(
            broker, boot, {"hostname": f"node{rank}"}, heartbeat=HEARTBEAT, timeout=self.timeout
        )
        if self.limit is not None:
            overlay.limit = self.limit
        await overlay.start()
        self.brokers[rank], self.overlays[rank] = broker, overlay
        return overlay

    async def start(self) -> None:
        """Start every rank, and wait until rank 0 has heard from each and each has heard
        from its parent (a request from rank 0 reached it: rank 0's hello from a rank
        can come before that rank has read its parent's first word)."""
        for rank in range(self.count):
            await self.start_rank(rank)
        joined = {0}
        while len(joined) < self.count:
            rank, info = await asyncio.wait_for(self.changes.get(), WAIT)
            assert info is not None
            joined.add(rank)
        for rank in range(1, self.count):
            assert (await self.brokers[0].call("echo.rank", None, nodeid=rank))["rank"] == rank

    async def stop_rank(self, rank: int) -> None:
        """Close rank's sockets without a word, as a killed broker would."""
        await self.overlays.pop(rank).stop()
        self.brokers.pop(rank)

    async def stop(self) -> None:
        for rank in sorted(self.overlays, reverse=True):
            await self.stop_rank(rank)

    async def change(self, rank: int) -> dict[str, Any] | None:
        """The next change rank 0 saw for ``rank`` (earlier ones for other ranks dropped)."""
        while True:
            r, info = await asyncio.wait_for(self.changes.get(), WAIT)
            if r == rank:
                return info


@asynccontextmanager
async def tree(
    boots: list[Boot], timeout: float = TIMEOUT, count: int | None = None, limit: int | None = None
) -> AsyncIterator[Tree]:
    """Ranks 0..count-1 of ``boots`` (all by default) started, and stopped at the end."""
    t = Tree(boots, timeout, len(boots) if count is None else count, limit)
    try:
        await t.start()
        yield t
    finally:
        await t.stop()


def run(scenario: Callable[[], Any]) -> None:
    asyncio.run(asyncio.wait_for(scenario(), 60))


@pytest.fixture(params=["ipc", "tcp"])
def boots(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[int, int], list[Boot]]:
    """Boots of a tree of size N and fanout K over ipc:// or tcp://127.0.0.1."""
    if request.param == "ipc":
        return lambda size, fanout: test_size_boots(
            size, tmp_path, fanout, [f"node{r}" for r in range(size)]
        )
    return tcp_boots


def test_requests_reach_the_rank_they_name_through_the_tree(
    boots: Callable[[int, int], list[Boot]],
) -> None:
    async def scenario() -> None:
        async with tree(boots(3, 1)) as t:  # a chain: 0 - 1 - 2
            zero, one, two = (t.brokers[r] for r in range(3))
            assert (await zero.call("echo.rank", {"x": 1}, nodeid=2)) == {
                "rank": 2,
                "payload": {"x": 1},
            }
            assert (await two.call("echo.rank", None, nodeid=0))["rank"] == 0
            assert (await one.call("echo.rank", None, nodeid=2))["rank"] == 2
            assert (await two.call("echo.rank", None))["rank"] == 2  # ANY: its own first
            # a service rank 2 lacks goes up to rank 0, the requester's userid with it
            assert (await two.call("zero.where", None)) == {"rank": 0, "userid": 1000}
            # a bytes payload crosses as a raw frame, both ways
            assert (await zero.call("echo.raw", b"\x00\xffab", nodeid=2)) == b"ba\xff\x00"

    run(scenario)


def test_a_stream_crosses_the_tree_and_its_end_reaches_the_server(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with tree(test_size_boots(3, tmp_path, 1, ["a", "b", "c"])) as t:
            got: asyncio.Queue[Message] = asyncio.Queue()
            route = t.brokers[0].send("echo.count", None, got.put_nowait, streaming=True, nodeid=2)
            assert [(await got.get()).payload for _ in range(2)] == [1, 2]
            route.cancel()  # through rank 1 to rank 2: its disconnect callbacks run
            echo = t.brokers[2].services["echo"]
            assert isinstance(echo, Echo)
            await asyncio.wait_for(echo.gone.wait(), WAIT)
            assert not t.overlays[0]._pending
            assert not t.overlays[2]._served

    run(scenario)


def test_a_service_s_request_from_another_rank_counts_as_internal_a_client_s_not(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        async with tree(test_size_boots(3, tmp_path, 1, ["a", "b", "c"])) as t:
            assert await t.brokers[2].call("zero.internal", {}) == {}  # a service at rank 2
            client = ClientRoute()
            for flags in (0, FLAG_FROM_SERVICE):  # a client cannot claim the overlay's flag
                request = Message(
                    REQUEST, "zero.internal", 5, {}, flags=flags, userid=1000, rolemask=1
                )
                t.brokers[2].dispatch(request, client)
                answer = await asyncio.wait_for(client.responses.get(), WAIT)
                assert answer.errnum == errno.EPERM
                assert answer.errstr == "zero.internal: only a service may send this request"

    run(scenario)


def test_rank_zero_learns_each_rank_from_its_hello(
    boots: Callable[[int, int], list[Boot]],
) -> None:
    async def scenario() -> None:
        async with tree(boots(4, 2)) as t:
            assert sorted(t.brokers[0].ranks) == [0, 1, 2, 3]
            assert t.brokers[0].ranks[3] == {"hostname": "node3"}
            assert t.overlays[1].parent_up
            assert {c: sorted(child.subtree) for c, child in t.overlays[1].children.items()} == {
                3: [3]
            }

    run(scenario)


def test_a_rank_that_never_heard_from_its_parent_says_so(tmp_path: Path) -> None:
    async def scenario() -> None:
        t = Tree(test_size_boots(2, tmp_path, 1, ["a", "b"]), TIMEOUT, 0)
        await t.start_rank(1)  # rank 0 never starts
        try:
            with pytest.raises(RPCError) as info:
                await t.brokers[1].call("zero.where", None)
            assert info.value.errnum == errno.EHOSTUNREACH
            assert "zero.where: no word yet from the parent (rank 0)" in str(info.value)
        finally:
            await t.stop()

    run(scenario)


def test_a_rank_outside_the_instance_or_down_is_unreachable(tmp_path: Path) -> None:
    async def scenario() -> None:
        alone = Broker(1000)
        with pytest.raises(RPCError) as info:
            await alone.call("echo.rank", None, nodeid=1)
        assert info.value.errnum == errno.EHOSTUNREACH
        assert "no rank 1 in this instance (size 1)" in str(info.value)
        async with tree(test_size_boots(3, tmp_path, 2, ["a", "b", "c"]), timeout=LOSS) as t:
            with pytest.raises(RPCError) as info:
                await t.brokers[1].call("echo.rank", None, nodeid=7)
            assert info.value.errnum == errno.EHOSTUNREACH
            assert "no rank 7 in this instance (size 3)" in str(info.value)
            await t.stop_rank(2)
            assert await t.change(2) is None
            with pytest.raises(RPCError) as info:
                await t.brokers[0].call("echo.rank", None, nodeid=2)
            assert info.value.errnum == errno.EHOSTUNREACH
            assert "rank 2 is down" in str(info.value)

    run(scenario)


def test_a_lost_rank_fails_requests_in_flight_and_comes_back(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with tree(test_size_boots(3, tmp_path, 2, ["a", "b", "c"]), timeout=LOSS) as t:
            call = asyncio.ensure_future(t.brokers[0].call("echo.hang", None, nodeid=1))
            while "hanging" not in t.brokers[1].attrs:
                await asyncio.sleep(HEARTBEAT)
            await t.stop_rank(1)  # no goodbye: rank 0 notices the silence
            assert await t.change(1) is None
            with pytest.raises(RPCError) as info:
                await asyncio.wait_for(call, WAIT)
            assert info.value.errnum == errno.EHOSTUNREACH
            assert "lost contact with rank 1 (node1)" in str(info.value)
            assert 1 not in t.brokers[0].ranks
            await t.start_rank(1)
            assert await t.change(1) == {"hostname": "node1"}
            assert (await t.brokers[0].call("echo.rank", None, nodeid=1))["rank"] == 1

    run(scenario)


def test_a_rank_restarted_before_its_silence_is_noticed_goes_down_and_up(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        async with tree(test_size_boots(2, tmp_path, 2, ["a", "b"]), timeout=WAIT * 6) as t:
            await t.stop_rank(1)
            await t.start_rank(1)  # a new broker process: another uuid in its hello
            assert await t.change(1) is None
            assert await t.change(1) == {"hostname": "node1"}
            assert (await t.brokers[0].call("echo.rank", None, nodeid=1))["rank"] == 1

    run(scenario)


def test_ranks_say_hello_again_to_a_restarted_rank_zero(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with tree(test_size_boots(4, tmp_path, 2, ["a", "b", "c", "d"]), timeout=LOSS) as t:
            await t.stop_rank(0)
            overlay = await t.start_rank(0)  # a new rank 0 at the same endpoint, same key
            assert await overlay.wait_all_up(WAIT) == []
            assert sorted(t.brokers[0].ranks) == [0, 1, 2, 3]
            assert (await t.brokers[0].call("echo.rank", None, nodeid=3))["rank"] == 3
            assert (await t.brokers[3].call("zero.where", None))["rank"] == 0

    run(scenario)


def _rogue_refused(tmp_path: Path, knows_the_server_key: bool) -> tuple[str, str]:
    """A broker of rank 2 with a key pair of its own tries to join a tree of three:
    the first refusal logged at ERROR, and rank 0's bind endpoint. Knowing the
    server key (this instance's), it reaches ZAP; not knowing it, its handshake fails."""
    found: list[tuple[str, str]] = []

    async def scenario() -> None:
        refused = asyncio.Event()
        records: list[logging.LogRecord] = []

        class Catch(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                records.append(record)
                if "refused a connection" in record.getMessage():
                    refused.set()

        handler = Catch()
        logging.getLogger("pflux.overlay").addHandler(handler)
        try:
            async with tree(test_size_boots(3, tmp_path, 2, ["a", "b", "c"]), count=2) as t:
                public, secret = (k.decode() for k in zmq.curve_keypair())
                server_key = t.boots[0].cert.public if knows_the_server_key else public
                rogue_boot = Boot(
                    **{
                        **t.boots[2].__dict__,
                        "parent": t.boots[0].bind,
                        "parent_key": server_key,
                        "cert": Cert(public, secret),
                    }
                )
                rogue = Broker(1000)
                rogue.rank, rogue.size = 2, 3
                overlay = Overlay(rogue, rogue_boot, {"hostname": "evil"}, heartbeat=HEARTBEAT)
                await overlay.start()
                try:
                    await asyncio.wait_for(refused.wait(), WAIT)
                finally:
                    await overlay.stop()
                assert 2 not in t.brokers[0].ranks
                refusal = next(r for r in records if "refused" in r.getMessage())
                assert refusal.levelno == logging.ERROR
                found.append((refusal.getMessage(), str(t.boots[0].bind)))
        finally:
            logging.getLogger("pflux.overlay").removeHandler(handler)

    run(scenario)
    return found[0]


def test_a_broker_with_another_key_is_refused_and_the_refusal_logged(tmp_path: Path) -> None:
    message, _ = _rogue_refused(tmp_path, knows_the_server_key=True)
    assert "its CURVE key is not this instance's" in message


def test_a_broker_of_another_instance_fails_its_handshake_logged(tmp_path: Path) -> None:
    message, endpoint = _rogue_refused(tmp_path, knows_the_server_key=False)
    assert message == (
        f"overlay: refused a connection to {endpoint}: its CURVE handshake"
        " failed (a broker without this instance's certificate)"
    )


def test_shutdown_goes_down_the_tree(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with tree(test_size_boots(4, tmp_path, 2, ["a", "b", "c", "d"])) as t:
            stopped = {r: asyncio.Event() for r in (1, 2, 3)}
            for rank, event in stopped.items():
                t.overlays[rank].on_shutdown = event.set
            t.overlays[0].shutdown_tree()
            await asyncio.wait_for(asyncio.gather(*(e.wait() for e in stopped.values())), WAIT)
            assert all(e.is_set() for e in stopped.values())

    run(scenario)


def test_rank_zero_goes_on_without_a_rank_that_never_says_hello(tmp_path: Path) -> None:
    async def scenario() -> None:
        boots = test_size_boots(3, tmp_path, 2, ["a", "b", "c"])
        async with tree(boots, count=2) as t:  # rank 2 does not start at first
            assert await t.overlays[0].wait_all_up(0.2) == [2]
            await t.start_rank(2)
            assert await t.overlays[0].wait_all_up(WAIT) == []

    run(scenario)


def test_a_refused_key_retrying_is_logged_once_a_minute(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    boot = test_size_boots(2, tmp_path, 2, ["a", "b"])[0]
    overlay = Overlay(Broker(1000), boot, {})
    good = zmq.utils.z85.decode(boot.cert.public)
    bad, other = (zmq.utils.z85.decode(zmq.curve_keypair()[0]) for _ in range(2))

    def ask(key: bytes) -> bytes:
        frames = [b"1.0", b"7", b"pflux", b"10.0.0.9", b"", b"CURVE", key]
        return overlay._zap_answer(frames)[2]

    with caplog.at_level(logging.ERROR, "pflux.overlay"):
        assert [ask(bad), ask(bad), ask(good), ask(other)] == [b"400", b"400", b"200", b"400"]
        overlay.refusals.flush()
    refusals = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert refusals == [
        *["overlay: refused a connection from 10.0.0.9: its CURVE key is not this instance's"] * 2,
        "overlay: 1 more connections refused from 10.0.0.9 in 0 s:"
        " its CURVE key is not this instance's",
    ]


def test_a_message_over_the_overlay_limit_is_refused_logged_and_never_taken(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A request or a response longer than the overlay's limit is not sent (EMSGSIZE, to the
    requester) and logged; one sent anyway is refused by ZeroMQ as it arrives, and the two
    ranks go on."""
    limit = 64 << 10

    async def scenario() -> None:
        async with tree(test_size_boots(2, tmp_path, 1, ["a", "b"]), limit=limit) as t:
            zero, one = t.brokers[0], t.brokers[1]
            with pytest.raises(RPCError) as info:
                await zero.call("echo.rank", "x" * limit, nodeid=1)
            assert info.value.errnum == errno.EMSGSIZE
            assert f"exceeds the overlay's limit of {limit}" in str(info.value.errstr)
            with pytest.raises(RPCError) as info:
                await zero.call("echo.long", limit, nodeid=1)  # its answer is too long
            assert info.value.errnum == errno.EMSGSIZE
            assert await zero.call("echo.long", 10, nodeid=1) == "x" * 10
            # rank 1 sends one anyway: rank 0 never takes it, and hears rank 1 after
            hang = Message(REQUEST, "echo.hang", 0, "x" * limit, flags=2)
            dealer = t.overlays[1]._dealer
            assert dealer is not None
            dealer.send_multipart([encode_body(hang)])
            assert (await one.call("echo.rank", None, nodeid=0))["rank"] == 0
            assert "hanging" not in zero.attrs

    with caplog.at_level(logging.ERROR, "pflux.overlay"):
        run(scenario)
    dropped = [r.getMessage() for r in caplog.records if "not sent" in r.getMessage()]
    assert dropped[0].startswith("overlay: echo.rank to rank 1 not sent: ")
    assert dropped[0].endswith(f"bytes, more than the limit of {limit}")
    assert dropped[1].startswith("overlay: echo.long to rank 0 not sent: ")


def test_a_child_quiet_once_the_tree_was_told_to_stop_is_no_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Stopping many ranks on few cores, a subtree may take longer than the timeout to
    stop: its silence is what was asked for, said at INFO, not an error."""

    async def scenario() -> None:
        async with tree(test_size_boots(2, tmp_path, 2, ["a", "b"]), timeout=LOSS) as t:
            t.overlays[0].shutdown_tree()
            await t.stop_rank(1)
            assert await t.change(1) is None

    with caplog.at_level(logging.INFO, logger="pflux.overlay"):
        run(scenario)
    lost = [r for r in caplog.records if "lost contact with rank 1" in r.getMessage()]
    assert lost
    assert {r.levelno for r in lost} == {logging.INFO}
