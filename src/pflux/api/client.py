"""The Python API: submit jobs, wait for them, follow their events, cancel them, list them.

``Client`` blocks; ``AsyncClient`` is the same API for asyncio, method for method.
Both speak the messages of docs/interfaces.md; the request payloads are built
once, here, and the two differ only in how they wait. ``job(id)`` gives a
future for one job (pflux.api.jobhandle). Users import all of it from ``pflux``.

    with pflux.Client() as client:
        job = client.submit_job(["hostname"], num_tasks=2)
        print(job.result().success)

    async with pflux.AsyncClient() as client:
        jobid = await client.submit(["hostname"])
        print((await client.wait(jobid)).success)
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import AsyncIterator, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pflux.broker.message import FLAG_PRIVATE as EVENT_PRIVATE
from pflux.broker.message import NODEID_ANY, Message
from pflux.client.handle import Handle
from pflux.errors import PfluxError, RPCError, RPCTimeout
from pflux.spec.eventlog import Event, EventlogReader
from pflux.spec.fluid import JOBID_ANY as WAIT_ANY
from pflux.spec.fluid import JobID
from pflux.spec.states import (
    FLAG_DEBUG,
    FLAG_WAITABLE,
    URGENCY_DEFAULT,
    URGENCY_EXPEDITE,
    URGENCY_HOLD,
)

if TYPE_CHECKING:
    from typing import Unpack

    from pflux.api.jobhandle import AsyncJobHandle, JobHandle
    from pflux.api.jobspec import BuilderOptions
    from pflux.api.kvswatch import AsyncKVSWatch, KVSWatch
    from pflux.api.logfollow import LogFollow
    from pflux.api.remote import Remote
    from pflux.api.replies import AllocCounts, JobListing, QueueStatus
    from pflux.client.aio import AsyncHandle
    from pflux.client.handle import RPC

__all__ = ["AsyncClient", "Client", "JobResult", "jobspec_of"]

STDIN_PIECE = 1 << 16  # bytes of standard input in one job-exec.stdin request
#: ``submit_each``'s submissions in flight at once: enough to keep ingest's batches
#: full, few enough that a million copies cost the client a window's memory, not theirs
SUBMIT_WINDOW = 4096
URGENCY_NAMES = {"hold": URGENCY_HOLD, "expedite": URGENCY_EXPEDITE, "default": URGENCY_DEFAULT}


@dataclass(frozen=True)
class JobResult:
    """How a job ended: ``success``, and ``errstr`` saying why not."""

    id: JobID
    success: bool
    errstr: str


def jobspec_of(job: Mapping[str, Any] | Sequence[str], **options: Any) -> dict[str, Any]:
    """A jobspec from a jobspec mapping, or from a command line and builder options
    (those of ``Jobspec.from_command``).

    A command gets the caller's environment and working directory, as `pflux submit` does.
    """
    if isinstance(job, Mapping):
        if options:
            raise PfluxError("builder options apply to a command, not to a ready jobspec")
        return dict(job)
    from pflux.spec.builder import from_command

    options.setdefault("environment", dict(os.environ))
    options.setdefault("cwd", os.getcwd())
    return from_command(list(job), **options)


def _submit_payload(
    jobspec: Mapping[str, Any], urgency: int | str, waitable: bool, debug: bool
) -> dict[str, Any]:
    flags = (FLAG_WAITABLE if waitable else 0) | (FLAG_DEBUG if debug else 0)
    return {"jobspec": dict(jobspec), "urgency": _urgency(urgency), "flags": flags}


def _purge_payload(
    age_limit: float | None, num_limit: int | None, batch: int, force: bool
) -> dict[str, Any]:
    """``job-manager.purge``'s request: flux-core's, -1 for no limit."""
    return {
        "age_limit": -1.0 if age_limit is None else float(age_limit),
        "num_limit": -1 if num_limit is None else num_limit,
        "batch": batch,
        "force": force,
    }


def _purged(reply: Mapping[str, Any]) -> tuple[int, int]:
    return int(reply["count"]), int(reply["inactive"])


def _urgency(urgency: int | str) -> int:
    if isinstance(urgency, str):
        if urgency in URGENCY_NAMES:
            return URGENCY_NAMES[urgency]
        try:
            return int(urgency)
        except ValueError:
            raise PfluxError(
                f"urgency: must be 0-31, hold, expedite or default, got {urgency!r}"
            ) from None
    return urgency


def _stdin_payloads(jobid: int, data: bytes, ranks: str, eof: bool) -> list[dict[str, Any]]:
    """``job-exec.stdin`` requests for ``data``: RFC 24's ioencode of a piece of at most
    STDIN_PIECE bytes each, the last one with ``eof``."""
    from pflux.spec.ioencode import data_context

    pieces = [data[at : at + STDIN_PIECE] for at in range(0, len(data), STDIN_PIECE)] or [b""]
    last = len(pieces) - 1
    return [
        {"id": int(jobid), **data_context(ranks, piece, eof and at == last)}
        for at, piece in enumerate(pieces)
    ]


def _raise_payload(jobid: int, etype: str, severity: int, note: str) -> dict[str, Any]:
    return {"id": int(jobid), "type": etype, "severity": severity, "note": note}


def _list_payload(
    states: int,
    results: int,
    userid: int,
    max_entries: int,
    attrs: Sequence[str],
    *,
    since: float,
    name: str | None,
    queues: Sequence[str],
) -> dict[str, Any]:
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
    return payload


def _drain_payload(targets: str, reason: str, mode: str | None) -> dict[str, Any]:
    payload: dict[str, Any] = {"targets": targets}
    if reason:
        payload["reason"] = reason
    if mode is not None:
        payload["mode"] = mode
    return payload


def _kvs_payload(namespace: str | None, **payload: Any) -> dict[str, Any]:
    if namespace:
        payload["namespace"] = namespace
    return payload


def _log_key(jobid: int, path: str) -> str:
    """The KVS key of a guest log (``guest.output``) of the job."""
    from pflux.spec.kvs_keys import job_key

    return job_key(jobid, *path.split("."))


def _log_missing(exc: RPCError, path: str) -> RPCError:
    """A guest log's read error as the user sees it: a missing path is named."""
    if exc.errnum in (errno.ENOENT, errno.EISDIR):
        return RPCError(exc.errnum, f"eventlog path {path} not found")
    return exc


def _raise_all_payload(
    etype: str, severity: int, note: str, *, userid: int, states: int | None, dry_run: bool
) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "type": etype,
        "severity": severity,
        "note": note,
        "userid": userid,
        "dry_run": dry_run,
    }
    if states is not None:
        payload["states"] = states
    return payload


def _dag_jobspec(
    name: Hashable,
    nodes: Mapping[Hashable, Mapping[str, Any] | Sequence[str]],
    *,
    parents: Mapping[Hashable, Sequence[Hashable]],
    ids: Mapping[Hashable, JobID],
    scheme: str,
    options: Mapping[str, Any],
) -> dict[str, Any]:
    """Node ``name``'s jobspec, depending by ``scheme`` on its parents (all submitted)."""
    spec = nodes[name]
    if isinstance(spec, Mapping):
        jobspec = jobspec_of(spec)
    else:  # a command: the node's name names the job too
        jobspec = jobspec_of(spec, **{"name": str(name), **options})
    deps = [{"scheme": scheme, "value": str(ids[p])} for p in parents[name]]
    if deps:
        system = jobspec["attributes"]["system"]
        system["dependencies"] = [*system.get("dependencies", []), *deps]
    return jobspec


def _result(reply: dict[str, Any]) -> JobResult:
    return JobResult(JobID(reply["id"]), bool(reply["success"]), reply.get("errstr", ""))


# the typed answers load with the first of them, not with the API
def _listing(job: Mapping[str, Any]) -> JobListing:
    from pflux.api.replies import JobListing

    return JobListing.from_reply(job)


