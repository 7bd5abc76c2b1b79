"""RFC 27's alloc response types, as one vocabulary shared by both ends."""

from __future__ import annotations

import enum


class AllocResponse(enum.IntEnum):
    """The ``type`` of a ``sched.alloc`` response."""

    SUCCESS = 0  # R is committed to the KVS (and sent along); optional annotations
    ANNOTATE = 1  # annotations only; more responses follow
    DENY = 2  # the request can never be satisfied; ``note`` says why
    CANCEL = 3  # answered a sched.cancel
