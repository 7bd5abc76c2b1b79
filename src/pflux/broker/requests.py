"""Checking request arguments several services share, with errors that name the field.

A job id and an urgency mean the same to job-ingest, the job manager and
job-info, so each is checked once, here, with one error for each fault.
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Any

from pflux.broker.message import RPCError
from pflux.spec.states import URGENCY_DEFAULT, URGENCY_MAX, URGENCY_MIN

if TYPE_CHECKING:
    from pflux.broker.router import Request

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
