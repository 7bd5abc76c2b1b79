"""Acting on jobs and asking about them: the request methods both clients share
(``pflux.api.exchange``)."""

from __future__ import annotations

import errno

from pflux.api.exchange import Call, Exchange, ask
from pflux.api.submission import urgency_of
from pflux.errors import RPCError
from pflux.spec.fluid import JobID

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any

    from pflux.api.replies import JobListing
    from pflux.spec.eventlog import Event

STDIN_PIECE = 1 << 16  # bytes of standard input in one job-exec.stdin request


def raise_exception(
    jobid: int, etype: str = "cancel", severity: int = 0, note: str = ""
) -> Exchange[None]:
    """Raise an exception of type ``etype`` on the job (severity 0 ends it)."""
    yield from ask("job-manager.raise", _raise_payload(jobid, etype, severity, note))


def cancel(jobid: int, note: str = "") -> Exchange[None]:
    """Cancel the job: a ``cancel`` exception of severity 0."""
    yield from raise_exception(jobid, "cancel", 0, note)


def kill(jobid: int, signum: int = 15) -> Exchange[None]:
    """Send ``signum`` to a running job's tasks."""
    yield from ask("job-manager.kill", {"id": int(jobid), "signum": signum})


def send_stdin(jobid: int, data: bytes, *, ranks: str = "all", eof: bool = False) -> Exchange[None]:
    """Give ``data`` to the standard input of a running job's tasks (``ranks``: ``all``
    or an idset of task ranks); ``eof``: close it after. ``data`` of any size goes as
    pieces of at most 64 KiB, all in flight at once. Returns once the job's shell has
    every piece; RPCError ENOENT when the job is not running, ENOSYS when it reads
    its input from a file, EPIPE when a named task's input is closed."""
    from pflux.spec.ioencode import data_context

    pieces = [data[at : at + STDIN_PIECE] for at in range(0, len(data), STDIN_PIECE)] or [b""]
    last = len(pieces) - 1
    batch = [
        Call(
            "job-exec.stdin",
            {"id": int(jobid), **data_context(ranks, piece, eof and at == last)},
            tolerant=True,
        )
        for at, piece in enumerate(pieces)
    ]
    answers = yield batch
    for answer in answers:  # every answer is taken before the first refusal is raised
        if isinstance(answer, RPCError):
            raise answer


def send_winsize(jobid: int, *, rows: int, cols: int) -> Exchange[None]:
    """Size a running job's ptys (``-o pty``) as a terminal of ``rows`` by ``cols``;
    RPCError ENOENT when the job is not running, ENOSYS when it has no pty."""
    yield from ask("job-exec.winsize", {"id": int(jobid), "rows": rows, "cols": cols})


def raise_many(
    jobids: Sequence[int], etype: str = "cancel", severity: int = 0, note: str = ""
) -> Exchange[list[RPCError | None]]:
    """``raise_exception`` on every job, all requests in flight at once: each job's
    refusal, or None."""
    payloads = [_raise_payload(jobid, etype, severity, note) for jobid in jobids]
    return (yield from _each("job-manager.raise", payloads))


def kill_many(jobids: Sequence[int], signum: int = 15) -> Exchange[list[RPCError | None]]:
    """``kill`` every job, all requests in flight at once: each job's refusal, or None."""
    payloads = [{"id": int(jobid), "signum": signum} for jobid in jobids]
    return (yield from _each("job-manager.kill", payloads))


def urgency(jobid: int, urgency: int | str) -> Exchange[int]:
    """Set a pending job's urgency; return the old one."""
    payload = {"id": int(jobid), "urgency": urgency_of(urgency)}
    return int((yield from ask("job-manager.urgency", payload))["old_urgency"])


def memo(jobid: int, memo: dict[str, Any], *, volatile: bool = False) -> Exchange[None]:
    """Attach ``memo`` to an active job (its ``user`` annotations); ``volatile``: not
    in the eventlog."""
    yield from ask("job-manager.memo", {"id": int(jobid), "memo": memo, "volatile": volatile})


def list_jobs(
    *,
    states: int = 0,
    results: int = 0,
    userid: int = -1,
    max_entries: int = 0,
    attrs: Sequence[str] = ("all",),
    since: float = 0.0,
    name: str | None = None,
    queues: Sequence[str] = (),
) -> Exchange[list[JobListing]]:
    """Jobs from job-list (0 for states/results means all), most recent first;
    ``since``: only those inactive since that time, ``name``/``queues``: only those."""
    payload: dict[str, Any] = {
        "states": states,
        "results": results,
        "userid": userid,
        "max_entries": max_entries,
        "attrs": list(attrs),
    }
    if since:
        payload["since"] = since
    if name is not None:
        payload["name"] = name
    if queues:
        payload["queue"] = list(queues)
    jobs = (yield from ask("job-list.list", payload))["jobs"]
    from pflux.api.replies import JobListing  # with the first answer, not with the API

    return [JobListing.from_reply(job) for job in jobs]


def job_info(
    jobid: int, attrs: Sequence[str] = ("all",), *, state: int = 0
) -> Exchange[JobListing]:
    """One job's job-list attributes (``attrs``; ``all``: every one); with ``state``
    (a state's bit), once the job is in or past that state."""
    payload: dict[str, Any] = {"id": int(jobid), "attrs": list(attrs)}
    if state:
        payload["state"] = state
    reply = yield from ask("job-list.list-id", payload)
    from pflux.api.replies import JobListing

    return JobListing.from_reply(reply["job"])


def lookup(jobid: int, keys: Sequence[str]) -> Exchange[dict[str, str]]:
    """The job's stored text for each of ``keys`` (``J``, ``jobspec``, ``R``, ``eventlog``)."""
    reply = yield from ask("job-info.lookup", {"id": int(jobid), "keys": list(keys)})
    return {key: reply[key] for key in keys}


