"""A client at a socket that is not an instance's fails within its timeout, naming it.

Each server here is a real Unix socket in a thread: one that accepts and never
answers (another program's socket, such as the launcher's), one that sends
bytes that are not a message, one that hangs up, and one that answers the
connection's ping but nothing after it (a service that never answers).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import math
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pflux.api import AsyncClient, Client
from pflux.client.handle import Handle
from pflux.errors import NoInstanceError, PfluxError, RPCError, RPCTimeout
from pflux.protocol.message import RESPONSE, Decoder, Message, encode
from pflux.protocol.uri import DEFAULT_TIMEOUT, TIMEOUT_ENV, client_timeout
from support.instance import pflux

TIMEOUT = 0.5

Behaviour = Callable[[socket.socket], None]


def silent(conn: socket.socket) -> None:
    """Read what comes and never answer, until the client hangs up."""
    while conn.recv(65536):
        pass


def garbage(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
    silent(conn)


def hang_up(conn: socket.socket) -> None:
    conn.close()


def ping_only(conn: socket.socket) -> None:
    """Answer the first request (the connection's ping) and nothing after it."""
    decoder = Decoder()
    while data := conn.recv(65536):
        for msg in decoder.feed(data):
            if msg.topic == "broker.ping":
                conn.sendall(encode(Message(RESPONSE, msg.topic, msg.matchtag, msg.payload)))


@contextlib.contextmanager
def server(tmp_path: Path, behaviour: Behaviour) -> Iterator[str]:
    """A Unix socket that treats each connection with ``behaviour``; its URI."""
    path = tmp_path / "sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return  # the listener is closed
            with conn, contextlib.suppress(OSError):
                behaviour(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"local://{path}"
    finally:
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        thread.join(timeout=10)


def refused(connect: Callable[[], object]) -> tuple[str, float]:
    """What connecting raised, and how long it took."""
    start = time.monotonic()
    with pytest.raises(NoInstanceError) as info:
        connect()
    return str(info.value), time.monotonic() - start


def async_connect(uri: str, **kwargs: float) -> Callable[[], object]:
    async def connect() -> None:
        client = await AsyncClient.connect(uri, **kwargs)
        client.close()

    return lambda: asyncio.run(connect())


def blocking_connect(uri: str, **kwargs: float) -> Callable[[], object]:
    return lambda: Client(uri, **kwargs).close()


CONNECTS = [blocking_connect, async_connect]


@pytest.mark.parametrize("connect", CONNECTS)
def test_a_socket_that_never_answers_times_out_naming_it(
    tmp_path: Path, connect: Callable[..., Callable[[], object]]
) -> None:
    with server(tmp_path, silent) as uri:
        message, took = refused(connect(uri, timeout=TIMEOUT))
    assert message == f"no pflux instance answered at {uri} (timed out after 0.5 s)"
    assert TIMEOUT <= took < TIMEOUT + 5


@pytest.mark.parametrize("connect", CONNECTS)
def test_pflux_timeout_sets_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, connect: Callable[..., Callable[[], object]]
) -> None:
    monkeypatch.setenv(TIMEOUT_ENV, "0.25")
    with server(tmp_path, silent) as uri:
        message, _ = refused(connect(uri))
    assert message.endswith("(timed out after 0.25 s)")


@pytest.mark.parametrize("connect", CONNECTS)
def test_a_socket_that_sends_garbage_is_not_an_instance(
    tmp_path: Path, connect: Callable[..., Callable[[], object]]
) -> None:
    with server(tmp_path, garbage) as uri:
        message, took = refused(connect(uri, timeout=30))
    assert message.startswith(f"{uri} is not a pflux instance: ")
    assert took < 10  # the garbage is the answer: no waiting for the limit


@pytest.mark.parametrize("connect", CONNECTS)
def test_a_socket_that_hangs_up_says_so(
    tmp_path: Path, connect: Callable[..., Callable[[], object]]
) -> None:
    with server(tmp_path, hang_up) as uri:
        message, _ = refused(connect(uri, timeout=30))
    assert message == f"no pflux instance answered at {uri}: it hung up"


def test_the_cli_names_the_socket_and_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TIMEOUT_ENV, str(TIMEOUT))
    with server(tmp_path, silent) as uri:
        result = pflux(uri, "jobs")
    assert result.returncode == 1
    assert result.stderr == (
        f"pflux-jobs: ERROR: no pflux instance answered at {uri} (timed out after 0.5 s)\n"
    )


