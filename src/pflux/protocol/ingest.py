"""job-ingest's one request, ``job-ingest.submit``, as a type.

The jobspec is checked to be an object here and read by RFC 25's validator
(``pflux.spec.jobspec``), whose faults are EINVAL ``invalid jobspec: ...``.
What the type cannot state stays in the handler: unknown flag bits (EINVAL),
an urgency above the default or the waitable flag from a guest (EPERM,
EINVAL as flux-core words it).
"""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta, Struct

from pflux.protocol.decode import invalid
from pflux.spec.states import URGENCY_DEFAULT, URGENCY_MAX, URGENCY_MIN

Urgency = Annotated[int, Meta(ge=URGENCY_MIN, le=URGENCY_MAX)]
Flags = Annotated[int, Meta(ge=0)]


class SubmitRequest(Struct, frozen=True):
    """``job-ingest.submit``: a jobspec (an object), its urgency and RFC 21's flag bits."""

    jobspec: Any
    urgency: Urgency = URGENCY_DEFAULT
    flags: Flags = 0

    def __post_init__(self) -> None:
        if type(self.jobspec) is not dict:
            raise invalid("jobspec", "expected `object`")


REQUESTS: dict[str, type[Struct]] = {"job-ingest.submit": SubmitRequest}