def job_info_many(
    jobids: Sequence[int], attrs: Sequence[str] = ("all",)
) -> Exchange[list[JobListing | RPCError]]:
    """``job_info`` for every job, all requests in flight at once: each job's
    attributes, or its refusal (ENOENT: no such job)."""
    payload = {"attrs": list(attrs)}
    batch = [Call("job-list.list-id", {**payload, "id": int(j)}, tolerant=True) for j in jobids]
    answers = yield batch
    from pflux.api.replies import JobListing

    return [a if isinstance(a, RPCError) else JobListing.from_reply(a["job"]) for a in answers]


def read_log(jobid: int, path: str = "eventlog") -> Exchange[str]:
    """A job's eventlog, or a guest log (``guest.output``), as text as it is now."""
    if path == "eventlog":  # through job-info, which checks ownership
        return (yield from lookup(jobid, ["eventlog"]))["eventlog"]
    from pflux.spec.kvs_keys import job_key

    key = job_key(jobid, *path.split("."))
    try:  # a guest log from the KVS, a piece at a time (it may be larger than a message)
        pieces = yield from ask("kvs.get", {"key": key}, streaming=True)
    except RPCError as exc:
        if exc.errnum in (errno.ENOENT, errno.EISDIR):
            raise RPCError(exc.errnum, f"eventlog path {path} not found") from None
        if exc.errnum != errno.EPERM:
            raise
        # a guest reads its own job's logs through job-info, which checks ownership
        text: str = (yield from lookup(jobid, [path]))[path]
        return text
    return "".join(piece["value"] for piece in pieces)


def hostpids(jobid: int) -> Exchange[list[str]]:
    """``host:pid`` of each task of a running job, in task rank order (ENOENT: the
    job is not running or none of its task processes is known)."""
    found: list[str] = (yield from ask("job-exec.hostpids", {"id": int(jobid)}))["hostpids"]
    return found


def raise_all(
    etype: str = "cancel",
    severity: int = 0,
    note: str = "",
    *,
    userid: int = -1,
    states: int | None = None,
    dry_run: bool = False,
) -> Exchange[int]:
    """Raise an exception on every active job of ``userid`` (-1: everyone's) in ``states``.

    Returns how many jobs matched; with ``dry_run`` nothing is raised.
    """
    payload: dict[str, Any] = {
        "type": etype,
        "severity": severity,
        "note": note,
        "userid": userid,
        "dry_run": dry_run,
    }
    if states is not None:
        payload["states"] = states
    return int((yield from ask("job-manager.raiseall", payload))["count"])


def update(jobid: int, updates: Mapping[str, Any]) -> Exchange[None]:
    """Update jobspec keys of an active job (as ``pflux update``: ``attributes.system.
    duration`` in seconds); done once the update's events are committed."""
    yield from ask("job-manager.update", {"id": int(jobid), "updates": dict(updates)})


def last_jobs(slice: str = "[:1]") -> Exchange[list[JobID]]:
    """The caller's jobs, most recent first, cut by a Python-style ``slice``."""
    reply = yield from ask("job-manager.history.get", {"slice": slice})
    return [JobID(jobid) for jobid in reply["jobs"]]


def purge(
    *,
    age_limit: float | None = None,
    num_limit: int | None = None,
    batch: int = 50,
    force: bool = False,
) -> Exchange[tuple[int, int]]:
    """Purge the oldest inactive jobs past ``age_limit`` seconds or beyond the newest
    ``num_limit``, ``batch`` (1-100) at most (the instance owner only); without
    ``force`` only count them. Return (jobs purged or eligible, inactive jobs left)."""
    payload = {  # flux-core's: -1 for no limit
        "age_limit": -1.0 if age_limit is None else float(age_limit),
        "num_limit": -1 if num_limit is None else num_limit,
        "batch": batch,
        "force": force,
    }
    return _purged((yield from ask("job-manager.purge", payload)))


def purge_id(jobid: int, *, force: bool = False) -> Exchange[tuple[int, int]]:
    """Purge one inactive job (without ``force``: check that it could be); return as
    ``purge``. An active job is EINVAL, an unknown one ENOENT."""
    return _purged((yield from ask("job-manager.purge-id", {"id": int(jobid), "force": force})))


def job_stats() -> Exchange[dict[str, Any]]:
    """job-list's counts of jobs by state and by how they ended, over all jobs and per
    queue (``queues``), as flux-core's ``job-list.job-stats`` gives them."""
    stats: dict[str, Any] = yield from ask("job-list.job-stats", {})
    return stats


def matches(event: Event, name: str, match: Mapping[str, Any] | None) -> bool:
    """Whether ``event`` is named ``name`` with ``match`` in its context (``wait_event``)."""
    if event.name != name:
        return False
    context = event.context or {}
    return all(context.get(k) == v for k, v in (match or {}).items())


def never_received(name: str) -> RPCError:
    """``wait_event``'s error when the log ends without the event."""
    return RPCError(errno.ENODATA, f"event {name!r} never received")


def _raise_payload(jobid: int, etype: str, severity: int, note: str) -> dict[str, Any]:
    return {"id": int(jobid), "type": etype, "severity": severity, "note": note}


def _each(topic: str, payloads: Iterable[dict[str, Any]]) -> Exchange[list[RPCError | None]]:
    """Every request in flight at once: each one's refusal, or None."""
    answers = yield [Call(topic, payload, tolerant=True) for payload in payloads]
    return [answer if isinstance(answer, RPCError) else None for answer in answers]


def _purged(reply: Mapping[str, Any]) -> tuple[int, int]:
    return int(reply["count"]), int(reply["inactive"])
