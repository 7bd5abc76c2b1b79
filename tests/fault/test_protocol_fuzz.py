"""Fuzz every request type of every service on a live instance's socket.

The topics are read from the services' ``@method`` tables, so a new method is
fuzzed as soon as it exists. Payloads are mutated: wrong types, huge and
negative integers, deep nesting, unicode, missing and extra keys. Raw frames
that are not messages are sent too. Afterwards the instance must have answered
every request that asked for an answer, logged no traceback or internal error,
and still run a real job.
"""

from __future__ import annotations

import errno
import functools
import importlib
import inspect
import re
import socket
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pflux.api import Client
from pflux.broker.instance import MODULES, SERVICES, BrokerService
from pflux.client.handle import Handle
from pflux.protocol import ingest, manager
from pflux.protocol.message import FLAG_NORESPONSE, FLAG_STREAMING
from pflux.protocol.uri import socket_path
from support.instance import LiveInstance, held, jobspec
from support.raw import send_raw

# Requests that legitimately stop the instance; fuzzing them would prove nothing.
# broker.shutdown: stops the instance by design.
EXCLUDED = frozenset({"broker.shutdown"})
# Requests that change state legitimately are fuzzed, and neutralised:
# - kvs.commit writes below ``fuzz.`` only (``_neutral``), never over the jobs' keys;
# - job-manager.queue-enable/queue-start may stop the queue: it is started again at the end;
# - job-manager.exec-hello may name a service nobody provides: the fuzzer's connection
#   closes at the end, and job-exec takes over again;
# - raise, raiseall, kill, urgency, update act on the fuzzer's own two jobs only.

# Requests answered only once something else happens: the held job is never done.
WAITS = frozenset({"job-manager.drain", "job-manager.result", "job-manager.wait"})

ANSWER_TIMEOUT = 10.0  # seconds a request may take to be answered under load

# field names the services read, so that mutated values reach the checks behind the first
FIELDS = (
    "id", "ids", "jobs", "key", "keys", "namespace", "owner", "name", "prefix", "ops",
    "value", "urgency", "flags", "type", "severity", "note", "signum", "updates", "memo",
    "enable", "start", "reason", "service", "path", "matchtag", "mode", "limit", "full",
    "digest", "userid", "states", "dry_run", "R", "priority", "jobspec", "append",
    "waitcreate", "suffix", "attrs", "constraint", "max_entries", "since", "results",
    "ranks", "final", "expiration", "t_submit", "status", "data", "stream", "rank", "slice",
    "volatile",
)  # fmt: skip


# the fields of the requests typed in pflux.protocol, which handlers decode rather than read
REQUESTS = {**ingest.REQUESTS, **manager.REQUESTS}
FIELD_READ = re.compile(r"""(?:\.get\(|\[)["']([A-Za-z_][\w-]*)["']""")


def _topics() -> dict[str, list[str]]:
    """Every ``service.method`` the instance's services register, with the fields its
    handler's source reads (``payload.get("id")``, ``spec["jobspec"]``) or its type has."""
    classes: list[Any] = [BrokerService]
    for path in (*SERVICES, *MODULES.values()):
        module, _, cls = path.partition(":")
        classes.append(getattr(importlib.import_module(module), cls))
    topics = {}
    for cls in classes:
        for attr in dir(cls):
            fn = getattr(cls, attr)
            name = getattr(fn, "__pflux_method__", None)
            topic = f"{cls.name}.{name}"
            if name is not None and topic not in EXCLUDED:
                read = FIELD_READ.findall(inspect.getsource(fn))
                typed = REQUESTS.get(topic)
                if typed is not None:
                    read += [field.name for field in msgspec.structs.fields(typed)]
                topics[topic] = sorted(set(read))
    return topics


TOPICS = _topics()

extreme_ints = st.sampled_from(
    [0, -1, 1, 2**31, 2**32 - 1, 2**32, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, -(2**63)]
)
words = st.sampled_from(
    ["", ".", "primary", "put", "unlink", "append", "cancel", "exec", "job-1", "ƒ1", "eventlog"]
)


def _values(ids: tuple[int, ...]) -> st.SearchStrategy[Any]:
    """JSON values, the instance's job ids among them so that checks past the id are reached."""
    leaves = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**63), max_value=2**64 - 1),
        extreme_ints,
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=20),
        words,
        st.sampled_from(ids),
    )
    return st.recursive(
        leaves,
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(st.text(max_size=8) | st.sampled_from(FIELDS), inner, max_size=4)
        ),
        max_leaves=12,
    )


@st.composite
def deep(draw: st.DrawFn) -> Any:
    """A value nested deeper than any request needs (past what a message may hold)."""
    depth = draw(st.integers(min_value=100, max_value=400))
    shape = draw(st.sampled_from(["array", "object", "both"]))
    value: Any = None
    for level in range(depth):
        array = shape == "array" or (shape == "both" and level % 2 == 0)
        value = [value] if array else {"k": value}
    return value


