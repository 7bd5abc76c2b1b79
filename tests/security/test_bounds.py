"""A greedy client cannot grow the broker without bound.

Each test measures the broker process's memory from ``/proc/PID/status``
(VmHWM, its peak, reset first through ``clear_refs``; VmRSS, what it holds)
against a ceiling well above what the bounded broker uses on a loaded machine
and well below what an unbounded one reaches.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import socket
import struct
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from pathlib import Path

import pytest
import zmq

from pflux.api import Client
from pflux.broker import connector
from pflux.broker.instance import BrokerBasics
from pflux.broker.logbuf import LogRing
from pflux.broker.overlay import Overlay
from pflux.broker.router import Broker
from pflux.broker.testsize import test_size_boots
from pflux.errors import PfluxError
from pflux.ingest.service import DEFAULT_MAX_JOBSPEC, REQUEST_ROOM
from pflux.protocol.message import (
    EVENT,
    FLAG_STREAMING,
    REQUEST,
    RESPONSE,
    Decoder,
    Message,
    encode,
)
from pflux.protocol.uri import socket_path
from pflux.spec.size import SIZE_RULE
from support.instance import PFLUX, LiveInstance, environ, jobspec, start_with_config

MIB = 1 << 20


def memory(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of process ``pid``, in MiB."""
    sizes = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            sizes[name] = int(value.split()[0]) // 1024
    return sizes


def reset_peak(pid: int) -> int:
    """Start VmHWM again from the current VmRSS; return that."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    return memory(pid)["VmRSS"]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveInstance]:
    with LiveInstance(tmp_path_factory.mktemp("bounds") / "state") as instance:
        yield instance


def with_environment(size: int) -> dict[str, object]:
    spec = jobspec()
    spec["attributes"]["system"]["environment"] = {"BIG": "x" * size}
    return spec


def test_huge_jobspec_is_refused_before_it_is_held(live: LiveInstance) -> None:
    """A 50M jobspec is refused as its length arrives: the broker never holds it."""
    before = reset_peak(live.proc.pid)
    with Client(live.uri) as client, pytest.raises(PfluxError) as info:
        client.submit(with_environment(50 * MIB))
    assert "exceeds the limit of" in str(info.value)
    assert memory(live.proc.pid)["VmHWM"] - before < 25  # unbounded: 340 more


def test_jobspec_over_the_limit_is_refused_with_its_size(live: LiveInstance) -> None:
    """Just over the limit: job-ingest names the size, the limit and the key."""
    before = reset_peak(live.proc.pid)
    with Client(live.uri) as client, pytest.raises(PfluxError) as info:
        client.submit(with_environment(DEFAULT_MAX_JOBSPEC))
    text = str(info.value)
    assert "jobspec is too large:" in text
    assert f"more than the limit of {DEFAULT_MAX_JOBSPEC} ([ingest] max-jobspec-size)" in text
    assert memory(live.proc.pid)["VmHWM"] - before < 60


def test_jobspec_under_the_limit_runs(live: LiveInstance) -> None:
    """A 7M jobspec is taken, stored, run and let go: the broker's peak stays within three
    times the longest request it accepts (its text and J, the base64 of it, one and a
    third, are held together), and it holds little once the job is done."""
    with Client(live.uri) as client:
        spec = with_environment(DEFAULT_MAX_JOBSPEC - MIB)
        # a round trip first: what earlier tests sent the broker is let go before the count
        assert client.handle.call("broker.ping", {"alive": True})["alive"] is True
        before = reset_peak(live.proc.pid)
        jobid = client.submit(spec)
        assert client.wait(jobid).success
    peak = memory(live.proc.pid)["VmHWM"] - before  # parsed jobspec kept: 31 more
    assert peak < 3 * (DEFAULT_MAX_JOBSPEC + REQUEST_ROOM) / MIB
    # what it lets go of, it lets go of soon after (the job's last messages); kept: 46 more
    deadline = time.monotonic() + 30
    while memory(live.proc.pid)["VmRSS"] - before >= 20 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert memory(live.proc.pid)["VmRSS"] - before < 20


def test_the_limit_is_configured(tmp_path: Path) -> None:
    state = tmp_path / "state"
    config = tmp_path / "limit.toml"
    config.write_text('[ingest]\nmax-jobspec-size = "1M"\n')
    with LiveInstance(state, "--config", str(config)) as instance:
        with Client(instance.uri) as client, pytest.raises(PfluxError) as info:
            client.submit(with_environment(MIB))
        assert f"more than the limit of {MIB} ([ingest] max-jobspec-size)" in str(info.value)


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        ('"lots"', f"must be {SIZE_RULE}, not 'lots'"),
        ('"8m"', f"must be {SIZE_RULE}, not '8m'"),
        ("12", "must be at least 1K and at most 1G, not 12"),
        ('"2G"', "must be at least 1K and at most 1G, not '2G'"),
    ],
)
def test_a_bad_limit_is_refused(tmp_path: Path, value: str, rule: str) -> None:
    proc = start_with_config(tmp_path, f"[ingest]\nmax-jobspec-size = {value}\n")
    assert proc.returncode != 0
    assert f"[ingest] max-jobspec-size: {rule}" in proc.stderr


def refusal(sock: socket.socket) -> Message | None:
    """The broker's last word before it hung up (None: it said nothing)."""
    decoder = Decoder()
    messages = []
    with contextlib.suppress(ConnectionResetError):
        while data := sock.recv(65536):
            messages += decoder.feed(data)
    return messages[-1] if messages else None


