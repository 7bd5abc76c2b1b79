"""The ``[access]`` table, and root at the door of an instance of another user's."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pflux.broker import access, connector
from pflux.broker.access import allow_root_owner
from pflux.broker.connector import Connection
from pflux.broker.router import Broker
from pflux.errors import ConfigError
from pflux.protocol.message import REQUEST, ROLE_OWNER, Decoder, Message, encode

OWNER = 4242  # an instance owner other than root


@pytest.mark.parametrize(
    ("config", "allowed"),
    [
        ({}, False),
        ({"access": {}}, False),
        ({"access": {"allow-root-owner": False}}, False),
        ({"access": {"allow-root-owner": True, "allow-guest-user": False}}, True),
    ],
)
def test_allow_root_owner_is_false_unless_set(config: dict[str, Any], allowed: bool) -> None:
    assert allow_root_owner(config) is allowed


@pytest.mark.parametrize(
    ("access", "message"),
    [
        ("yes", r"^\[access\]: must be a table, got 'yes'$"),
        ({"allow-root-owner": 1}, r"^\[access\] allow-root-owner: must be true or false, got 1$"),
        ({"allow-guest-user": "no"}, r"^\[access\] allow-guest-user: must be true or false"),
        (
            {"allow-guest-user": True},
            r"^\[access\] allow-guest-user: not supported yet: an instance serves its owner only",
        ),
    ],
)
def test_a_bad_access_table_is_refused_naming_the_key(access: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        allow_root_owner({"access": access})


class _Transport:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.written = b""
        self.closed = False

    def get_extra_info(self, name: str) -> Any:
        assert name == "socket"
        return self.sock

    def write(self, data: bytes) -> None:
        self.written += data

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def root_peer() -> Iterator[socket.socket]:
    """A socket whose peer is this process: root, as the tests that use it need."""
    if os.getuid() != 0:
        pytest.skip("needs root to be the peer")
    ours, theirs = socket.socketpair()
    yield ours
    ours.close()
    theirs.close()


def _connect(sock: socket.socket, config: dict[str, Any]) -> tuple[Connection, _Transport]:
    connection = Connection(Broker(OWNER, config=config), root_owner=allow_root_owner(config))
    transport = _Transport(sock)
    connection.connection_made(transport)  # type: ignore[arg-type]
    return connection, transport


def test_root_is_refused_by_another_users_instance_by_default(root_peer: socket.socket) -> None:
    connection, transport = _connect(root_peer, {})
    assert connection.closed
    assert transport.closed
    (refusal,) = Decoder().feed(transport.written)
    assert refusal.errstr == (
        f"permission denied: uid 0 (root) may not connect to the instance of uid {OWNER}"
        " unless its config sets [access] allow-root-owner = true"
    )


def test_root_allowed_is_the_owner_and_its_requests_carry_the_owners_uid(
    root_peer: socket.socket,
) -> None:
    connection, transport = _connect(root_peer, {"access": {"allow-root-owner": True}})
    assert not transport.closed
    assert connection.userid == OWNER
    assert connection.rolemask == ROLE_OWNER


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to connect as root")
def test_the_access_table_is_read_once_for_every_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The connector reads ``[access]`` when it starts serving, not at each root connection."""
    reads: list[object] = []

    def counted(config: Any) -> bool:
        reads.append(config)
        return allow_root_owner(config)

    monkeypatch.setattr(access, "allow_root_owner", counted)
    broker = Broker(OWNER, config={"access": {"allow-root-owner": True}})
    path = tmp_path / "socket"

    async def three_root_connections() -> list[Message]:
        server = await connector.serve(broker, path)
        answers = []
        for _ in range(3):
            reader, writer = await asyncio.open_unix_connection(str(path))
            writer.write(encode(Message(REQUEST, "broker.nosuch", 1, {})))
            answers += Decoder().feed(await asyncio.wait_for(reader.read(4096), timeout=30))
            writer.close()
        server.close()
        return answers

    answers = asyncio.run(three_root_connections())
    assert [msg.errstr for msg in answers] == ["no service provides 'broker.nosuch'"] * 3
    assert len(reads) == 1
