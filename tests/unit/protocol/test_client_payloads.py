"""What ``pflux.Client`` sends to job-list, job-info, the KVS and the broker decodes as the
type the service decodes it with: both ends share pflux.protocol's definition (the client
builds dicts, since the CLI does not load msgspec)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pflux.api import Client
from pflux.protocol.broker import DmesgRequest
from pflux.protocol.decode import decode
from pflux.protocol.info import LookupRequest
from pflux.protocol.joblist import ListIdRequest, ListRequest
from pflux.protocol.kvs import (
    CommitRequest,
    GetRequest,
    LsRequest,
    WatchCancelRequest,
    WatchRequest,
)

TYPES: dict[str, type] = {
    "job-list.list": ListRequest,
    "job-list.list-id": ListIdRequest,
    "job-info.lookup": LookupRequest,
    "kvs.get": GetRequest,
    "kvs.commit": CommitRequest,
    "kvs.ls": LsRequest,
    "kvs.watch": WatchRequest,
    "kvs.watch-cancel": WatchCancelRequest,
    "log.dmesg": DmesgRequest,
}
REPLIES: dict[str, dict[str, Any]] = {
    "job-list.list": {"jobs": []},
    "job-list.list-id": {"job": {"id": 5}},
    "job-info.lookup": {"id": 5, "R": "{}"},
    "kvs.get": {"value": ""},
    "kvs.commit": {},
    "kvs.ls": {"entries": {}},
}


class _Sent:
    """A request in flight: what streaming callers read of it."""

    matchtag = 1

    def then(self, callback: Callable[..., None]) -> None:
        pass

    def __iter__(self) -> Any:
        return iter(())


class _Recorder:
    """A handle that keeps each request it is given and answers with a canned reply."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []

    def call(self, topic: str, payload: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self.sent.append((topic, payload))
        return REPLIES[topic]

    def rpc(self, topic: str, payload: Any, *args: Any, **kwargs: Any) -> _Sent:
        self.sent.append((topic, payload))
        return _Sent()


CALLS: list[tuple[str, Callable[[Client], object], object]] = [
    (
        "list_jobs",
        lambda c: c.list_jobs(states=8, userid=-1, since=2.0, name="x", queues=["a"]),
        ListRequest(states=8, userid=-1, since=2.0, name="x", queue=["a"]),
    ),
    ("job_info", lambda c: c.job_info(5, ["state"]), ListIdRequest(5, ["state"])),
    ("lookup", lambda c: c.lookup(5, ["R"]), LookupRequest(5, ["R"])),
    ("kvs_get", lambda c: c.kvs_get("a", namespace="n"), GetRequest("a", "n")),
    (
        "kvs_put",
        lambda c: c.kvs_put([("a", "1")], append=True),
        CommitRequest([["append", "a", "1"]]),
    ),
    ("kvs_ls", lambda c: c.kvs_ls("d"), LsRequest("d")),
    (
        "kvs_watch",
        lambda c: c.kvs_watch(["k"], append=True, namespace="n"),
        WatchRequest("k", "n", append=True),
    ),
    ("kvs_watch stop", lambda c: c.kvs_watch(["k"]).stop(0), WatchCancelRequest(1)),
    ("dmesg", lambda c: list(c.dmesg(follow=True)), DmesgRequest(follow=True)),
]


@pytest.mark.parametrize(
    ("use", "expected"), [call[1:] for call in CALLS], ids=[call[0] for call in CALLS]
)
def test_the_client_sends_what_the_service_decodes(
    use: Callable[[Client], object], expected: object
) -> None:
    client = Client.__new__(Client)
    recorder = _Recorder()
    client.handle = recorder  # type: ignore[assignment]
    use(client)
    topic, payload = recorder.sent[-1]
    assert decode(topic, payload, TYPES[topic]) == expected