def test_a_request_nobody_answers_times_out(tmp_path: Path) -> None:
    with (
        server(tmp_path, ping_only) as uri,
        Handle(uri, timeout=TIMEOUT) as handle,
        pytest.raises(RPCTimeout) as info,
    ):
        handle.call("job-list.list", {})
    assert info.value.errnum == errno.ETIMEDOUT
    assert info.value.errstr == "timed out after 0.5 s waiting for a response to job-list.list"


def ping_then_hang_up(conn: socket.socket) -> None:
    """Answer the connection's ping, then hang up at the next request (an instance killed)."""
    decoder = Decoder()
    for msg in decoder.feed(conn.recv(65536)):
        conn.sendall(encode(Message(RESPONSE, msg.topic, msg.matchtag, msg.payload)))
    conn.recv(65536)


def test_every_request_in_flight_when_the_instance_goes_says_so(tmp_path: Path) -> None:
    with server(tmp_path, ping_then_hang_up) as uri, Handle(uri, timeout=TIMEOUT) as handle:
        rpcs = [handle.rpc("job-list.list", {}) for _ in range(2)]
        for rpc in rpcs:
            with pytest.raises(RPCError) as info:
                rpc.get()
            assert info.value.errnum == errno.ECONNRESET
            assert info.value.errstr == "lost connection to the instance"


def test_an_async_request_nobody_answers_times_out(tmp_path: Path) -> None:
    async def list_jobs(uri: str) -> None:
        client = await AsyncClient.connect(uri, timeout=TIMEOUT)
        try:
            await client.list_jobs()
        finally:
            client.close()

    with server(tmp_path, ping_only) as uri, pytest.raises(RPCTimeout) as info:
        asyncio.run(list_jobs(uri))
    assert info.value.errstr == "timed out after 0.5 s waiting for a response to job-list.list"


def test_a_wait_the_caller_asked_for_has_no_limit(tmp_path: Path) -> None:
    with server(tmp_path, ping_only) as uri, Handle(uri, timeout=TIMEOUT) as handle:
        assert handle.rpc("job-manager.wait", {"id": 1}, wait=True).timeout is None
        assert handle.rpc("job-list.list", {}).timeout == TIMEOUT
        with pytest.raises(RPCTimeout):  # a limit given to a wait still holds
            handle.call("job-manager.wait", {"id": 1}, 0.1, wait=True)


def test_no_limit_waits_for_the_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TIMEOUT_ENV, "0")
    with server(tmp_path, ping_only) as uri, Handle(uri) as handle:
        assert handle.timeout is None
        assert handle.call("broker.ping", {"n": 1})["n"] == 1


def test_the_default_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TIMEOUT_ENV, raising=False)
    assert client_timeout() == DEFAULT_TIMEOUT
    monkeypatch.setenv(TIMEOUT_ENV, "")
    assert client_timeout() == DEFAULT_TIMEOUT
    monkeypatch.setenv(TIMEOUT_ENV, "2.5")
    assert client_timeout() == 2.5
    assert client_timeout(7) == 7  # the keyword wins over the environment
    assert client_timeout(0) is None


@given(st.floats(min_value=0, allow_infinity=False, allow_nan=False))
def test_any_number_of_seconds_is_a_limit(seconds: float) -> None:
    assert client_timeout(seconds) == (seconds or None)


@given(st.one_of(st.floats(max_value=-1e-300), st.just(math.inf), st.just(math.nan)))
def test_a_bad_keyword_names_it(seconds: float) -> None:
    with pytest.raises(PfluxError, match=r"^timeout: must be a number of seconds \(0: no limit\)"):
        client_timeout(seconds)


@pytest.mark.parametrize("text", ["ten", "-1", "nan", "inf", "1e999", "10s"])
def test_a_bad_pflux_timeout_names_it(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TIMEOUT_ENV, text)
    with pytest.raises(PfluxError) as info:
        client_timeout()
    assert str(info.value) == (
        f"{TIMEOUT_ENV}: must be a number of seconds (0: no limit), got {text!r}"
    )


def test_the_brokers_refusal_is_not_hidden(tmp_path: Path) -> None:
    def refuse(conn: socket.socket) -> None:
        conn.sendall(encode(Message(RESPONSE, "broker.error", 0, errnum=errno.EPERM, errstr="no")))

    with server(tmp_path, refuse) as uri, pytest.raises(RPCError) as info:
        Handle(uri, timeout=30)
    assert (info.value.errnum, info.value.errstr) == (errno.EPERM, "no")
