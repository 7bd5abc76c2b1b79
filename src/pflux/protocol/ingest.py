"""job-ingest's one request, ``job-ingest.submit``, as a type.

The jobspec is checked to be an object here and read by RFC 25's validator
(``pflux.spec.jobspec``), whose faults are EINVAL ``invalid jobspec: ...``.
A signed request carries J (RFC 15, ``_pfluxcore.sign``) instead of, or as
well as, the jobspec; job-ingest unwraps it and checks that it names the requester.
What the type cannot state stays in the handler: unknown flag bits (EINVAL),
an urgency above the default or the waitable flag from a guest (EPERM,
EINVAL as flux-core words it).
"""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import UNSET, Meta, Struct, UnsetType

from pflux.protocol.decode import invalid
from pflux.spec.states import URGENCY_DEFAULT, URGENCY_MAX, URGENCY_MIN

Urgency = Annotated[int, Meta(ge=URGENCY_MIN, le=URGENCY_MAX)]
Flags = Annotated[int, Meta(ge=0)]


class SubmitRequest(Struct, frozen=True):
    """``job-ingest.submit``: a jobspec (an object) or J, the jobspec signed, or both (then
    J's payload must be that jobspec), its urgency and RFC 21's flag bits."""

    jobspec: Any = UNSET
    urgency: Urgency = URGENCY_DEFAULT
    flags: Flags = 0
    J: str | UnsetType = UNSET

    def __post_init__(self) -> None:
        if self.jobspec is UNSET:
            if self.J is UNSET:
                raise ValueError("Object missing required field `jobspec`")  # as msgspec words it
        elif type(self.jobspec) is not dict:
            raise invalid("jobspec", "expected `object`")


REQUESTS: dict[str, type[Struct]] = {"job-ingest.submit": SubmitRequest}
