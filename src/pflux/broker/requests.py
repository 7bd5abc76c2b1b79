"""Request checks several services share that a payload's type cannot state.

A malformed payload is refused by its type in ``pflux.protocol`` (EPROTO,
naming the field); what is left here depends on who asks: an urgency above
the default is the instance owner's (job-ingest and the job manager).
``payload_of`` and ``job_id_arg`` serve job-info's requests until they are
typed too.
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Any

from pflux.broker.message import RPCError
from pflux.spec.states import URGENCY_DEFAULT

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


def check_urgency(urgency: int, *, owner: bool) -> int:
    """``urgency`` (in range, as its type checked) if the requester may set it: guests up
    to the default, the owner any."""
    if urgency > GUEST_URGENCY_MAX and not owner:
        raise RPCError(
            errno.EPERM, f"urgency: only the instance owner may set more than {GUEST_URGENCY_MAX}"
        )
    return urgency