@functools.cache
def payloads(ids: tuple[int, ...], fields: tuple[str, ...]) -> st.SearchStrategy[Any]:
    """Mostly objects with the fields the handler reads (and others), holding mutated values
    (built once a topic: building a strategy costs more than drawing from it)."""
    values = _values(ids)
    names = st.sampled_from(fields) | st.sampled_from(FIELDS) if fields else st.sampled_from(FIELDS)
    fielded = st.dictionaries(names, values | deep(), max_size=6)
    with_id = st.fixed_dictionaries({"id": st.sampled_from(ids)}).flatmap(
        lambda base: st.dictionaries(names, values, max_size=5).map(lambda more: {**more, **base})
    )
    return st.one_of(fielded, with_id, with_id, values, deep())


def _neutral(topic: str, payload: Any) -> Any:
    """Keep a fuzzed KVS commit off the instance's own keys: it writes below ``fuzz.``."""
    if topic == "kvs.commit" and isinstance(payload, dict) and isinstance(payload.get("ops"), list):
        for op in payload["ops"]:
            if isinstance(op, list) and len(op) > 1 and isinstance(op[1], str):
                op[1] = "fuzz." + op[1]
    return payload


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveInstance]:
    with LiveInstance(tmp_path_factory.mktemp("fuzz") / "state") as live:
        yield live


@pytest.fixture(scope="module")
def jobids(fuzzed: LiveInstance) -> list[int]:
    """A job that ran and one held pending, for requests to name."""
    with Client(fuzzed.uri) as client:
        done = client.submit(jobspec(), waitable=True)
        assert client.wait(done).success
        return [int(done), int(held(client))]


@pytest.fixture(scope="module")
def handle(fuzzed: LiveInstance) -> Iterator[Handle]:
    with Handle(fuzzed.uri) as h:
        yield h


@settings(
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    topic=st.sampled_from(sorted(TOPICS)),
    flags=st.sampled_from([0, 0, 0, FLAG_STREAMING, FLAG_NORESPONSE]),
    data=st.data(),
)
def test_every_request_is_answered(
    handle: Handle, jobids: list[int], topic: str, flags: int, data: st.DataObject
) -> None:
    payload = data.draw(payloads(tuple(jobids), tuple(TOPICS[topic])), label="payload")
    rpc = send_raw(handle, topic, _neutral(topic, payload), flags)
    if rpc is None or rpc.streaming or topic in WAITS:
        # a stream may rightly stay open (a watch); it ends when the connection does
        handle.flush()
        return
    msg = rpc.next_message(ANSWER_TIMEOUT)
    assert msg.matchtag == rpc.matchtag
    assert "internal error" not in (msg.errstr or ""), f"{topic} {payload!r}: {msg.errstr}"


MALFORMED = [
    b"\xff\xff\xff\xff",  # a length over the limit
    struct.pack(">I", 5) + b"nope!",
    struct.pack(">I", 2) + b"[]",
    struct.pack(">I", 4) + b"null",
    *(
        struct.pack(">I", len(body)) + body
        for body in (
            orjson.dumps({"type": 1, "topic": 7, "matchtag": 1}),
            orjson.dumps({"type": 9, "topic": "broker.ping", "matchtag": 1}),
            orjson.dumps({"type": 1, "topic": "broker.ping", "matchtag": -1}),
            orjson.dumps({"type": 1, "topic": "broker.ping", "matchtag": 1, "flags": "x"}),
            b'{"type": 1, "topic": "broker.ping", "matchtag": 123456789012345678901234567890}',
            b'{"type": 1, "topic": "broker.ping", "matchtag": 1, "payload": '
            + b"[" * 2000
            + b"]" * 2000
            + b"}",
        )
    ),
]


@pytest.mark.parametrize("frame", MALFORMED, ids=range(len(MALFORMED)))
def test_malformed_frames_are_refused(fuzzed: LiveInstance, frame: bytes) -> None:
    """Bytes that are not a message: one error (matchtag 0) naming the problem, then EOF."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(ANSWER_TIMEOUT)
        sock.connect(socket_path(fuzzed.uri))
        sock.sendall(frame)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    (size,) = struct.unpack_from(">I", data)
    answer = orjson.loads(data[4 : 4 + size])
    assert answer["errnum"] == errno.EPROTO
    assert answer["errstr"].startswith("protocol error: message")


def test_instance_still_serves(fuzzed: LiveInstance, handle: Handle) -> None:
    """Run last in this module: the fuzzed instance answers, runs a job and logged no bug."""
    handle.close()  # ends the fuzzer's streams and any service it offered
    with Client(fuzzed.uri) as client:
        assert client.handle.call("broker.ping", {"x": 1}, timeout=ANSWER_TIMEOUT)["x"] == 1
        client.handle.call("job-manager.queue-enable", {"enable": True})
        client.handle.call("job-manager.queue-start", {"start": True})
        jobid = client.submit(jobspec())
        assert client.wait(jobid).success
    log = Path(fuzzed.log).read_text()
    assert "Traceback" not in log
    assert "internal error" not in log
    assert fuzzed.proc.poll() is None
