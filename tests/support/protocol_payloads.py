"""A valid payload of every typed message of pflux.protocol, for its tests."""

from __future__ import annotations

from typing import Any

from pflux.protocol.broker import DmesgRequest, LogEntry, ServiceAddRequest
from pflux.protocol.exec import (
    ExceptionData,
    ExceptionRequest,
    ExecExpirationRequest,
    FinishData,
    KillRequest,
    OverrideRequest,
    ReleaseData,
    StartRequest,
    StartResponse,
    StdinRequest,
    WinsizeRequest,
)
from pflux.protocol.info import EventlogWatchRequest, LookupRequest
from pflux.protocol.ingest import SubmitRequest
from pflux.protocol.joblist import ListIdRequest, ListRequest
from pflux.protocol.kvs import (
    CommitRequest,
    GetRequest,
    LsRequest,
    NamespaceCreateRequest,
    NamespaceRemoveRequest,
    WalkRequest,
    WatchCancelRequest,
    WatchRequest,
)
from pflux.protocol.manager import (
    Empty,
    ExecHelloRequest,
    HistoryRequest,
    JobIdRequest,
    JobKillRequest,
    JournalHistoryRequest,
    JournalRequest,
    MemoRequest,
    QueueEnableRequest,
    QueueStartRequest,
    RaiseAllRequest,
    RaiseRequest,
    SetFlagsRequest,
    SubmitBatch,
    UpdateRequest,
    UrgencyRequest,
)
from pflux.protocol.sched import (
    AllocReply,
    AllocRequest,
    CancelRequest,
    DrainRequest,
    ExpirationRequest,
    FreeRequest,
    ReadyRequest,
)

JOBSPEC = {"version": 1}
SCHED: dict[type, dict[str, Any]] = {
    AllocRequest: {"id": 5, "priority": 16, "userid": 0, "t_submit": 1.5, "jobspec": JOBSPEC},
    AllocReply: {"id": 5, "type": 0, "R": {"version": 1}, "annotations": {}, "note": ""},
    CancelRequest: {"id": 5},
    FreeRequest: {"id": 5, "R": {"version": 1}, "final": False},
    ExpirationRequest: {"id": 5, "expiration": 10.0},
    ReadyRequest: {"mode": "limited", "limit": 2},
    DrainRequest: {"targets": "0-1", "reason": "fan", "mode": "update"},
}
OBJECT = {"version": 1}
EXEC: dict[type, dict[str, Any]] = {
    StartRequest: {"id": 5, "userid": 0, "jobspec": OBJECT, "R": OBJECT, "reattach": False},
    KillRequest: {"id": 5, "signum": 15},
    ExecExpirationRequest: {"id": 5, "expiration": 10.0},
    ExceptionRequest: {"id": 5, "type": "cancel", "severity": 0, "note": "why"},
    StartResponse: {"id": 5, "type": "release", "data": {"ranks": "all", "final": True}},
    ExceptionData: {"type": "exec", "severity": 0, "note": "why"},
    FinishData: {"status": 256},
    ReleaseData: {"ranks": "0-1", "final": False},
    WinsizeRequest: {"id": 5, "rows": 24, "cols": 80},
    StdinRequest: {
        "id": 5,
        "stream": "stdin",
        "rank": "0-1",
        "data": "aGk=",
        "encoding": "base64",
        "eof": True,
    },
    OverrideRequest: {"jobid": 5, "event": "finish", "status": 9},
}
LIST: dict[type, dict[str, Any]] = {
    ListRequest: {
        "attrs": ["state", "name"],
        "max_entries": 10,
        "userid": 0,
        "states": 8,
        "results": 1,
        "since": 1.5,
        "name": "sleep",
        "queue": "batch",
    },
    ListIdRequest: {"id": 5, "attrs": ["all"], "state": 8},
    LookupRequest: {"id": 5, "keys": ["jobspec", "R"]},
    EventlogWatchRequest: {"id": 5, "path": "guest.output"},
}
KVS: dict[type, dict[str, Any]] = {
    CommitRequest: {"ops": [["put", "a", "1"]], "namespace": "job-5"},
    GetRequest: {"key": "a.b", "namespace": "job-5"},
    LsRequest: {"key": "a", "namespace": "job-5"},
    WalkRequest: {"key": "job", "namespace": "job-5", "suffix": "eventlog", "after": "job.x"},
    WatchRequest: {"key": "a", "namespace": "job-5", "append": True, "waitcreate": False},
    WatchCancelRequest: {"matchtag": 3},
    NamespaceCreateRequest: {"name": "job-5", "owner": 1000, "prefix": "job.0000.0005.guest"},
    NamespaceRemoveRequest: {"name": "job-5"},
}
BROKER: dict[type, dict[str, Any]] = {
    ServiceAddRequest: {"service": "job-exec"},
    DmesgRequest: {"follow": True, "nobacklog": False},
    LogEntry: {"timestamp": 1.5, "name": "job-list", "severity": 6, "rank": 0, "message": "hi"},
}
INGEST: dict[type, dict[str, Any]] = {
    SubmitRequest: {"jobspec": JOBSPEC, "urgency": 16, "flags": 2},
}
SUBMIT_EVENT = {"timestamp": 1.5, "name": "submit", "context": {"urgency": 16, "userid": 0}}
MANAGER: dict[type, dict[str, Any]] = {
    Empty: {},
    JobIdRequest: {"id": 5},
    SubmitBatch: {"jobs": [{"id": 5, "jobspec": JOBSPEC, "event": SUBMIT_EVENT}]},
    RaiseRequest: {"id": 5, "type": "cancel", "severity": 0, "note": "why"},
    RaiseAllRequest: {
        "type": "cancel",
        "severity": 0,
        "note": "",
        "userid": -1,
        "states": 16,
        "dry_run": True,
    },
    JobKillRequest: {"id": 5, "signum": 10},
    UrgencyRequest: {"id": 5, "urgency": 31},
    MemoRequest: {"id": 5, "memo": {"note": "x"}, "volatile": True},
    SetFlagsRequest: {"id": 5, "flags": ["debug", "waitable"]},
    UpdateRequest: {"id": 5, "updates": {"attributes.system.duration": 60}},
    HistoryRequest: {"slice": "[:1]"},
    QueueEnableRequest: {"enable": False, "reason": "maintenance"},
    QueueStartRequest: {"start": False, "reason": "shutdown", "nocheckpoint": True},
    JournalRequest: {"full": True, "digest": True, "held": [3, 2**63 - 1]},
    JournalHistoryRequest: {"ids": [5, 2**64 - 1]},
    ExecHelloRequest: {"service": "job-exec"},
}
