"""The record of an inactive job: what the job manager keeps of it, stored beside its eventlog.

An inactive job never changes again, so a restart need not replay its
eventlog: the job manager stores, in the same KVS commit as the job's
``clean`` event, the little it keeps of the job (``Ended``, and whether the
job is waitable), under ``job.<id>.data.job-manager.inactive`` (RFC 16's
place for a service's data about a job). The commit makes the record and the
eventlog agree after any crash: both are there or neither is; a purge unlinks
the job's directory, the record with it. A restart reads every record in one
walk (``load``) and replays only the eventlogs of jobs at or after the
checkpoint's ``replay_from`` that have none (``checkpoint.py``).

The value is a JSON array, its first element the version:
``[1, userid, t_inactive, flags, nevents, allocated, started, finish_status,
exception_type, exception_note, ended_by_exception]`` (``finish_status`` and
the exception's parts null when absent). A record that does not decode is
logged, and the job's eventlog replayed instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import orjson

from pflux.manager.job import Ended
from pflux.protocol.kvs import WalkRequest
from pflux.spec.kvs_keys import job_key
from pflux.spec.states import FLAG_WAITABLE

if TYPE_CHECKING:
    from pflux.broker.router import Broker
    from pflux.spec.record import JobRecord

PATH: Final = ("data", "job-manager", "inactive")
LEAF: Final = PATH[-1]
VERSION: Final = 1
_FIELDS: Final = 11


class RecordError(ValueError):
    """A stored record that cannot be read back (the eventlog is replayed instead)."""


# a record's key, as ``job_key`` spells it (checked whole: a guest's keys, below
# ``job.<id>.guest``, cannot take this shape)
_KEY = re.compile(
    r"job\.([0-9a-f]{4})\.([0-9a-f]{4})\.([0-9a-f]{4})\.([0-9a-f]{4})\.data\.job-manager\.inactive"
)


def key(jobid: int) -> str:
    return job_key(jobid, *PATH)


def jobid_of(k: str) -> int | None:
    """The job id of record key ``k``; None if ``k`` is not one."""
    m = _KEY.fullmatch(k)
    return None if m is None else int(m[1] + m[2] + m[3] + m[4], 16)


def encode(job: JobRecord | Ended, flags: int) -> str:
    """The record of ``job`` (an inactive one), whose submit flags were ``flags``."""
    exc = job.exception
    nevents = job.nevents if isinstance(job, Ended) else len(job.history)
    return orjson.dumps(
        [
            VERSION,
            job.userid,
            job.t_inactive,
            flags,
            nevents,
            job.allocated,
            job.started,
            job.finish_status,
            None if exc is None else exc[0],
            None if exc is None else exc[1],
            job.ended_by_exception,
        ]
    ).decode()


def decode(jobid: int, text: str) -> tuple[Ended, bool]:
    """The inactive job ``jobid`` a record holds, and whether it is waitable; RecordError
    says what is wrong."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise RecordError(f"not JSON: {exc}") from None
    if type(value) is not list or len(value) != _FIELDS or value[0] != VERSION:
        raise RecordError(f"not a version {VERSION} record of {_FIELDS} fields")
    _, userid, t_inactive, flags, nevents, allocated, started, status, etype, note, by_exc = value
    if type(userid) is not int or type(flags) is not int or type(nevents) is not int:
        raise RecordError("userid, flags and nevents must be integers")
    if type(t_inactive) not in (int, float):
        raise RecordError("t_inactive must be a number")
    if type(allocated) is not bool or type(started) is not bool or type(by_exc) is not bool:
        raise RecordError("allocated, started and ended_by_exception must be booleans")
    if status is not None and type(status) is not int:
        raise RecordError("finish_status must be an integer or null")
    if etype is None and note is None:
        exception = None
    elif type(etype) is str and type(note) is str:
        exception = (etype, note)
    else:
        raise RecordError("the exception's type and note must both be strings, or null")
    job = Ended(
        id=jobid,
        userid=userid,
        t_inactive=float(t_inactive),
        nevents=nevents,
        allocated=allocated,
        started=started,
        finish_status=status,
        exception=exception,
        ended_by_exception=by_exc,
    )
    return job, bool(flags & FLAG_WAITABLE)


def put(job: JobRecord | Ended, flags: int) -> list[Any]:
    """The KVS operation that stores the record of ``job``, inactive."""
    return ["put", key(job.id), encode(job, flags)]


async def load(
    broker: Broker, error: Callable[[str], None]
) -> tuple[dict[int, Ended], set[int], list[int]]:
    """Every record in the KVS, in job id order: the jobs, the waitable ones among them,
    and the ids whose record does not decode (``error`` says why)."""
    ended: dict[int, Ended] = {}
    waitable: set[int] = set()
    bad: list[int] = []
    async for payload in broker.stream("kvs.walk", WalkRequest("job", suffix=LEAF)):
        read_page(payload.get("entries", []), ended, waitable, bad, error)
    return ended, waitable, bad


def read_page(
    entries: list[list[str]],
    ended: dict[int, Ended],
    waitable: set[int],
    bad: list[int],
    error: Callable[[str], None],
) -> None:
    """One ``kvs.walk`` page of records into ``ended``, ``waitable`` and ``bad``.

    ``decode``'s checks, with the usual record's inlined: a restart reads a
    million of them, and a call and a keyword argument each cost about what the
    checks do."""
    match, loads, new = _KEY.fullmatch, orjson.loads, Ended
    for k, text in entries:
        m = match(k)
        if m is None:
            continue
        jobid = int(m[1] + m[2] + m[3] + m[4], 16)
        try:
            value = loads(text)
        except orjson.JSONDecodeError:
            value = None
        if type(value) is list and len(value) == _FIELDS and value[0] == VERSION:
            _, userid, t, flags, nevents, allocated, started, status, etype, note, by = value
            if (
                etype is None
                and note is None
                and type(userid) is int
                and type(flags) is int
                and type(nevents) is int
                and type(t) is float
                and type(allocated) is bool
                and type(started) is bool
                and type(by) is bool
                and (status is None or type(status) is int)
            ):
                ended[jobid] = new(jobid, userid, t, nevents, allocated, started, status, None, by)
                if flags & FLAG_WAITABLE:
                    waitable.add(jobid)
                continue
        try:
            job, is_waitable = decode(jobid, text)
        except RecordError as exc:
            error(f"restart: {k}: {exc}; replaying the job's eventlog")
            bad.append(jobid)
            continue
        ended[jobid] = job
        if is_waitable:
            waitable.add(jobid)
