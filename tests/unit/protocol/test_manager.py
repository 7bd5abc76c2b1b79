"""job-ingest's and the job manager's requests (pflux.protocol.ingest, .manager): the
rules each type states, a table naming every method's type, and the client's payloads."""

from __future__ import annotations

import asyncio
import errno
import inspect
import os
import re
from pathlib import Path
from typing import Any, ClassVar

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from msgspec import UNSET

from pflux.api import AsyncClient, Client
from pflux.errors import RPCError
from pflux.ingest.service import IngestService
from pflux.manager.service import JobManager
from pflux.protocol import ingest, manager
from pflux.protocol.decode import decode
from pflux.protocol.ingest import SubmitRequest
from pflux.protocol.manager import (
    HISTORY_MAX,
    ExecHelloRequest,
    JobKillRequest,
    JournalHistoryRequest,
    MemoRequest,
    RaiseAllRequest,
    RaiseRequest,
    SetFlagsRequest,
    SubmitBatch,
    UpdateRequest,
    UrgencyRequest,
)
from pflux.protocol.message import ROLE_OWNER
from pflux.protocol.sched import ReadyRequest
from support.protocol_payloads import INGEST, MANAGER

P, V = errno.EPROTO, errno.EINVAL  # a wrong shape, a value the type rules out
REQUESTS = {**ingest.REQUESTS, **manager.REQUESTS, "job-manager.sched-ready": ReadyRequest}
VALID = {**INGEST, **MANAGER}


def refused(topic: str, payload: Any, kind: type, errnum: int = errno.EINVAL) -> str:
    """The error text; a wrong shape is EPROTO, a value its type rules out EINVAL."""
    with pytest.raises(RPCError) as info:
        decode(topic, payload, kind)
    assert info.value.errnum == errnum
    return info.value.errstr


@pytest.mark.parametrize(
    ("kind", "changes", "errnum", "message"),
    [
        (SubmitRequest, {"jobspec": []}, P, "jobspec: expected object"),
        (SubmitRequest, {"urgency": 32}, V, "urgency: expected int <= 31"),
        (SubmitRequest, {"urgency": -1}, V, "urgency: expected int >= 0"),
        (SubmitRequest, {"flags": -1}, V, "flags: expected int >= 0"),
        (SubmitRequest, {"flags": True}, P, "flags: expected int, got bool"),
        (RaiseRequest, {"type": ""}, V, "type: expected a word (non-empty, no spaces)"),
        (RaiseRequest, {"type": "a b"}, V, "type: expected a word (non-empty, no spaces)"),
        (RaiseRequest, {"severity": 8}, V, "severity: expected int <= 7"),
        (RaiseRequest, {"id": 2**64}, V, f"id: expected int <= {2**64 - 1}"),
        (RaiseAllRequest, {"userid": -2}, V, "userid: expected int >= -1"),
        (RaiseAllRequest, {"states": "RUN"}, P, "states: expected int, got str"),
        (RaiseAllRequest, {"dry_run": 1}, P, "dry_run: expected bool, got int"),
        (JobKillRequest, {"signum": 0}, V, "signum: expected int >= 1"),
        (JobKillRequest, {"signum": 65}, V, "signum: expected int <= 64"),
        (UrgencyRequest, {"urgency": "hold"}, P, "urgency: expected int, got str"),
        (MemoRequest, {"memo": {}}, V, "memo: expected object of length >= 1"),
        (MemoRequest, {"memo": "x"}, P, "memo: expected object"),
        (MemoRequest, {"volatile": "yes"}, P, "volatile: expected bool, got str"),
        (SetFlagsRequest, {"flags": []}, V, "flags: expected array of length >= 1"),
        (SetFlagsRequest, {"flags": ["urgent"]}, V, "flags[0]: invalid enum value 'urgent'"),
        (UpdateRequest, {"updates": {}}, V, "updates: expected object of length >= 1"),
        (UpdateRequest, {"updates": None}, P, "updates: expected object"),
        (JournalHistoryRequest, {"ids": [1, 2**64]}, V, f"ids[1]: expected int <= {2**64 - 1}"),
        (
            JournalHistoryRequest,
            {"ids": list(range(HISTORY_MAX + 1))},
            V,
            f"ids: expected array of length <= {HISTORY_MAX}",
        ),
        (
            ExecHelloRequest,
            {"service": "a.b"},
            V,
            "service: expected a service name (non-empty, no '.')",
        ),
        (SubmitBatch, {"jobs": [{"id": 1, "jobspec": "{}"}]}, P, "jobs[0].event: required"),
        (
            SubmitBatch,
            {"jobs": [{"id": 1, "jobspec": 5, "event": {}}]},
            P,
            "jobs[0].jobspec: expected object",
        ),
        (
            SubmitBatch,
            {"jobs": [{"id": 1, "jobspec": "{}", "event": 1}]},
            P,
            "jobs[0].event: expected object",
        ),
    ],
)
def test_each_rule_is_named(kind: type, changes: dict[str, Any], errnum: int, message: str) -> None:
    payload = {**VALID[kind], **changes}
    assert refused("some.topic", payload, kind, errnum) == f"some.topic: {message}"


def test_defaults_are_what_the_handlers_assumed() -> None:
    assert decode("t", {"jobspec": {}}, SubmitRequest) == SubmitRequest({}, 16, 0)
    assert decode("t", {"id": 1}, RaiseRequest) == RaiseRequest(1, "cancel", 0, "")
    assert decode("t", {"id": 1}, JobKillRequest).signum == 15
    everyone = decode("t", {}, RaiseAllRequest)
    assert (everyone.userid, everyone.states, everyone.dry_run) == (UNSET, 0x3F, False)


