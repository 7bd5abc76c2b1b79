"""Bad input from every direction gets a clear error, and the instance keeps serving."""

from __future__ import annotations

import errno
import os
import shutil
import socket
import struct
import tempfile
from pathlib import Path

import pytest

from pflux.api import Client
from pflux.client.handle import Handle
from pflux.errors import RPCError
from pflux.ingest.service import DEFAULT_MAX_JOBSPEC, REQUEST_ROOM
from pflux.protocol.message import Decoder
from pflux.protocol.uri import socket_path
from support.instance import LiveInstance, fails, jobspec, ok


def still_serving(uri: str) -> None:
    with Handle(uri) as handle:
        assert handle.call("broker.ping", {"alive": True})["alive"] is True


def raw(uri: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(socket_path(uri))
    return sock


def refusal(sock: socket.socket) -> tuple[int, str]:
    """The broker's one error message before it hangs up, then EOF."""
    decoder = Decoder()
    messages = []
    while data := sock.recv(65536):
        messages += decoder.feed(data)
    assert len(messages) == 1
    return messages[0].errnum, messages[0].errstr or ""


def test_invalid_jobspec_names_the_path(client: Client, uri: str) -> None:
    bad = jobspec()
    bad["resources"][0]["with"][0]["count"] = 0
    with pytest.raises(RPCError) as info:
        client.submit(bad)
    assert info.value.errnum == errno.EINVAL
    assert "resources[0].with[0].count: must be an integer >= 1, got 0" in info.value.errstr
    still_serving(uri)


def test_malformed_jobspec_file(uri: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("version: 1\nresources: [\n")
    err = fails(uri, "job", "submit", str(path))
    assert err.startswith("pflux-job: ERROR:")
    assert "line" in err


def test_unknown_and_unparsable_ids(uri: str) -> None:
    assert "job ƒ2 not found" in fails(uri, "job", "eventlog", "ƒ2")
    assert "not found" in fails(uri, "cancel", "ƒ2")
    assert "'bar' is not a valid job id" in fails(uri, "job", "urgency", "bar", "3")


def test_bad_urgencies(uri: str, client: Client) -> None:
    jobid = client.submit(jobspec(), urgency="hold")
    assert "urgency" in fails(uri, "job", "urgency", str(jobid), "40")
    assert "urgency" in fails(uri, "job", "urgency", str(jobid), "soon")
    with pytest.raises(RPCError, match=r"^job-manager\.urgency: urgency: expected int >= 0$"):
        client.handle.call("job-manager.urgency", {"id": int(jobid), "urgency": -1})
    client.cancel(jobid)


def test_bad_rpc_payloads(client: Client, uri: str) -> None:
    with pytest.raises(RPCError, match=r"^job-manager\.raise: severity: expected int, got str$"):
        client.handle.call("job-manager.raise", {"id": 1, "type": "x", "severity": "high"})
    with pytest.raises(
        RPCError, match=r"^job-manager\.urgency: payload: expected object, got array$"
    ):
        client.handle.call("job-manager.urgency", [1, 2])
    with pytest.raises(RPCError) as info:
        client.handle.call("no-such-service.method", {})
    assert info.value.errnum == errno.ENOSYS
    still_serving(uri)


@pytest.mark.parametrize(
    ("changes", "errnum", "errstr"),
    [
        ({"jobspec": []}, errno.EPROTO, "job-ingest.submit: jobspec: expected object"),
        ({"jobspec": None}, errno.EPROTO, "job-ingest.submit: jobspec: expected object"),
        ({"jobspec": ...}, errno.EPROTO, "job-ingest.submit: jobspec: required"),
        ({"urgency": 32}, errno.EINVAL, "job-ingest.submit: urgency: expected int <= 31"),
        ({"flags": 4}, errno.EINVAL, "flags: unknown flag bits in 4"),
        ({"jobspec": {"version": 1}}, errno.EINVAL, "invalid jobspec: "),
    ],
)
def test_bad_submissions(
    client: Client, changes: dict[str, object], errnum: int, errstr: str
) -> None:
    """A malformed submission is EPROTO naming the field; a well-formed one that makes no
    sense keeps its own errno. (``...``: the field left out.)"""
    merged = {"jobspec": jobspec(), **changes}
    payload = {key: value for key, value in merged.items() if value is not ...}
    with pytest.raises(RPCError) as info:
        client.handle.call("job-ingest.submit", payload)
    assert info.value.errnum == errnum
    assert info.value.errstr.startswith(errstr)


def test_oversized_message(uri: str) -> None:
    """A client's message may hold a jobspec of the default limit, and no more."""
    limit = DEFAULT_MAX_JOBSPEC + REQUEST_ROOM
    with raw(uri) as sock:
        sock.sendall(struct.pack(">I", limit + 1))
        errnum, errstr = refusal(sock)
    assert errnum == errno.EPROTO
    assert f"exceeds the limit of {limit} bytes" in errstr
    still_serving(uri)


def test_garbage_message(uri: str) -> None:
    with raw(uri) as sock:
        body = b"{not json"
        sock.sendall(struct.pack(">I", len(body)) + body)
        errnum, errstr = refusal(sock)
    assert errnum == errno.EPROTO
    assert "not valid JSON" in errstr
    still_serving(uri)


def test_truncated_message_then_hang_up(uri: str) -> None:
    with raw(uri) as sock:
        sock.sendall(struct.pack(">I", 100) + b'{"type": 1')
    still_serving(uri)


def test_client_disconnects_mid_stream(uri: str, client: Client) -> None:
    jobid = client.submit(jobspec("0"))
    handle = Handle(uri)
    watch = handle.rpc("job-info.eventlog-watch", {"id": int(jobid)}, streaming=True)
    assert watch.get(timeout=10)["data"]
    handle.close()  # gone while the stream is live
    client.cancel(jobid)
    assert not client.wait(jobid).success
    still_serving(uri)


def _connect_as_nobody(path: str) -> tuple[int, str]:
    """Connect from a child running as uid 65534; return what the client saw."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        os.close(read)
        try:
            os.setgid(65534)
            os.setuid(65534)
            with Handle(f"local://{path}") as handle:
                handle.call("broker.ping", {})
            message = "0 connected"
        except RPCError as exc:
            message = f"{exc.errnum} {exc.errstr}"
        except Exception as exc:
            message = f"-1 {exc}"
        os.write(write, message.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        text = pipe.read()
    os.waitpid(pid, 0)
    code, _, message = text.partition(" ")
    return int(code), message


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another user")
def test_another_user_is_refused() -> None:
    base = Path(tempfile.mkdtemp(prefix="pflux-users-"))  # others may traverse it
    base.chmod(0o711)
    try:
        with LiveInstance(base / "state") as live:
            path = socket_path(live.uri)
            code, message = _connect_as_nobody(path)
            # the state directory is private (0700): the kernel refuses first
            assert "Permission denied" in message, (code, message)
            # opened up, the connection reaches the broker, which refuses it itself
            live.state_dir.chmod(0o711)
            Path(path).chmod(0o777)
            code, message = _connect_as_nobody(path)
            live.state_dir.chmod(0o700)
            assert code == errno.EPERM, message
            owner = os.getuid()
            assert message == (
                f"permission denied: uid 65534 may not connect to the instance of uid {owner}"
            )
            still_serving(live.uri)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_state_directory_is_private(instance: LiveInstance) -> None:
    assert (instance.state_dir.stat().st_mode & 0o777) == 0o700


def test_cli_errors_go_to_stderr_with_the_command_name(uri: str) -> None:
    assert fails(uri, "job", "info", "ƒ2", "jobspec").startswith("pflux-job: ERROR:")
    assert ok(uri, "jobs", "-n", "-f", "pending") is not None