def _listings(jobs: Iterable[Mapping[str, Any]]) -> list[JobListing]:
    from pflux.api.replies import JobListing

    return [JobListing.from_reply(job) for job in jobs]


def _queue_status(reply: Mapping[str, Any]) -> QueueStatus:
    from pflux.api.replies import QueueStatus

    return QueueStatus.from_reply(reply)


def _named(payload: dict[str, Any], queue: str | None, every: bool = False) -> dict[str, Any]:
    """A queue request's payload, naming ``queue`` if given, or every queue (``all``)."""
    if queue is not None:
        payload["name"] = queue
    if every:
        payload["all"] = True
    return payload


def _alloc_counts(reply: Mapping[str, Any]) -> AllocCounts:
    from pflux.api.replies import AllocCounts

    return AllocCounts.from_reply(reply)


def _submit_window(window: int) -> int:
    if type(window) is not int or window < 1:
        raise PfluxError(f"window: must be an integer >= 1, got {window!r}")
    return window


def _windowed(
    handle: Handle, payloads: Iterator[dict[str, Any]], window: int
) -> Iterator[JobID | RPCError]:
    """Each submission's id, or its refusal, in order; a payload is taken from
    ``payloads`` (built then) only while fewer than ``window`` requests are in flight."""
    from collections import deque

    pending: deque[RPC] = deque()
    try:
        for payload in payloads:
            if len(pending) >= window:
                yield _id_or_error(pending.popleft())
            pending.append(handle.rpc("job-ingest.submit", payload))
    except Exception:
        while pending:  # a jobspec that cannot be built: the jobs sent still answer first
            yield _id_or_error(pending.popleft())
        raise
    while pending:
        yield _id_or_error(pending.popleft())


def _id_or_error(rpc: RPC) -> JobID | RPCError:
    try:
        return JobID(rpc.get()["id"])
    except RPCError as exc:
        return exc


def _matches(event: Event, name: str, match: Mapping[str, Any] | None) -> bool:
    if event.name != name:
        return False
    context = event.context or {}
    return all(context.get(k) == v for k, v in (match or {}).items())


def _event_payload(topic: str, payload: Any, private: bool) -> dict[str, Any]:
    return {"topic": topic, "flags": EVENT_PRIVATE if private else 0, "payload": payload}


def _event(msg: Message) -> dict[str, Any]:
    return {"topic": msg.topic, "seq": msg.matchtag, "payload": msg.payload}


def _events(handle: Handle) -> Iterator[dict[str, Any]]:
    while True:
        msg = handle.next_event()
        if msg is not None:
            yield _event(msg)


def _log_payload(message: str, severity: int, appname: str, rank: int) -> dict[str, Any]:
    return {
        "timestamp": time.time(),
        "name": appname,
        "severity": severity,
        "rank": rank,
        "message": message,
    }