def test_incomplete_messages_are_bounded(live: LiveInstance) -> None:
    """Twelve clients each stop 7.5M into a message of the longest kind: the broker holds
    a few of them and refuses the rest (EAGAIN), and serves on."""
    limit = DEFAULT_MAX_JOBSPEC + REQUEST_ROOM
    part = b"x" * (limit - MIB // 2)
    before = reset_peak(live.proc.pid)
    socks = []
    try:
        for _ in range(12):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(socket_path(live.uri))
            socks.append(sock)
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                sock.sendall(struct.pack(">I", limit) + part)
        with Client(live.uri) as client:
            assert client.handle.call("broker.ping", {"alive": True})["alive"] is True
        held = memory(live.proc.pid)["VmRSS"] - before  # unbounded: 90 more
        for sock in socks:
            sock.shutdown(socket.SHUT_WR)
        refusals = [refusal(sock) for sock in socks]
    finally:
        for sock in socks:
            sock.close()
    assert held < 55
    refused = [msg for msg in refusals if msg is not None and msg.errnum == errno.EAGAIN]
    assert len(refused) >= 6
    assert refused[0].errstr is not None
    assert "bytes of incomplete messages, more than its limit of" in refused[0].errstr


def test_a_stalled_message_is_closed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A client that stops in the middle of a message is closed after STALL_TIMEOUT."""
    monkeypatch.setattr(connector, "STALL_TIMEOUT", 0.5)
    path = tmp_path / "socket"

    async def stall() -> Message | None:
        server = await connector.serve(Broker(os.getuid()), path)
        reader, writer = await asyncio.open_unix_connection(str(path))
        writer.write(struct.pack(">I", 1000) + b"x" * 10)
        data = await asyncio.wait_for(reader.read(), timeout=30)
        writer.close()
        server.close()
        messages = Decoder().feed(data)
        return messages[-1] if messages else None

    msg = asyncio.run(stall())
    assert msg is not None
    assert msg.errnum == errno.ETIMEDOUT
    assert msg.errstr is not None
    assert msg.errstr.startswith("protocol error: nothing received for ")
    assert msg.errstr.endswith("s in the middle of a message (14 bytes held)")


def test_a_flood_of_refused_keys_is_counted_not_kept(tmp_path: Path) -> None:
    """6,000 connections with random CURVE keys: ten are logged in full and the rest as one
    count line at the window's end; the overlay keeps ten keys, and the log ring keeps
    what was logged before."""
    boot = test_size_boots(2, tmp_path, 2, ["a", "b"])[0]
    overlay = Overlay(Broker(os.getuid()), boot, {})
    ring = LogRing()
    logger = logging.getLogger("pflux.overlay")
    logger.addHandler(ring)
    counted = asyncio.Event()

    def follow(entry: dict[str, object]) -> None:
        if "more connections refused" in str(entry["message"]):
            counted.set()

    async def flood() -> None:
        overlay._loop = asyncio.get_running_loop()
        overlay.refusals.interval = 1.0
        ring.followers.add(follow)
        logger.error("before the flood")
        for i in range(6000):
            frames = [b"1.0", b"7", b"pflux", f"10.0.{i // 250}.{i % 250}".encode()]
            answer = overlay._zap_answer([*frames, b"", b"CURVE", os.urandom(32)])
            assert answer[2] == b"400"
        assert len(overlay.refusals.logged) <= overlay.refusals.burst
        await asyncio.wait_for(counted.wait(), timeout=30)

    try:
        asyncio.run(flood())
    finally:
        logger.removeHandler(ring)
    messages = [str(entry["message"]) for entry in ring.backlog()]
    assert messages[0] == "before the flood"
    refusals = [m for m in messages if "refused" in m]
    assert len(refusals) == overlay.refusals.burst + 1
    assert refusals[-1].startswith(
        f"overlay: {6000 - overlay.refusals.burst} more connections refused from 10.0.0.10,"
    )
    assert refusals[-1].endswith("and others in 1 s: its CURVE key is not this instance's")


LINE = b"0123456789" * 7  # 70 characters and a newline, as the job writes it


def test_a_follower_that_stops_reading_holds_the_broker_to_a_piece(live: LiveInstance) -> None:
    """``pflux job eventlog -F -p output`` whose reader stops while the job writes 120M:
    the broker holds about what the job costs with no follower, and the follower, once
    it reads again, gets every line."""
    total = 120_000_000
    env = environ(PFLUX_URI=live.uri)
    before = reset_peak(live.proc.pid)
    with Client(live.uri) as client:
        command = f"yes {LINE.decode()} | head -c {total}"
        jobid = client.submit(["sh", "-c", command])
        follower = subprocess.Popen(
            [str(PFLUX), "job", "eventlog", "-F", "-p", "output", str(int(jobid))],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            assert client.wait(jobid).success
            peak = memory(live.proc.pid)["VmHWM"] - before  # unbounded: 167
            out, err = follower.communicate(timeout=300)
        finally:
            follower.kill()
    assert follower.returncode == 0, err
    assert out.count(LINE) == total // (len(LINE) + 1)
    assert peak < 130


def test_a_plain_watch_whose_reader_stops_holds_one_value(live: LiveInstance) -> None:
    """A plain ``kvs.watch`` whose reader stops while a writer rewrites the key 40 times
    with a 1 MiB value: the broker keeps the latest value, not each one, and the watcher,
    once it reads again, gets the last value written, its stream still open."""
    key = "bounds.plain"
    size = MIB + 64  # a value over a row: the KVS writes it through its small page cache

    def value(i: int) -> str:
        return f"{i:04d}".ljust(size, "x")

    with Client(live.uri) as client:
        client.kvs_put([(key, value(0))])
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        sock.connect(socket_path(live.uri))
        sock.settimeout(60)
        decoder = Decoder()

        def read_until(last: str) -> None:
            seen = None
            while seen != last:
                data = sock.recv(MIB)
                assert data, "the broker hung up"
                for msg in decoder.feed(data):
                    assert msg.errnum == 0, msg.errstr
                    seen = msg.payload["value"][:4]

        try:
            request = Message(REQUEST, "kvs.watch", 1, {"key": key}, flags=FLAG_STREAMING)
            sock.sendall(encode(request))
            read_until("0000")  # the value it starts from; from here on, nothing is read
            before = reset_peak(live.proc.pid)
            for i in range(1, 41):
                client.kvs_put([(key, value(i))])
            peak = memory(live.proc.pid)["VmHWM"] - before  # each value kept: 43 more
            read_until("0040")
        finally:
            sock.close()
    assert peak < 16


class _Unread:
    """A transport whose peer reads nothing: everything written stays buffered."""

    def __init__(self) -> None:
        self.buffered = 0
        self.aborted = False

    def writelines(self, data: Iterable[bytes]) -> None:
        self.buffered += sum(len(piece) for piece in data)

    def get_write_buffer_size(self) -> int:
        return self.buffered

    def abort(self) -> None:
        self.aborted = True


def test_a_client_that_leaves_too_much_unread_is_disconnected(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Responses a client does not read are kept up to OUTPUT_LIMIT; past it the connection
    is closed and the reason logged."""
    monkeypatch.setattr(connector, "OUTPUT_LIMIT", 10 * MIB)
    conn = connector.Connection(Broker(os.getuid()))
    transport = _Unread()
    conn.transport = transport  # type: ignore[assignment]
    answer = Message(RESPONSE, "kvs.get", 1, {"value": "x" * MIB})
    with caplog.at_level(logging.WARNING, "pflux.connector"):
        for _ in range(9):
            conn.deliver(answer)
        assert not transport.aborted
        conn.deliver(answer)
        conn.deliver(answer)
    assert transport.aborted
    assert conn.closed
    conn.deliver(answer)
    assert transport.buffered < 12 * MIB
    assert "bytes sent to it unread, more than 10485760" in caplog.text


def test_providing_a_service_does_not_lift_a_client_s_output_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A client that registers a service of its own (and then subscribes to every
    event, reading none) is disconnected past OUTPUT_LIMIT; only a module process's
    link, the instance's own, is not."""
    monkeypatch.setattr(connector, "OUTPUT_LIMIT", 2 * MIB)
    broker = Broker(os.getuid())
    event = Message(EVENT, "flood", 1, {"pad": "x" * MIB})
    for module, closed in ((False, True), (True, False)):
        conn = connector.Connection(broker, module=module)
        conn.provider = connector.Provider(broker, conn)
        transport = _Unread()
        conn.transport = transport  # type: ignore[assignment]
        for _ in range(4):
            conn.deliver(event)
        assert (transport.aborted, conn.closed) == (closed, closed)


# a process that connects to a broker of SERVER_KEY as PUBLIC/SECRET, sends it one frame of
# SIZE bytes, then waits for its stdin to close
SENDER = """
import sys, zmq
server_key, public, secret, endpoint, size = sys.argv[1:]
dealer = zmq.Context().socket(zmq.DEALER)
dealer.curve_serverkey = server_key.encode()
dealer.curve_publickey = public.encode()
dealer.curve_secretkey = secret.encode()
dealer.connect(endpoint)
dealer.send(bytes(int(size)))
sys.stdin.read()
"""


class OverlayLog(logging.Handler):
    """The overlay's log lines, as they come; ``seen`` awaits one."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self.logged = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())
        self.logged.set()

    async def seen(self, text: str) -> None:
        while not any(text in line for line in self.lines):
            self.logged.clear()
            await asyncio.wait_for(self.logged.wait(), timeout=60)


@contextlib.asynccontextmanager
async def two_ranks(tmp_path: Path) -> AsyncIterator[tuple[Overlay, Overlay, OverlayLog]]:
    """Ranks 0 and 1 in this process, each answering ``broker.ping``, once 0 has heard
    from 1; and the overlay's log."""
    logged = OverlayLog()
    logger = logging.getLogger("pflux.overlay")
    logger.addHandler(logged)
    level = logger.level
    logger.setLevel(logging.INFO)  # the child's "connecting again" line
    joined = asyncio.Event()
    overlays: list[Overlay] = []
    try:
        for boot in test_size_boots(2, tmp_path, 2, ["a", "b"]):
            broker = Broker(os.getuid())
            broker.rank, broker.size = boot.rank, boot.size
            broker.register(BrokerBasics(broker))
            if boot.rank == 0:
                broker.rank_changed(0, {"hostname": "a"})
                broker.watch_ranks(lambda rank, info: joined.set() if rank and info else None)
            await broker.start()
            overlays.append(Overlay(broker, boot, {"hostname": "ab"[boot.rank]}))
            overlays[-1].heartbeat = 0.05
            await overlays[-1].start()
        await asyncio.wait_for(joined.wait(), timeout=30)
        yield overlays[0], overlays[1], logged
    finally:
        for overlay in reversed(overlays):
            await overlay.stop()
        logger.removeHandler(logged)
        logger.setLevel(level)


async def both_answer(zero: Overlay, one: Overlay) -> None:
    assert (await one.broker.call("broker.ping", {}, nodeid=0))["rank"] == 0
    assert (await zero.broker.call("broker.ping", {}, nodeid=1))["rank"] == 1


def test_a_message_over_the_overlay_limit_from_a_key_holder_is_never_held(
    tmp_path: Path,
) -> None:
    """A process with the instance's key sends rank 0 a 100M frame: ZeroMQ drops its
    connection as the frame's length arrives (MAXMSGSIZE), so the broker never holds it;
    the loss is logged, naming the sender's process, and ranks 0 and 1 go on. The
    connections of a key refused meanwhile are refusals, not losses."""

    async def scenario() -> tuple[int, int, int, list[str]]:
        async with two_ranks(tmp_path) as (zero, one, logged):
            server_key, endpoint = zero.boot.cert.public, zero.endpoint
            stranger = [k.decode() for k in zmq.curve_keypair()]
            senders = []

            async def send(keys: list[str], size: int) -> None:
                senders.append(
                    await asyncio.create_subprocess_exec(
                        *[sys.executable, "-c", SENDER, server_key, *keys, endpoint],
                        str(size),
                        stdin=asyncio.subprocess.PIPE,
                    )
                )

            try:
                await send(stranger, 1)
                await logged.seen("refused a connection from")
                before = reset_peak(os.getpid())
                await send([server_key, zero.boot.cert.secret], 100 * MIB)
                await logged.seen("lost a connection from")
                peak = memory(os.getpid())["VmHWM"] - before  # unbounded: 100 more
                await both_answer(zero, one)
                lines = list(logged.lines)  # before the senders and brokers go away
            finally:
                for sender in senders:
                    assert sender.stdin is not None
                    sender.stdin.close()
                    await sender.wait()
            return peak, senders[1].pid, zero.limit, lines

    peak, pid, limit, lines = asyncio.run(scenario())
    assert peak < 40
    assert [line for line in lines if "lost a connection" in line] == [
        f"overlay: lost a connection from pid {pid} (uid {os.getuid()}): it went away, or"
        f" sent a message over the overlay's limit of {limit} bytes"
    ]


def test_a_child_sent_a_message_over_the_limit_by_its_parent_connects_again(
    tmp_path: Path,
) -> None:
    """A frame over the limit from the parent (only a process with the instance's key can
    send one) ends the child's connection, a protocol error after which ZeroMQ does not
    connect again: the child logs the loss, connects again itself, and both ranks go on."""

    async def scenario() -> list[str]:
        async with two_ranks(tmp_path) as (zero, one, logged):
            assert zero._router is not None
            zero._router.send_multipart([b"1", bytes(one.limit + 1)])
            await logged.seen("connecting again to the parent")
            await both_answer(zero, one)
            return list(logged.lines)

    lines = asyncio.run(scenario())
    assert "overlay: lost a connection from the parent, rank 0 (" in "\n".join(lines)
