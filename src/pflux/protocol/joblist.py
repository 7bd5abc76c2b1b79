"""job-list's requests (``job-list.list``, ``job-list.list-id``) and their answers, as types.

The CLI sends them as dicts (``pflux.api``): it does not load msgspec.  The
attribute names in ``attrs`` are job-list's check (``joblist.attributes.select``),
as are the states and results a mask may hold (``states``, ``results``, ``state``:
the service passes the bits it knows to ``check_mask``, which words the fault as
``decode`` does).
"""

from __future__ import annotations

import errno
from typing import Annotated, Any

from msgspec import Meta, Struct, field

from pflux.errors import RPCError
from pflux.protocol.decode import invalid
from pflux.protocol.sched import MAX_JOBID, JobId
from pflux.spec.resultcodes import USERID_ANY

MAX_ENTRIES = 2**31 - 1

Mask = Annotated[int, Meta(ge=0)]


def check_mask(topic: str, field: str, value: int, valid: int) -> None:
    """A mask of the bits ``valid``: another bit is a value its type rules out (EINVAL), as
    ``decode`` maps one."""
    if value & ~valid:
        raise RPCError(errno.EINVAL, f"{topic}: {field}: expected a mask of the bits {valid:#x}")


class ListRequest(Struct, frozen=True):
    """``job-list.list``: jobs in flux-core's order, filtered; 0 ``max_entries``: all."""

    attrs: list[str] = field(default_factory=lambda: ["all"])
    max_entries: Annotated[int, Meta(ge=0, le=MAX_ENTRIES)] = 0
    userid: Annotated[int, Meta(ge=-1, le=USERID_ANY)] = USERID_ANY
    states: Mask = 0
    results: Mask = 0
    since: Annotated[float, Meta(ge=0)] = 0.0
    name: str | None = None
    queue: str | list[str] | None = None


class ListIdRequest(Struct, frozen=True):
    """``job-list.list-id``: one job, once it is past NEW (and in ``state``, if given)."""

    id: JobId
    attrs: list[str] = field(default_factory=lambda: ["all"])
    state: Mask = 0

    def __post_init__(self) -> None:
        if self.id > MAX_JOBID:
            raise invalid("id", f"expected `int` <= {MAX_JOBID}")


class ListReply(Struct, frozen=True):
    """``job-list.list``'s answer: each job as an object of the attributes asked for."""

    jobs: list[dict[str, Any]]


class ListIdReply(Struct, frozen=True):
    """``job-list.list-id``'s answer: the job as an object of the attributes asked for."""

    job: dict[str, Any]
