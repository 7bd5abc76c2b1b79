"""RFC 32's start-request responses, as one vocabulary shared by both ends."""

from __future__ import annotations

import enum
from typing import Any


class ExecResponse(enum.StrEnum):
    """The four response types of ``<service>.start``."""

    START = "start"  # the job shells have started; data {}
    RELEASE = "release"  # data {ranks: idset or "all", final: bool}; the final one is last
    EXCEPTION = "exception"  # data {severity, type, note}
    FINISH = "finish"  # data {status}: the largest job shell wait status


def response(jobid: int, kind: ExecResponse, data: dict[str, Any] | None = None) -> dict[str, Any]:
    """The payload of one start response."""
    return {"id": jobid, "type": kind.value, "data": data or {}}
