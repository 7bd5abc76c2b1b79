"""Checking the arguments of job-manager requests, with errors that name the field.

The arguments other services share (a job id, an urgency) are checked in
``pflux.broker.requests``.
"""

from __future__ import annotations

import errno
from typing import Any

from pflux.broker.message import RPCError
from pflux.spec.states import SEVERITY_MAX


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