@given(st.integers(min_value=2**64, max_value=2**70))
def test_no_job_id_past_64_bits(jobid: int) -> None:
    for kind in (RaiseRequest, UrgencyRequest, MemoRequest, UpdateRequest, JobKillRequest):
        assert refused("t", {**VALID[kind], "id": jobid}, kind).startswith("t: id: ")


@given(st.text())
def test_a_raise_type_is_one_word(etype: str) -> None:
    payload = {"id": 1, "type": etype}
    if etype and not any(c.isspace() for c in etype):
        assert decode("t", payload, RaiseRequest).type == etype
    else:
        assert refused("t", payload, RaiseRequest).startswith("t: type: ")


def test_every_method_of_ingest_and_the_manager_has_a_type() -> None:
    served = {
        f"{service.name}.{fn.__pflux_method__}"
        for service in (IngestService, JobManager)
        for _, fn in inspect.getmembers(service)
        if hasattr(fn, "__pflux_method__")
    }
    assert served == set(REQUESTS)


class Recorder:
    """A handle that records what a Client sends and answers as the services would."""

    REPLIES: ClassVar[dict[str, Any]] = {
        "broker.ping": {"userid": os.getuid(), "rolemask": ROLE_OWNER, "rank": 0},
        "job-ingest.submit": {"id": 1},
        "job-manager.result": {"id": 1, "success": True, "errstr": ""},
        "job-manager.wait": {"id": 1, "success": True, "errstr": ""},
        "job-manager.urgency": {"old_urgency": 16},
        "job-manager.raiseall": {"count": 0},
        "job-manager.history.get": {"jobs": []},
        "job-manager.alloc-query": {"queue_length": 0, "alloc_pending": 0, "running": 0},
        "job-manager.queue-status": {"enable": True, "start": True},
        "job-manager.idle": {"pending": 0},
        "job-manager.purge": {"count": 0, "inactive": 0},
        "job-manager.purge-id": {"count": 1, "inactive": 0},
    }

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []

    def call(self, topic: str, payload: Any, *args: Any, **kwargs: Any) -> Any:
        self.sent.append((topic, payload))
        return self.REPLIES.get(topic, {})

    def rpc(self, topic: str, payload: Any, *args: Any, **kwargs: Any) -> Any:
        reply = self.call(topic, payload)
        return type("Answered", (), {"get": lambda self, *a: reply})()


class AsyncRecorder(Recorder):
    """As Recorder, for an AsyncClient."""

    async def call(self, topic: str, payload: Any, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        return Recorder.call(self, topic, payload)


def test_what_the_client_sends_is_what_the_services_decode() -> None:
    handle = Recorder()
    client = Client.__new__(Client)
    client._cached = {}
    client.handle = handle  # type: ignore[assignment]
    client.submit({"version": 1}, urgency="expedite", waitable=True, debug=True)
    client.wait(1)
    client.reap()
    client.reap(1)
    client.raise_exception(1, "test", 3, "why")
    client.raise_many([1, 2])
    client.kill(1, 10)
    client.kill_many([1])
    client.urgency(1, "hold")
    client.memo(1, {"k": "v"}, volatile=True)
    client.raise_all(userid=5, states=16, dry_run=True)
    client.raise_all()
    client.update(1, {"attributes.system.duration": 60})
    client.last_jobs("[:3]")
    client.alloc_query()
    client.queue_status()
    client.queue_enable(False, "maintenance")
    client.queue_start(False, "later", checkpoint=False)
    client.drain()
    client.idle()
    client.purge(age_limit=3600, num_limit=10, batch=100, force=True)
    client.purge()
    client.purge_id(1, force=True)
    sent = [(topic, payload) for topic, payload in handle.sent if topic != "broker.ping"]
    assert len({topic for topic, _ in sent}) == 18
    for topic, payload in sent:
        decode(topic, payload, REQUESTS[topic])


DOC = Path(__file__).parents[3] / "docs" / "interfaces.md"


@pytest.mark.parametrize("topic", sorted(REQUESTS))
def test_interfaces_md_names_every_field_of_the_request(topic: str) -> None:
    rows = re.findall(rf"^\| `{re.escape(topic)}`[^|]*\| ([^|]*) \|", DOC.read_text(), re.M)
    assert len(rows) == 1, f"{topic}: no one row in {DOC.name}"
    named = set(re.findall(r"[A-Za-z_]+", rows[0]))
    fields = {field.name for field in msgspec.structs.fields(REQUESTS[topic])}
    assert fields <= named, f"{topic}: {DOC.name} does not name {sorted(fields - named)}"


def test_what_the_async_client_sends_is_what_the_services_decode() -> None:
    handle = AsyncRecorder()
    client = AsyncClient()
    client._handle = handle  # type: ignore[assignment]

    async def calls() -> None:
        await client.submit({"version": 1}, urgency=3, waitable=True)
        await client.submit_many([{"version": 1}], debug=True)
        await client.wait(1)
        await client.reap()
        await client.raise_exception(1, "test", 3, "why")
        await client.raise_many([1, 2])
        await client.kill(1, 10)
        await client.kill_many([1])
        await client.urgency(1, "expedite")
        await client.memo(1, {"k": "v"})
        await client.raise_all(userid=5, states=16, dry_run=True)
        await client.update(1, {"attributes.system.duration": 0})
        await client.last_jobs()
        await client.alloc_query()
        await client.queue_status()
        await client.queue_enable(True)
        await client.queue_start(True, checkpoint=False)
        await client.drain()
        await client.idle()
        await client.purge(num_limit=0)
        await client.purge_id(1)

    asyncio.run(calls())
    sent = [(topic, payload) for topic, payload in handle.sent if topic != "broker.ping"]
    assert len({topic for topic, _ in sent}) == 18
    for topic, payload in sent:
        decode(topic, payload, REQUESTS[topic])
