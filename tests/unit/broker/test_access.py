"""The ``[access]`` table, and root and guests at the door of an instance of another user's."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pflux.broker import access, connector
from pflux.broker.access import Access
from pflux.broker.connector import Connection
from pflux.broker.router import Broker
from pflux.errors import ConfigError
from pflux.protocol.message import REQUEST, ROLE_OWNER, ROLE_USER, Decoder, Message, encode

OWNER = 4242  # an instance owner other than root


@pytest.mark.parametrize(
    ("config", "allowed"),
    [
        ({}, Access(root_owner=False, guest_user=False)),
        ({"access": {}}, Access(root_owner=False, guest_user=False)),
        ({"access": {"allow-root-owner": False}}, Access(root_owner=False, guest_user=False)),
        (
            {"access": {"allow-root-owner": True, "allow-guest-user": False}},
            Access(root_owner=True, guest_user=False),
        ),
        ({"access": {"allow-guest-user": True}}, Access(root_owner=False, guest_user=True)),
    ],
)
def test_each_access_key_is_false_unless_set(config: dict[str, Any], allowed: Access) -> None:
    assert access.access(config) == allowed


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("yes", r"^\[access\]: must be a table, got 'yes'$"),
        ({"allow-root-owner": 1}, r"^\[access\] allow-root-owner: must be true or false, got 1$"),
        ({"allow-guest-user": "no"}, r"^\[access\] allow-guest-user: must be true or false"),
    ],
)
def test_a_bad_access_table_is_refused_naming_the_key(table: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        access.access({"access": table})


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
    connection = Connection(Broker(OWNER, config=config), access=access.access(config))
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


def test_with_guests_allowed_another_user_is_a_guest_under_its_own_uid(
    root_peer: socket.socket,
) -> None:
    connection, transport = _connect(root_peer, {"access": {"allow-guest-user": True}})
    assert not transport.closed
    assert connection.userid == 0  # root is not the owner here, and not let in as the owner
    assert connection.rolemask == ROLE_USER


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to connect as root")
def test_the_access_table_is_read_once_for_every_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The connector reads ``[access]`` when it starts serving, not at each root connection."""
    reads: list[object] = []

    read = access.access

    def counted(config: Any) -> Access:
        reads.append(config)
        return read(config)

    monkeypatch.setattr(access, "access", counted)
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


@pytest.mark.parametrize(
    ("table", "socket_mode", "directory_mode"),
    [({}, 0o600, 0o700), ({"allow-guest-user": True}, 0o777, 0o711)],
)
def test_the_socket_and_its_directory_let_others_in_only_with_guests_allowed(
    tmp_path: Path, table: dict[str, Any], socket_mode: int, directory_mode: int
) -> None:
    directory = tmp_path / "state"
    directory.mkdir(mode=0o700)
    path = directory / "local"
    (directory / "exec").mkdir(mode=0o755)  # another service's, made with the umask
    (directory / "exec" / "sock").touch(mode=0o777)
    os.chmod(directory / "exec", 0o755)

    async def served() -> tuple[int, int]:
        server = await connector.serve(Broker(OWNER, config={"access": table}), path)
        server.close()
        return path.stat().st_mode & 0o777, directory.stat().st_mode & 0o777

    assert asyncio.run(served()) == (socket_mode, directory_mode)
    if table:  # nothing else there is reachable
        assert (directory / "exec").stat().st_mode & 0o777 == 0o700