class Client:
    """A blocking client of one instance (``uri``, else PFLUX_URI).

    An answer not asked to be waited for (anything but ``wait``, ``drain``, ``idle``
    and following events) comes within ``timeout`` seconds (else PFLUX_TIMEOUT, else
    10; 0: no limit), or RPCTimeout; connecting to what does not answer as an
    instance in that time raises NoInstanceError.
    """

    def __init__(self, uri: str | None = None, *, timeout: float | None = None) -> None:
        self.handle = Handle(uri, timeout=timeout)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection; the client cannot be used after."""
        self.handle.close()

    def job(self, jobid: int) -> JobHandle:
        """A future for job ``jobid``: its status, result, events, and cancel."""
        from pflux.api.jobhandle import JobHandle  # only for those who use it

        return JobHandle(self, jobid)

    def submit_job(
        self,
        job: Mapping[str, Any] | Sequence[str],
        *,
        urgency: int | str = URGENCY_DEFAULT,
        waitable: bool = False,
        debug: bool = False,
        **options: Unpack[BuilderOptions],
    ) -> JobHandle:
        """``submit``, returning a future for the job rather than its id."""
        jobid = self.submit(job, urgency=urgency, waitable=waitable, debug=debug, **options)
        return self.job(jobid)

    def submit(
        self,
        job: Mapping[str, Any] | Sequence[str],
        *,
        urgency: int | str = URGENCY_DEFAULT,
        waitable: bool = False,
        debug: bool = False,
        **options: Unpack[BuilderOptions],
    ) -> JobID:
        """Submit a jobspec, or a command line with builder options; return its id."""
        jobspec = jobspec_of(job, **options)
        return self.submit_many([jobspec], urgency=urgency, waitable=waitable, debug=debug)[0]

    def submit_many(
        self,
        jobspecs: Sequence[Mapping[str, Any]],
        *,
        urgency: int | str = URGENCY_DEFAULT,
        waitable: bool = False,
        debug: bool = False,
    ) -> list[JobID]:
        """Submit many jobspecs with every request in flight at once."""
        rpcs = [
            self.handle.rpc("job-ingest.submit", _submit_payload(js, urgency, waitable, debug))
            for js in jobspecs
        ]
        return [JobID(rpc.get()["id"]) for rpc in rpcs]

    def submit_each(
        self,
        jobspecs: Iterable[Mapping[str, Any]],
        *,
        urgency: int | str = URGENCY_DEFAULT,
        waitable: bool = False,
        debug: bool = False,
        window: int = SUBMIT_WINDOW,
    ) -> Iterator[JobID | RPCError]:
        """As ``submit_many``, but each job's id or refusal, in order, as they come: a
        refused job stops none of the others.

        Requests go as the answers are iterated, at most ``window`` in flight, each
        jobspec taken from ``jobspecs`` only when its request can go: a generator of
        a million jobspecs is never held whole, and the first ids come back while the
        rest are still to be built."""
        _urgency(urgency)  # a bad urgency is refused now, not at the first answer
        window = _submit_window(window)
        payloads = (_submit_payload(js, urgency, waitable, debug) for js in jobspecs)
        return _windowed(self.handle, payloads, window)

    def wait(self, jobid: int, timeout: float | None = None) -> JobResult:
        """Wait until the job is inactive (any job, any number of times)."""
        reply = self.handle.call("job-manager.result", {"id": int(jobid)}, timeout, wait=True)
        return _result(reply)

    def reap(self, jobid: int | None = None, timeout: float | None = None) -> JobResult:
        """Take the result of a job submitted ``waitable`` (flux's ``flux.job.wait``):
        that job's, or with no id the next waitable job's to end. A result is taken
        once; ``RPCError`` ECHILD when there is none to wait for."""
        payload = {"id": WAIT_ANY if jobid is None else int(jobid)}
        return _result(self.handle.call("job-manager.wait", payload, timeout, wait=True))

    def wait_all(self, jobids: Iterable[int]) -> dict[JobID, JobResult]:
        """Wait for every job, all waits in flight at once."""
        rpcs = [self.handle.rpc("job-manager.result", {"id": int(j)}, wait=True) for j in jobids]
        results = [_result(rpc.get()) for rpc in rpcs]
        return {result.id: result for result in results}

    def submit_dag(
        self,
        nodes: Mapping[Hashable, Mapping[str, Any] | Sequence[str]],
        edges: Iterable[tuple[Hashable, Hashable]] = (),
        *,
        scheme: str = "afterok",
        **options: Unpack[BuilderOptions],
    ) -> dict[Any, JobID]:
        """Submit a workflow: ``nodes`` maps names to commands or jobspecs, ``edges`` are
        ``(parent, child)`` pairs; each child depends on its parents by ``scheme``.

        Returns each node's job id. Nodes are submitted level by level, each level's
        jobs all in flight at once; a cycle or an unknown node is refused before
        anything is submitted.
        """
        from pflux.api.dag import levels, parents_of

        parents = parents_of(nodes, edges)
        ids: dict[Any, JobID] = {}
        for level in levels(parents):
            jobspecs = [
                _dag_jobspec(name, nodes, parents=parents, ids=ids, scheme=scheme, options=options)
                for name in level
            ]
            ids.update(zip(level, self.submit_many(jobspecs), strict=True))
        return ids

    def run_dag(
        self,
        nodes: Mapping[Hashable, Mapping[str, Any] | Sequence[str]],
        edges: Iterable[tuple[Hashable, Hashable]] = (),
        *,
        scheme: str = "afterok",
        **options: Unpack[BuilderOptions],
    ) -> dict[Any, tuple[JobID, JobResult]]:
        """``submit_dag`` and wait for every node: each node's id and result."""
        ids = self.submit_dag(nodes, edges, scheme=scheme, **options)
        results = self.wait_all(ids.values())
        return {name: (jobid, results[jobid]) for name, jobid in ids.items()}

    def events(
        self,
        jobid: int,
        *,
        path: str = "eventlog",
        follow: bool = True,
        timeout: float | None = None,
    ) -> Iterator[Event]:
        """The job's events (or a guest eventlog's: ``guest.output``, ``guest.exec.eventlog``).

        With ``follow`` they arrive live until the job is inactive (RPCTimeout once
        ``timeout`` seconds have passed in all); without it, the log as it is now.
        """
        reader = EventlogReader()
        if not follow:
            for text in self._pieces(jobid, path):
                yield from reader.feed(text)
            reader.finish()
            return
        payload = {"id": int(jobid), "path": path}
        rpc = self.handle.rpc("job-info.eventlog-watch", payload, streaming=True, wait=True)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            msg = rpc.next_message(remaining)
            if msg.errnum == errno.ENODATA:
                reader.finish()
                return
            yield from reader.feed(msg.raise_for_error()["data"])

    def events_many(
        self, jobids: Sequence[int], *, path: str = "eventlog"
    ) -> Iterator[tuple[int, Event | RPCError]]:
        """Follow every job's events at once, on one connection, each until its job is
        inactive: ``(index in jobids, event)`` as they come, and ``(index, error)``
        ending a job whose log cannot be followed (ENOENT: no such job).

        The requests are sent at once, before the first event is asked for."""
        logs = self.follow_logs([(jobid, path) for jobid in jobids])
        return ((index, item) for index, item in logs if item is not None)

    def follow_logs(self, logs: Sequence[tuple[int, str]]) -> LogFollow:
        """Follow several logs at once, on one connection: each ``(jobid, path)``
        (``path`` as ``events``'s) until its job is inactive. Iterating gives ``(index in
        logs, event)`` as they come, ``(index, None)`` once log ``index`` has ended, and
        ``(index, error)`` ending one that cannot be followed (ENOENT: no such job); a
        select loop of the caller's own uses its ``fileno()`` and ``poll()``.

        The requests are sent at once, before the first event is asked for."""
        from pflux.api.logfollow import LogFollow

        return LogFollow(self.handle, logs)

    def read_log(self, jobid: int, path: str = "eventlog") -> str:
        """A job's eventlog, or a guest log (``guest.output``), as text as it is now."""
        return "".join(self._pieces(jobid, path))

    def _pieces(self, jobid: int, path: str) -> Iterator[str]:
        """A job's log in pieces: the job eventlog through job-info (which checks
        ownership), a guest log from the KVS a piece at a time (it may be larger
        than a message)."""
        if path == "eventlog":
            yield self.lookup(jobid, ["eventlog"])["eventlog"]
            return
        rpc = self.handle.rpc("kvs.get", {"key": _log_key(jobid, path)}, streaming=True)
        try:
            for reply in rpc:
                yield reply["value"]
        except RPCError as exc:
            raise _log_missing(exc, path) from None

    def wait_event(
        self,
        jobid: int,
        name: str,
        *,
        match: Mapping[str, Any] | None = None,
        path: str = "eventlog",
    ) -> Event:
        """The first event named ``name`` (with ``match`` in its context)."""
        for event in self.events(jobid, path=path):
            if _matches(event, name, match):
                return event
        raise RPCError(errno.ENODATA, f"event {name!r} never received")

    def raise_exception(
        self, jobid: int, etype: str = "cancel", severity: int = 0, note: str = ""
    ) -> None:
        """Raise an exception of type ``etype`` on the job (severity 0 ends it)."""
        self.handle.call("job-manager.raise", _raise_payload(jobid, etype, severity, note))

    def cancel(self, jobid: int, note: str = "") -> None:
        """Cancel the job: a ``cancel`` exception of severity 0."""
        self.raise_exception(jobid, "cancel", 0, note)

    def kill(self, jobid: int, signum: int = 15) -> None:
        """Send ``signum`` to a running job's tasks."""
        self.handle.call("job-manager.kill", {"id": int(jobid), "signum": signum})

    def send_stdin(self, jobid: int, data: bytes, *, ranks: str = "all", eof: bool = False) -> None:
        """Give ``data`` to the standard input of a running job's tasks (``ranks``: ``all``
        or an idset of task ranks); ``eof``: close it after. ``data`` of any size goes as
        pieces of at most 64 KiB, all in flight at once. Returns once the job's shell has
        every piece; RPCError ENOENT when the job is not running, ENOSYS when it reads
        its input from a file, EPIPE when a named task's input is closed."""
        payloads = _stdin_payloads(jobid, data, ranks, eof)
        rpcs = [self.handle.rpc("job-exec.stdin", payload) for payload in payloads]
        refused: RPCError | None = None
        for rpc in rpcs:  # every answer is taken before the first refusal is raised
            try:
                rpc.get()
            except RPCError as exc:
                refused = refused or exc
        if refused is not None:
            raise refused

    def send_winsize(self, jobid: int, *, rows: int, cols: int) -> None:
        """Size a running job's ptys (``-o pty``) as a terminal of ``rows`` by ``cols``;
        RPCError ENOENT when the job is not running, ENOSYS when it has no pty."""
        self.handle.call("job-exec.winsize", {"id": int(jobid), "rows": rows, "cols": cols})

    def raise_many(
        self, jobids: Sequence[int], etype: str = "cancel", severity: int = 0, note: str = ""
    ) -> list[RPCError | None]:
        """``raise_exception`` on every job, all requests in flight at once: each job's
        refusal, or None."""
        payloads = [_raise_payload(jobid, etype, severity, note) for jobid in jobids]
        return self._each("job-manager.raise", payloads)

    def kill_many(self, jobids: Sequence[int], signum: int = 15) -> list[RPCError | None]:
        """``kill`` every job, all requests in flight at once: each job's refusal, or None."""
        payloads = [{"id": int(jobid), "signum": signum} for jobid in jobids]
        return self._each("job-manager.kill", payloads)

    def _each(self, topic: str, payloads: list[dict[str, Any]]) -> list[RPCError | None]:
        rpcs = [self.handle.rpc(topic, payload) for payload in payloads]
        errors: list[RPCError | None] = []
        for rpc in rpcs:
            try:
                rpc.get()
            except RPCError as exc:
                errors.append(exc)
            else:
                errors.append(None)
        return errors

    def urgency(self, jobid: int, urgency: int | str) -> int:
        """Set a pending job's urgency; return the old one."""
        reply = self.handle.call(
            "job-manager.urgency", {"id": int(jobid), "urgency": _urgency(urgency)}
        )
        return int(reply["old_urgency"])

    def memo(self, jobid: int, memo: dict[str, Any], *, volatile: bool = False) -> None:
        """Attach ``memo`` to an active job (its ``user`` annotations); ``volatile``: not
        in the eventlog."""
        payload = {"id": int(jobid), "memo": memo, "volatile": volatile}
        self.handle.call("job-manager.memo", payload)

    def list_jobs(
        self,
        *,
        states: int = 0,
        results: int = 0,
        userid: int = -1,
        max_entries: int = 0,
        attrs: Sequence[str] = ("all",),
        since: float = 0.0,
        name: str | None = None,
        queues: Sequence[str] = (),
    ) -> list[JobListing]:
        """Jobs from job-list (0 for states/results means all), most recent first;
        ``since``: only those inactive since that time, ``name``/``queues``: only those."""
        payload = _list_payload(
            states, results, userid, max_entries, attrs, since=since, name=name, queues=queues
        )
        jobs = self.handle.call("job-list.list", payload)["jobs"]
        return _listings(jobs)

    def job_info(self, jobid: int, attrs: Sequence[str] = ("all",)) -> JobListing:
        """One job's job-list attributes (``attrs``; ``all``: every one)."""
        reply = self.handle.call("job-list.list-id", {"id": int(jobid), "attrs": list(attrs)})
        return _listing(reply["job"])

    def lookup(self, jobid: int, keys: Sequence[str]) -> dict[str, str]:
        """The job's stored text for each of ``keys`` (``J``, ``jobspec``, ``R``, ``eventlog``)."""
        reply = self.handle.call("job-info.lookup", {"id": int(jobid), "keys": list(keys)})
        return {key: reply[key] for key in keys}

    def job_info_many(
        self, jobids: Sequence[int], attrs: Sequence[str] = ("all",)
    ) -> list[JobListing | RPCError]:
        """``job_info`` for every job, all requests in flight at once: each job's
        attributes, or its refusal (ENOENT: no such job)."""
        payload = {"attrs": list(attrs)}
        rpcs = [self.handle.rpc("job-list.list-id", {**payload, "id": int(j)}) for j in jobids]
        infos: list[JobListing | RPCError] = []
        for rpc in rpcs:
            try:
                infos.append(_listing(rpc.get()["job"]))
            except RPCError as exc:
                infos.append(exc)
        return infos

    def attrs(self) -> dict[str, str]:
        """The instance's attributes (``broker.starttime``, ``size``, ``local-uri``...)."""
        attrs: dict[str, str] = self.handle.call("broker.attrs", {})["attrs"]
        return attrs

    def set_attr(self, name: str, value: str) -> None:
        """Change an instance attribute the broker lets change at run time (the log's:
        ``log-stderr-level``, ``log-ring-size``); RPCError says why not otherwise."""
        self.handle.call("attr.set", {"name": name, "value": value})

    def hostpids(self, jobid: int) -> list[str]:
        """``host:pid`` of each task of a running job, in task rank order (ENOENT: the
        job is not running or none of its task processes is known)."""
        found: list[str] = self.handle.call("job-exec.hostpids", {"id": int(jobid)})["hostpids"]
        return found

    def rexec(
        self,
        ranks: Sequence[int],
        command: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str | None = None,
        stdin: bool = False,
    ) -> Remote:
        """Run ``command`` on each of ``ranks``, outside any job (the owner only): a
        ``Remote`` giving ``(rank, entry)`` as each process starts, writes and ends
        (``pflux.api.remote``), its input fed with ``write`` when ``stdin``."""
        from pflux.api.remote import Remote, exec_payload

        return Remote(self.handle, ranks, exec_payload(command, env, cwd, stdin))

    def resource_status(self) -> dict[str, Any]:
        """The scheduler's resource sets as R objects: ``all``, ``allocated``, ``down``;
        the drained ranks as idsets (``drained``, ``draining``: jobs still run there) and
        ``drain`` ({rank: {timestamp, reason}})."""
        status: dict[str, Any] = self.handle.call("sched.resource-status", {})
        return status

    def drain_resources(self, targets: str, reason: str = "", *, mode: str | None = None) -> None:
        """Give no new job the ranks ``targets`` names (an idset or hostlist); owner only.
        ``mode``: ``update``, ``overwrite`` or ``force-overwrite`` (as flux's)."""
        self.handle.call("sched.drain", _drain_payload(targets, reason, mode))

    def undrain_resources(self, targets: str, reason: str = "", *, mode: str | None = None) -> None:
        """Schedule drained ranks again (``reason`` is logged); owner only. ``mode``
        ``update``: some may not be drained."""
        self.handle.call("sched.undrain", _drain_payload(targets, reason, mode))

    def dmesg(self, *, follow: bool = False, new: bool = False) -> Iterator[dict[str, Any]]:
        """The instance's log entries (``timestamp``, ``severity``, ``message``...):
        ``new``: only those logged from now on; ``follow``: live, until the instance
        stops. The request is sent at once, before the first entry is asked for."""
        payload = {"follow": follow, "nobacklog": new}
        return iter(self.handle.rpc("log.dmesg", payload, streaming=True, wait=True))

    def clear_log(self) -> None:
        """Empty the instance's log ring."""
        self.handle.call("log.clear", {})

    def shutdown(self) -> None:
        """Stop the instance: running jobs are canceled, pending ones kept for the next start."""
        self.handle.call("broker.shutdown", {})

    def ping(self, service: str, payload: Any = None, *, rank: int | None = None) -> Any:
        """``service``'s answer to ``ping`` (every service echoes the payload it is sent),
        at ``rank`` (default: whichever broker provides it)."""
        nodeid = NODEID_ANY if rank is None else rank
        return self.handle.rpc(f"{service}.ping", payload, nodeid=nodeid).get()

    def publish_event(self, topic: str, payload: Any = None, *, private: bool = False) -> int:
        """Publish an event to its subscribers; its sequence number."""
        seq: int = self.handle.call("event.pub", _event_payload(topic, payload, private))["seq"]
        return seq

    def subscribe(self, topics: Sequence[str]) -> Iterator[dict[str, Any]]:
        """The events whose topic starts with one of ``topics``, from now on, as they come
        (``topic``, ``seq``, ``payload``); subscribed before the first is asked for."""
        for topic in topics:
            self.handle.call("event.subscribe", {"topic": topic})
        return _events(self.handle)

    def log(self, message: str, *, severity: int = 6, appname: str = "logger") -> None:
        """Add ``message`` to the instance's log ring (syslog ``severity``, 0-7)."""
        rank = int(self.attrs().get("rank", 0))
        self.handle.call("log.append", _log_payload(message, severity, appname, rank))

    def modules(self) -> list[dict[str, Any]]:
        """What the instance runs as flux-core's broker modules: ``name``, ``path``,
        ``status`` (``R`` running, ``I`` starting), ``process`` (a process of its own)."""
        mods: list[dict[str, Any]] = self.handle.call("module.list", {})["mods"]
        return mods

    def config(self) -> dict[str, Any]:
        """The instance's configuration, as loaded."""
        config: dict[str, Any] = self.handle.call("config.get", {})
        return config

    def overlay_status(self) -> list[dict[str, Any]]:
        """Each rank's ``state`` as rank 0 knows it (``up``, ``lost``, ``offline``: never
        up) and ``since`` when (seconds since the epoch), in rank order."""
        ranks: list[dict[str, Any]] = self.handle.call("broker.overlay-status", {})["ranks"]
        return ranks

    def kvs_get(self, key: str, *, namespace: str | None = None) -> str:
        """The value of KVS ``key`` (in ``namespace``; default: the primary one)."""
        value: str = self.handle.call("kvs.get", _kvs_payload(namespace, key=key))["value"]
        return value

    def kvs_put(
        self,
        pairs: Iterable[tuple[str, str]],
        *,
        append: bool = False,
        namespace: str | None = None,
    ) -> None:
        """Store each ``(key, value)`` in order, in one commit; ``append``: add to the
        values already there."""
        op = "append" if append else "put"
        ops = [[op, key, value] for key, value in pairs]
        self.handle.call("kvs.commit", _kvs_payload(namespace, ops=ops))

    def kvs_ls(self, key: str = ".", *, namespace: str | None = None) -> dict[str, str]:
        """The KVS directory ``key``'s entries: each name and its kind (``dir``, ...);
        RPCError ENOTDIR when ``key`` is a value."""
        entries: dict[str, str] = self.handle.call("kvs.ls", _kvs_payload(namespace, key=key))[
            "entries"
        ]
        return entries

    def kvs_readlink(self, key: str, *, namespace: str | None = None) -> dict[str, str]:
        """The symbolic link at ``key``: ``{target, namespace?}``; RPCError EINVAL for
        anything else."""
        link: dict[str, str] = self.handle.call("kvs.readlink", _kvs_payload(namespace, key=key))
        return link

    def kvs_commit(self, ops: list[list[Any]], *, namespace: str | None = None) -> None:
        """Apply ``ops`` (``[op, key, value]``: put, append, unlink, mkdir) in one atomic commit."""
        self.handle.call("kvs.commit", _kvs_payload(namespace, ops=ops))

    def kvs_walk(
        self, key: str = ".", *, namespace: str | None = None
    ) -> Iterator[tuple[str, str]]:
        """Every ``(key, value)`` below directory ``key``, in key order, a page at a time."""
        rpc = self.handle.rpc("kvs.walk", _kvs_payload(namespace, key=key), streaming=True)
        for reply in rpc:
            yield from ((entry_key, value) for entry_key, value in reply["entries"])

    def kvs_namespaces(self) -> list[dict[str, Any]]:
        """The KVS namespaces, ``{name, owner, prefix}`` each, ``primary`` first."""
        namespaces: list[dict[str, Any]] = self.handle.call("kvs.namespace-list", {})["namespaces"]
        return namespaces

    def kvs_namespace_create(self, name: str, owner: int) -> None:
        """Create the namespace ``name``, owned by the user ``owner`` (the KVS picks its prefix)."""
        self.handle.call("kvs.namespace-create", {"name": name, "owner": owner})

    def kvs_namespace_remove(self, name: str) -> None:
        """Remove the namespace ``name`` (its keys stay, read-only)."""
        self.handle.call("kvs.namespace-remove", {"name": name})

    def kvs_dropcache(self) -> None:
        """Have the KVS give back the memory of its page cache."""
        self.handle.call("kvs.dropcache", {})

    def kvs_watch(
        self,
        keys: Sequence[str],
        *,
        append: bool = False,
        waitcreate: bool = False,
        namespace: str | None = None,
    ) -> KVSWatch:
        """Watch every key at once: iterate for ``(index, value)`` as each changes
        (``append``: only what is appended; ``waitcreate``: wait for a key to exist
        rather than fail), ``stop(index)`` to end one watch."""
        from pflux.api.kvswatch import KVSWatch

        flags = {"append": append, "waitcreate": waitcreate}
        return KVSWatch(self.handle, [_kvs_payload(namespace, key=k, **flags) for k in keys])

    def raise_all(
        self,
        etype: str = "cancel",
        severity: int = 0,
        note: str = "",
        *,
        userid: int = -1,
        states: int | None = None,
        dry_run: bool = False,
    ) -> int:
        """Raise an exception on every active job of ``userid`` (-1: everyone's) in ``states``.

        Returns how many jobs matched; with ``dry_run`` nothing is raised.
        """
        payload = _raise_all_payload(
            etype, severity, note, userid=userid, states=states, dry_run=dry_run
        )
        return int(self.handle.call("job-manager.raiseall", payload)["count"])

    def update(self, jobid: int, updates: Mapping[str, Any]) -> None:
        """Update jobspec keys of an active job (as ``pflux update``: ``attributes.system.
        duration`` in seconds); done once the update's events are committed."""
        self.handle.call("job-manager.update", {"id": int(jobid), "updates": dict(updates)})

    def last_jobs(self, slice: str = "[:1]") -> list[JobID]:
        """The caller's jobs, most recent first, cut by a Python-style ``slice``."""
        reply = self.handle.call("job-manager.history.get", {"slice": slice})
        return [JobID(jobid) for jobid in reply["jobs"]]

    def purge(
        self,
        *,
        age_limit: float | None = None,
        num_limit: int | None = None,
        batch: int = 50,
        force: bool = False,
    ) -> tuple[int, int]:
        """Purge the oldest inactive jobs past ``age_limit`` seconds or beyond the newest
        ``num_limit``, ``batch`` (1-100) at most (the instance owner only); without
        ``force`` only count them. Return (jobs purged or eligible, inactive jobs left)."""
        payload = _purge_payload(age_limit, num_limit, batch, force)
        return _purged(self.handle.call("job-manager.purge", payload))

    def purge_id(self, jobid: int, *, force: bool = False) -> tuple[int, int]:
        """Purge one inactive job (without ``force``: check that it could be); return as
        ``purge``. An active job is EINVAL, an unknown one ENOENT."""
        payload = {"id": int(jobid), "force": force}
        return _purged(self.handle.call("job-manager.purge-id", payload))

    def job_stats(self) -> dict[str, Any]:
        """job-list's counts of jobs by state and by how they ended, over all jobs and per
        queue (``queues``), as flux-core's ``job-list.job-stats`` gives them."""
        stats: dict[str, Any] = self.handle.call("job-list.job-stats", {})
        return stats

    def alloc_query(self) -> AllocCounts:
        """The job manager's allocation counts: requests queued, pending, jobs running."""
        return _alloc_counts(self.handle.call("job-manager.alloc-query", {}))

    def queues(self) -> list[str]:
        """The configured queues' names (none: the one anonymous queue)."""
        names: list[str] = self.handle.call("job-manager.queue-list", {})["queues"]
        return names

    def queue_status(self, *, queue: str | None = None) -> QueueStatus:
        """Whether submission is enabled and scheduling started, and why not: of the named
        ``queue`` (required when queues are configured) or the anonymous one."""
        return _queue_status(self.handle.call("job-manager.queue-status", _named({}, queue)))

    def queue_enable(
        self, enable: bool, reason: str = "", *, queue: str | None = None, all: bool = False
    ) -> None:
        """Accept (or, with a reason, refuse) new submissions to ``queue``, or ``all``."""
        payload = _named({"enable": enable, "reason": reason}, queue, all)
        self.handle.call("job-manager.queue-enable", payload)

    def queue_start(
        self,
        start: bool,
        reason: str = "",
        *,
        checkpoint: bool = True,
        queue: str | None = None,
        all: bool = False,
    ) -> None:
        """Start (or, with a reason, stop) allocating resources to ``queue``'s (or ``all``
        queues') pending jobs.

        ``checkpoint=False`` stops only until the next restart (flux's ``--nocheckpoint``).
        """
        payload = _named(
            {"start": start, "reason": reason, "nocheckpoint": not checkpoint}, queue, all
        )
        self.handle.call("job-manager.queue-start", payload)

    def drain(self, timeout: float | None = None) -> None:
        """Wait until no job is active (RPCTimeout after ``timeout`` seconds)."""
        self.handle.call("job-manager.drain", {}, timeout, wait=True)

    def idle(self, timeout: float | None = None) -> int:
        """Wait until no job is running; return how many are still pending."""
        return int(self.handle.call("job-manager.idle", {}, timeout, wait=True)["pending"])


class AsyncClient:
    """The asyncio twin of Client, method for method.

    ``async with AsyncClient(uri) as client`` connects and closes; so does
    ``await AsyncClient.connect(uri)`` with ``close()``. ``timeout`` as Client's.
    """

    def __init__(self, uri: str | None = None, *, timeout: float | None = None) -> None:
        self.uri = uri
        self.timeout = timeout
        self._handle: AsyncHandle | None = None

    @property
    def handle(self) -> AsyncHandle:
        """The connection; PfluxError before the client is connected."""
        if self._handle is None:
            raise PfluxError("AsyncClient: not connected (use `async with` or `connect`)")
        return self._handle

    @classmethod
    async def connect(cls, uri: str | None = None, *, timeout: float | None = None) -> AsyncClient:
        """A connected client; ``timeout`` as Client's."""
        client = cls(uri, timeout=timeout)
        await client.open()
        return client

    async def open(self) -> None:
        """Connect, if not connected already."""
        if self._handle is None:
            from pflux.client.aio import AsyncHandle  # asyncio only for those who use it

            self._handle = await AsyncHandle.connect(self.uri, timeout=self.timeout)

    async def __aenter__(self) -> AsyncClient:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection; the client cannot be used after."""
        if self._handle is not None:
            self._handle.close()

    def job(self, jobid: int) -> AsyncJobHandle:
        """A future for job ``jobid``, as ``Client.job``."""
        from pflux.api.jobhandle import AsyncJobHandle

        return AsyncJobHandle(self, jobid)

    async def submit_job(
        self,
        job: Mapping[str, Any] | Sequence[str],
        *,
        urgency: int | str = URGENCY_DEFAULT,
        waitable: bool = False,
        debug: bool = False,
        **options: Unpack[BuilderOptions],
    ) -> AsyncJobHandle:
        """``submit``, returning a future for the job rather than its id."""
        jobid = await self.submit(job, urgency=urgency, waitable=waitable, debug=debug, **options)
        return self.job(jobid)

    async def submit(
        self,
        job: Mapping[str, Any] | Sequence[str],
        *,
        urgency: int | str = URGENCY_DEFAULT,
        waitable: bool = False,
        debug: bool = False,
        **options: Unpack[BuilderOptions],
    ) -> JobID:
        """As ``Client.submit``."""
        payload = _submit_payload(jobspec_of(job, **options), urgency, waitable, debug)
        return JobID((await self.handle.call("job-ingest.submit", payload))["id"])

    async def submit_many(
        self,
        jobspecs: Sequence[Mapping[str, Any]],
        *,
        urgency: int | str = URGENCY_DEFAULT,
        waitable: bool = False,
        debug: bool = False,
    ) -> list[JobID]:
        """As ``Client.submit_many``: every request in flight at once."""
        import asyncio

        calls = [
            self.handle.call("job-ingest.submit", _submit_payload(js, urgency, waitable, debug))
            for js in jobspecs
        ]
        return [JobID(reply["id"]) for reply in await asyncio.gather(*calls)]

    async def submit_each(
        self,
        jobspecs: Iterable[Mapping[str, Any]],
        *,
        urgency: int | str = URGENCY_DEFAULT,
        waitable: bool = False,
        debug: bool = False,
        window: int = SUBMIT_WINDOW,
    ) -> AsyncIterator[JobID | RPCError]:
        """As ``Client.submit_each``: at most ``window`` requests in flight, each
        jobspec taken when its request can go."""
        import asyncio
        from collections import deque

        _urgency(urgency)
        window = _submit_window(window)
        calls: deque[asyncio.Future[Any]] = deque()

        async def answer() -> JobID | RPCError:
            try:
                return JobID((await calls.popleft())["id"])
            except RPCError as exc:
                return exc

        try:
            try:
                for js in jobspecs:
                    if len(calls) >= window:
                        yield await answer()
                    payload = _submit_payload(js, urgency, waitable, debug)
                    sent = self.handle.call("job-ingest.submit", payload)
                    calls.append(asyncio.ensure_future(sent))
            except Exception:
                while calls:  # as Client.submit_each: the jobs sent answer first
                    yield await answer()
                raise
            while calls:
                yield await answer()
        finally:
            for call in calls:
                call.cancel()

    async def wait(self, jobid: int, timeout: float | None = None) -> JobResult:
        """As ``Client.wait``."""
        payload = {"id": int(jobid)}
        reply = await self.handle.call("job-manager.result", payload, wait=True, timeout=timeout)
        return _result(reply)

    async def reap(self, jobid: int | None = None, timeout: float | None = None) -> JobResult:
        """As ``Client.reap``."""
        payload = {"id": WAIT_ANY if jobid is None else int(jobid)}
        reply = await self.handle.call("job-manager.wait", payload, wait=True, timeout=timeout)
        return _result(reply)

    async def wait_all(self, jobids: Iterable[int]) -> dict[JobID, JobResult]:
        """As ``Client.wait_all``: all waits in flight at once."""
        import asyncio

        results = await asyncio.gather(*(self.wait(j) for j in jobids))
        return {result.id: result for result in results}

    async def submit_dag(
        self,
        nodes: Mapping[Hashable, Mapping[str, Any] | Sequence[str]],
        edges: Iterable[tuple[Hashable, Hashable]] = (),
        *,
        scheme: str = "afterok",
        **options: Unpack[BuilderOptions],
    ) -> dict[Any, JobID]:
        """As ``Client.submit_dag``."""
        from pflux.api.dag import levels, parents_of

        parents = parents_of(nodes, edges)
        ids: dict[Any, JobID] = {}
        for level in levels(parents):
            jobspecs = [
                _dag_jobspec(name, nodes, parents=parents, ids=ids, scheme=scheme, options=options)
                for name in level
            ]
            ids.update(zip(level, await self.submit_many(jobspecs), strict=True))
        return ids

    async def run_dag(
        self,
        nodes: Mapping[Hashable, Mapping[str, Any] | Sequence[str]],
        edges: Iterable[tuple[Hashable, Hashable]] = (),
        *,
        scheme: str = "afterok",
        **options: Unpack[BuilderOptions],
    ) -> dict[Any, tuple[JobID, JobResult]]:
        """As ``Client.run_dag``."""
        ids = await self.submit_dag(nodes, edges, scheme=scheme, **options)
        results = await self.wait_all(ids.values())
        return {name: (jobid, results[jobid]) for name, jobid in ids.items()}

    async def events(
        self,
        jobid: int,
        *,
        path: str = "eventlog",
        follow: bool = True,
        timeout: float | None = None,
    ) -> AsyncIterator[Event]:
        """As ``Client.events``."""
        reader = EventlogReader()
        if not follow:
            async for text in self._pieces(jobid, path):
                for event in reader.feed(text):
                    yield event
            reader.finish()
            return
        import asyncio

        payload = {"id": int(jobid), "path": path}
        replies = self.handle.stream("job-info.eventlog-watch", payload)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                reply = await asyncio.wait_for(anext(replies), remaining)
            except StopAsyncIteration:
                reader.finish()
                return
            except TimeoutError:
                assert timeout is not None
                raise RPCTimeout("a response to job-info.eventlog-watch", timeout) from None
            for event in reader.feed(reply["data"]):
                yield event

    async def events_many(
        self, jobids: Sequence[int], *, path: str = "eventlog"
    ) -> AsyncIterator[tuple[int, Event | RPCError]]:
        """As ``Client.events_many``."""
        async for index, item in self.follow_logs([(jobid, path) for jobid in jobids]):
            if item is not None:
                yield index, item

    async def follow_logs(
        self, logs: Sequence[tuple[int, str]]
    ) -> AsyncIterator[tuple[int, Event | RPCError | None]]:
        """As ``Client.follow_logs``, but the requests are sent when iteration begins."""
        import asyncio

        arrived: asyncio.Queue[tuple[int, Event | Exception | None]] = asyncio.Queue()

        async def follow(index: int, jobid: int, path: str) -> None:
            try:
                async for event in self.events(jobid, path=path):
                    arrived.put_nowait((index, event))
            except Exception as exc:  # an RPCError ends that log; anything else, all
                arrived.put_nowait((index, exc))
            else:
                arrived.put_nowait((index, None))

        tasks = [asyncio.ensure_future(follow(i, *log)) for i, log in enumerate(logs)]
        following = len(tasks)
        try:
            while following:
                index, item = await arrived.get()
                if isinstance(item, Event):
                    yield index, item
                    continue
                following -= 1
                if item is None or isinstance(item, RPCError):
                    yield index, item
                else:
                    raise item
        finally:
            for task in tasks:
                task.cancel()

    async def read_log(self, jobid: int, path: str = "eventlog") -> str:
        """As ``Client.read_log``."""
        return "".join([text async for text in self._pieces(jobid, path)])

    async def _pieces(self, jobid: int, path: str) -> AsyncIterator[str]:
        if path == "eventlog":
            yield (await self.lookup(jobid, ["eventlog"]))["eventlog"]
            return
        try:
            async for reply in self.handle.stream("kvs.get", {"key": _log_key(jobid, path)}):
                yield reply["value"]
        except RPCError as exc:
            raise _log_missing(exc, path) from None

    async def wait_event(
        self,
        jobid: int,
        name: str,
        *,
        match: Mapping[str, Any] | None = None,
        path: str = "eventlog",
    ) -> Event:
        """As ``Client.wait_event``."""
        async for event in self.events(jobid, path=path):
            if _matches(event, name, match):
                return event
        raise RPCError(errno.ENODATA, f"event {name!r} never received")

    async def raise_exception(
        self, jobid: int, etype: str = "cancel", severity: int = 0, note: str = ""
    ) -> None:
        """As ``Client.raise_exception``."""
        await self.handle.call("job-manager.raise", _raise_payload(jobid, etype, severity, note))

    async def cancel(self, jobid: int, note: str = "") -> None:
        """As ``Client.cancel``."""
        await self.raise_exception(jobid, "cancel", 0, note)

    async def kill(self, jobid: int, signum: int = 15) -> None:
        """As ``Client.kill``."""
        await self.handle.call("job-manager.kill", {"id": int(jobid), "signum": signum})

    async def send_stdin(
        self, jobid: int, data: bytes, *, ranks: str = "all", eof: bool = False
    ) -> None:
        """As ``Client.send_stdin``."""
        import asyncio

        payloads = _stdin_payloads(jobid, data, ranks, eof)
        calls = (self.handle.call("job-exec.stdin", payload) for payload in payloads)
        for answer in await asyncio.gather(*calls, return_exceptions=True):
            if isinstance(answer, BaseException):
                raise answer

    async def send_winsize(self, jobid: int, *, rows: int, cols: int) -> None:
        """As ``Client.send_winsize``."""
        payload = {"id": int(jobid), "rows": rows, "cols": cols}
        await self.handle.call("job-exec.winsize", payload)

    async def raise_many(
        self, jobids: Sequence[int], etype: str = "cancel", severity: int = 0, note: str = ""
    ) -> list[RPCError | None]:
        """As ``Client.raise_many``."""
        payloads = [_raise_payload(jobid, etype, severity, note) for jobid in jobids]
        return await self._each("job-manager.raise", payloads)

    async def kill_many(self, jobids: Sequence[int], signum: int = 15) -> list[RPCError | None]:
        """As ``Client.kill_many``."""
        payloads = [{"id": int(jobid), "signum": signum} for jobid in jobids]
        return await self._each("job-manager.kill", payloads)

    async def _each(self, topic: str, payloads: list[dict[str, Any]]) -> list[RPCError | None]:
        import asyncio

        calls = (self.handle.call(topic, payload) for payload in payloads)
        results = await asyncio.gather(*calls, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, RPCError):
                raise result
        return [result if isinstance(result, RPCError) else None for result in results]

    async def urgency(self, jobid: int, urgency: int | str) -> int:
        """As ``Client.urgency``."""
        payload = {"id": int(jobid), "urgency": _urgency(urgency)}
        return int((await self.handle.call("job-manager.urgency", payload))["old_urgency"])

    async def memo(self, jobid: int, memo: dict[str, Any], *, volatile: bool = False) -> None:
        """As ``Client.memo``."""
        payload = {"id": int(jobid), "memo": memo, "volatile": volatile}
        await self.handle.call("job-manager.memo", payload)

    async def list_jobs(
        self,
        *,
        states: int = 0,
        results: int = 0,
        userid: int = -1,
        max_entries: int = 0,
        attrs: Sequence[str] = ("all",),
        since: float = 0.0,
        name: str | None = None,
        queues: Sequence[str] = (),
    ) -> list[JobListing]:
        """As ``Client.list_jobs``."""
        payload = _list_payload(
            states, results, userid, max_entries, attrs, since=since, name=name, queues=queues
        )
        jobs = (await self.handle.call("job-list.list", payload))["jobs"]
        return _listings(jobs)

    async def job_info(self, jobid: int, attrs: Sequence[str] = ("all",)) -> JobListing:
        """As ``Client.job_info``."""
        payload = {"id": int(jobid), "attrs": list(attrs)}
        return _listing((await self.handle.call("job-list.list-id", payload))["job"])

    async def lookup(self, jobid: int, keys: Sequence[str]) -> dict[str, str]:
        """As ``Client.lookup``."""
        payload = {"id": int(jobid), "keys": list(keys)}
        reply = await self.handle.call("job-info.lookup", payload)
        return {key: reply[key] for key in keys}

    async def job_info_many(
        self, jobids: Sequence[int], attrs: Sequence[str] = ("all",)
    ) -> list[JobListing | RPCError]:
        """As ``Client.job_info_many``."""
        import asyncio

        calls = (self.job_info(jobid, attrs) for jobid in jobids)
        results = await asyncio.gather(*calls, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, RPCError):
                raise result
        return list(results)  # type: ignore[arg-type]

    async def attrs(self) -> dict[str, str]:
        """As ``Client.attrs``."""
        attrs: dict[str, str] = (await self.handle.call("broker.attrs", {}))["attrs"]
        return attrs

    async def set_attr(self, name: str, value: str) -> None:
        """As ``Client.set_attr``."""
        await self.handle.call("attr.set", {"name": name, "value": value})

    async def hostpids(self, jobid: int) -> list[str]:
        """As ``Client.hostpids``."""
        reply = await self.handle.call("job-exec.hostpids", {"id": int(jobid)})
        found: list[str] = reply["hostpids"]
        return found

    async def rexec(
        self,
        ranks: Sequence[int],
        command: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str | None = None,
        stdin: bool = False,
    ) -> AsyncIterator[tuple[int, dict[str, Any] | RPCError | None]]:
        """As ``Client.rexec``, the items as an async iterator; no input is fed here
        (``stdin`` True is refused)."""
        import asyncio

        from pflux.api.remote import exec_payload

        if stdin:
            raise PfluxError("rexec: stdin: only Client.rexec feeds a process's input")
        payload = exec_payload(command, env, cwd, stdin)
        arrived: asyncio.Queue[tuple[int, dict[str, Any] | RPCError | None]] = asyncio.Queue()

        async def follow(rank: int) -> None:
            try:
                async for entry in self.handle.stream("rexec.exec", payload, nodeid=rank):
                    arrived.put_nowait((rank, entry))
                arrived.put_nowait((rank, None))
            except RPCError as exc:
                arrived.put_nowait((rank, exc))

        tasks = [asyncio.ensure_future(follow(rank)) for rank in ranks]
        try:
            for _ in ranks:
                while (item := await arrived.get())[1] is not None and not isinstance(
                    item[1], RPCError
                ):
                    yield item
                yield item
        finally:
            for task in tasks:
                task.cancel()

    async def resource_status(self) -> dict[str, Any]:
        """As ``Client.resource_status``."""
        status: dict[str, Any] = await self.handle.call("sched.resource-status", {})
        return status

    async def drain_resources(
        self, targets: str, reason: str = "", *, mode: str | None = None
    ) -> None:
        """As ``Client.drain_resources``."""
        await self.handle.call("sched.drain", _drain_payload(targets, reason, mode))

    async def undrain_resources(
        self, targets: str, reason: str = "", *, mode: str | None = None
    ) -> None:
        """As ``Client.undrain_resources``."""
        await self.handle.call("sched.undrain", _drain_payload(targets, reason, mode))

    async def dmesg(
        self, *, follow: bool = False, new: bool = False
    ) -> AsyncIterator[dict[str, Any]]:
        """As ``Client.dmesg``, but the request is sent when the first entry is asked for."""
        async for entry in self.handle.stream("log.dmesg", {"follow": follow, "nobacklog": new}):
            yield entry

    async def clear_log(self) -> None:
        """As ``Client.clear_log``."""
        await self.handle.call("log.clear", {})

    async def shutdown(self) -> None:
        """As ``Client.shutdown``."""
        await self.handle.call("broker.shutdown", {})

    async def ping(self, service: str, payload: Any = None, *, rank: int | None = None) -> Any:
        """As ``Client.ping``."""
        nodeid = NODEID_ANY if rank is None else rank
        return await self.handle.call(f"{service}.ping", payload, nodeid=nodeid)

    async def publish_event(self, topic: str, payload: Any = None, *, private: bool = False) -> int:
        """As ``Client.publish_event``."""
        reply = await self.handle.call("event.pub", _event_payload(topic, payload, private))
        return int(reply["seq"])

    async def subscribe(self, topics: Sequence[str]) -> AsyncIterator[dict[str, Any]]:
        """As ``Client.subscribe``, subscribed when the first event is asked for."""
        for topic in topics:
            await self.handle.call("event.subscribe", {"topic": topic})
        while True:
            yield _event(await self.handle.next_event())

    async def log(self, message: str, *, severity: int = 6, appname: str = "logger") -> None:
        """As ``Client.log``."""
        rank = int((await self.attrs()).get("rank", 0))
        await self.handle.call("log.append", _log_payload(message, severity, appname, rank))

    async def modules(self) -> list[dict[str, Any]]:
        """As ``Client.modules``."""
        reply = await self.handle.call("module.list", {})
        return list(reply["mods"])

    async def config(self) -> dict[str, Any]:
        """As ``Client.config``."""
        return dict(await self.handle.call("config.get", {}))

    async def overlay_status(self) -> list[dict[str, Any]]:
        """As ``Client.overlay_status``."""
        reply = await self.handle.call("broker.overlay-status", {})
        return list(reply["ranks"])

    async def kvs_get(self, key: str, *, namespace: str | None = None) -> str:
        """As ``Client.kvs_get``."""
        reply = await self.handle.call("kvs.get", _kvs_payload(namespace, key=key))
        value: str = reply["value"]
        return value

    async def kvs_put(
        self,
        pairs: Iterable[tuple[str, str]],
        *,
        append: bool = False,
        namespace: str | None = None,
    ) -> None:
        """As ``Client.kvs_put``."""
        op = "append" if append else "put"
        ops = [[op, key, value] for key, value in pairs]
        await self.handle.call("kvs.commit", _kvs_payload(namespace, ops=ops))

    async def kvs_ls(self, key: str = ".", *, namespace: str | None = None) -> dict[str, str]:
        """As ``Client.kvs_ls``."""
        reply = await self.handle.call("kvs.ls", _kvs_payload(namespace, key=key))
        entries: dict[str, str] = reply["entries"]
        return entries

    async def kvs_readlink(self, key: str, *, namespace: str | None = None) -> dict[str, str]:
        """As ``Client.kvs_readlink``."""
        link: dict[str, str] = await self.handle.call(
            "kvs.readlink", _kvs_payload(namespace, key=key)
        )
        return link

    async def kvs_commit(self, ops: list[list[Any]], *, namespace: str | None = None) -> None:
        """As ``Client.kvs_commit``."""
        await self.handle.call("kvs.commit", _kvs_payload(namespace, ops=ops))

    async def kvs_walk(
        self, key: str = ".", *, namespace: str | None = None
    ) -> AsyncIterator[tuple[str, str]]:
        """As ``Client.kvs_walk``: iterate with ``async for``."""
        async for reply in self.handle.stream("kvs.walk", _kvs_payload(namespace, key=key)):
            for entry_key, value in reply["entries"]:
                yield entry_key, value

    async def kvs_namespaces(self) -> list[dict[str, Any]]:
        """As ``Client.kvs_namespaces``."""
        reply = await self.handle.call("kvs.namespace-list", {})
        namespaces: list[dict[str, Any]] = reply["namespaces"]
        return namespaces

    async def kvs_namespace_create(self, name: str, owner: int) -> None:
        """As ``Client.kvs_namespace_create``."""
        await self.handle.call("kvs.namespace-create", {"name": name, "owner": owner})

    async def kvs_namespace_remove(self, name: str) -> None:
        """As ``Client.kvs_namespace_remove``."""
        await self.handle.call("kvs.namespace-remove", {"name": name})

    async def kvs_dropcache(self) -> None:
        """As ``Client.kvs_dropcache``."""
        await self.handle.call("kvs.dropcache", {})

    def kvs_watch(
        self,
        keys: Sequence[str],
        *,
        append: bool = False,
        waitcreate: bool = False,
        namespace: str | None = None,
    ) -> AsyncKVSWatch:
        """As ``Client.kvs_watch``: iterate with ``async for``; the requests are sent
        when iteration begins."""
        from pflux.api.kvswatch import AsyncKVSWatch

        flags = {"append": append, "waitcreate": waitcreate}
        return AsyncKVSWatch(self.handle, [_kvs_payload(namespace, key=k, **flags) for k in keys])

    async def raise_all(
        self,
        etype: str = "cancel",
        severity: int = 0,
        note: str = "",
        *,
        userid: int = -1,
        states: int | None = None,
        dry_run: bool = False,
    ) -> int:
        """As ``Client.raise_all``."""
        payload = _raise_all_payload(
            etype, severity, note, userid=userid, states=states, dry_run=dry_run
        )
        return int((await self.handle.call("job-manager.raiseall", payload))["count"])

    async def update(self, jobid: int, updates: Mapping[str, Any]) -> None:
        """As ``Client.update``."""
        payload = {"id": int(jobid), "updates": dict(updates)}
        await self.handle.call("job-manager.update", payload)

    async def last_jobs(self, slice: str = "[:1]") -> list[JobID]:
        """As ``Client.last_jobs``."""
        reply = await self.handle.call("job-manager.history.get", {"slice": slice})
        return [JobID(jobid) for jobid in reply["jobs"]]

    async def purge(
        self,
        *,
        age_limit: float | None = None,
        num_limit: int | None = None,
        batch: int = 50,
        force: bool = False,
    ) -> tuple[int, int]:
        """As ``Client.purge``."""
        payload = _purge_payload(age_limit, num_limit, batch, force)
        return _purged(await self.handle.call("job-manager.purge", payload))

    async def purge_id(self, jobid: int, *, force: bool = False) -> tuple[int, int]:
        """As ``Client.purge_id``."""
        payload = {"id": int(jobid), "force": force}
        return _purged(await self.handle.call("job-manager.purge-id", payload))

    async def job_stats(self) -> dict[str, Any]:
        """As ``Client.job_stats``."""
        stats: dict[str, Any] = await self.handle.call("job-list.job-stats", {})
        return stats

    async def alloc_query(self) -> AllocCounts:
        """As ``Client.alloc_query``."""
        return _alloc_counts(await self.handle.call("job-manager.alloc-query", {}))

    async def queues(self) -> list[str]:
        """As ``Client.queues``."""
        names: list[str] = (await self.handle.call("job-manager.queue-list", {}))["queues"]
        return names

    async def queue_status(self, *, queue: str | None = None) -> QueueStatus:
        """As ``Client.queue_status``."""
        reply = await self.handle.call("job-manager.queue-status", _named({}, queue))
        return _queue_status(reply)

    async def queue_enable(
        self, enable: bool, reason: str = "", *, queue: str | None = None, all: bool = False
    ) -> None:
        """As ``Client.queue_enable``."""
        payload = _named({"enable": enable, "reason": reason}, queue, all)
        await self.handle.call("job-manager.queue-enable", payload)

    async def queue_start(
        self,
        start: bool,
        reason: str = "",
        *,
        checkpoint: bool = True,
        queue: str | None = None,
        all: bool = False,
    ) -> None:
        """As ``Client.queue_start``."""
        payload = _named(
            {"start": start, "reason": reason, "nocheckpoint": not checkpoint}, queue, all
        )
        await self.handle.call("job-manager.queue-start", payload)

    async def drain(self, timeout: float | None = None) -> None:
        """As ``Client.drain``."""
        await self.handle.call("job-manager.drain", {}, wait=True, timeout=timeout)

    async def idle(self, timeout: float | None = None) -> int:
        """As ``Client.idle``."""
        reply = await self.handle.call("job-manager.idle", {}, wait=True, timeout=timeout)
        return int(reply["pending"])
