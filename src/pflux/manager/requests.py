"""Checking the arguments of job-manager requests, with errors that name the field."""

from __future__ import annotations

import errno
from typing import Any

from pflux.broker.message import RPCError
from pflux.broker.router import Request
from pflux.manager.states import SEVERITY_MAX, URGENCY_DEFAULT, URGENCY_MAX, URGENCY_MIN

GUEST_URGENCY_MAX = URGENCY_DEFAULT


def payload_of(req: Request) -> dict[str, Any]:
    """The request's payload, which must be a JSON object."""
    if not isinstance(req.payload, dict):
        raise RPCError(errno.EPROTO, f"{req.topic}: payload must be a JSON object")
    return req.payload


def job_id_arg(payload: dict[str, Any]) -> int:
    jobid = payload.get("id")
    if type(jobid) is not int or not 0 <= jobid < 2**64:
        raise RPCError(errno.EPROTO, f"id: must be a job id (an unsigned integer), got {jobid!r}")
    return jobid


def exception_args(payload: dict[str, Any]) -> tuple[str, int, str]:
    """(type, severity, note) of an exception request."""
    etype = payload.get("type", "cancel")
    severity = payload.get("severity", 0)
    note = payload.get("note", "")
    if not isinstance(etype, str) or not etype or any(c.isspace() for c in etype):
        raise RPCError(errno.EINVAL, f"type: must be a non-empty word, got {etype!r}")
    if type(severity) is not int or not 0 <= severity <= SEVERITY_MAX:
        raise RPCError(
            errno.EINVAL, f"severity: must be an integer 0-{SEVERITY_MAX}, got {severity!r}"
        )
    if not isinstance(note, str):
        raise RPCError(errno.EINVAL, f"note: must be a string, got {note!r}")
    return etype, severity, note


def check_urgency(urgency: Any, *, owner: bool) -> int:
    """An urgency the requester may set (guests: 0-16, the owner: 0-31)."""
    if type(urgency) is not int or not URGENCY_MIN <= urgency <= URGENCY_MAX:
        raise RPCError(
            errno.EINVAL,
            f"urgency: must be an integer {URGENCY_MIN}-{URGENCY_MAX}, got {urgency!r}",
        )
    if urgency > GUEST_URGENCY_MAX and not owner:
        raise RPCError(
            errno.EPERM, f"urgency: only the instance owner may set more than {GUEST_URGENCY_MAX}"
        )
    return urgency
