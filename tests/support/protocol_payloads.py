"""A valid payload of every typed message of pflux.protocol, for its tests."""

from __future__ import annotations

from typing import Any

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
    WinsizeRequest,
)
from pflux.protocol.sched import (
    AllocReply,
    AllocRequest,
    CancelRequest,
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
    OverrideRequest: {"jobid": 5, "event": "finish", "status": 9},
}
