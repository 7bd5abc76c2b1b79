"""Submitting jobs and waiting for them: the request methods both clients share
(``pflux.api.exchange``), and how a job ended (``JobResult``).

A client that is not the instance owner sends each jobspec signed, as RFC 15's J
under MUNGE (``_pfluxcore.sign``): the instance runs it as its signer and no one
else. The owner sends the jobspec as it is, and job-ingest signs it.
"""

from __future__ import annotations

# the class collections.abc re-exports, without the collections package (a command
# that loads it pays for OrderedDict, Counter, ChainMap...)
from _collections_abc import Mapping

from _pfluxcore.sign import SignError, client_signs, wrap

from pflux.api.exchange import Call, Exchange, ask
from pflux.errors import PfluxError
from pflux.spec import jsontext
from pflux.spec.fluid import JOBID_ANY as WAIT_ANY
from pflux.spec.fluid import JobID
from pflux.spec.statebits import (
    FLAG_DEBUG,
    FLAG_WAITABLE,
    URGENCY_DEFAULT,
    URGENCY_EXPEDITE,
    URGENCY_HOLD,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Hashable, Iterable, Sequence
    from typing import Any, NamedTuple, Unpack

    from pflux.api.options import BuilderOptions
else:
    from pflux.spec.typedtuple import NamedTuple

SUBMIT = "job-ingest.submit"
#: ``submit_each``'s submissions in flight at once: enough to keep ingest's batches
#: full, few enough that a million copies cost the client a window's memory, not theirs,
#: and that another client's request waits behind a window's work at most (the broker
#: serves requests in the order they come: 4096 in flight cost it seconds)
SUBMIT_WINDOW = 256
URGENCY_NAMES = {"hold": URGENCY_HOLD, "expedite": URGENCY_EXPEDITE, "default": URGENCY_DEFAULT}


class JobResult(NamedTuple):
    """How a job ended: ``success``, and ``errstr`` saying why not."""

    id: JobID
    success: bool
    errstr: str


def urgency_of(urgency: int | str) -> int:
    """An urgency as a number: 0-31 or a name (``hold``, ``expedite``, ``default``)."""
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


def submit_payload(
    jobspec: Mapping[str, Any], urgency: int | str, waitable: bool, debug: bool, sign: bool
) -> dict[str, Any]:
    """``job-ingest.submit``'s request: with ``sign``, J (the jobspec signed) for the
    jobspec; PfluxError if it cannot be signed."""
    flags = (FLAG_WAITABLE if waitable else 0) | (FLAG_DEBUG if debug else 0)
    urgency = urgency_of(urgency)
    if not sign:
        return {"jobspec": dict(jobspec), "urgency": urgency, "flags": flags}
    try:
        signed = wrap(jsontext.dumps(dict(jobspec)))
    except SignError as exc:
        raise PfluxError(f"cannot sign the job request: {exc}") from None
    return {"J": signed, "urgency": urgency, "flags": flags}


def signs() -> Exchange[bool]:
    """Whether this process signs what it submits (``_pfluxcore.sign.client_signs``):
    unless the instance takes it as its owner, as the answer to the ping every client
    makes on connecting says (no request of its own)."""
    (hello,) = yield [Call("broker.ping", {}, cached=True)]
    return client_signs(int(hello.get("rolemask", 0)) if isinstance(hello, dict) else 0)


def submit_window(window: int) -> int:
    """``submit_each``'s window, checked."""
    if type(window) is not int or window < 1:
        raise PfluxError(f"window: must be an integer >= 1, got {window!r}")
    return window


def _result(reply: dict[str, Any]) -> JobResult:
    return JobResult(JobID(reply["id"]), bool(reply["success"]), reply.get("errstr", ""))


def submit(
    job: Mapping[str, Any] | Sequence[str],
    *,
    urgency: int | str = URGENCY_DEFAULT,
    waitable: bool = False,
    debug: bool = False,
    **options: Unpack[BuilderOptions],
) -> Exchange[JobID]:
    """Submit a jobspec, or a command line with builder options; return its id."""
    if isinstance(job, Mapping) and not options:  # as jobspec_of, which a command needs
        jobspec = dict(job)
    else:
        from pflux.api.jobspec import jobspec_of

        jobspec = jobspec_of(job, **options)
    (jobid,) = yield from submit_many([jobspec], urgency=urgency, waitable=waitable, debug=debug)
    return jobid


def submit_many(
    jobspecs: Sequence[Mapping[str, Any]],
    *,
    urgency: int | str = URGENCY_DEFAULT,
    waitable: bool = False,
    debug: bool = False,
) -> Exchange[list[JobID]]:
    """Submit many jobspecs with every request in flight at once."""
    sign = yield from signs()
    batch = [Call(SUBMIT, submit_payload(js, urgency, waitable, debug, sign)) for js in jobspecs]
    replies = yield batch
    return [JobID(reply["id"]) for reply in replies]


def wait(jobid: int, timeout: float | None = None) -> Exchange[JobResult]:
    """Wait until the job is inactive (any job, any number of times)."""
    payload = {"id": int(jobid)}
    return _result((yield from ask("job-manager.result", payload, wait=True, timeout=timeout)))


def reap(jobid: int | None = None, timeout: float | None = None) -> Exchange[JobResult]:
    """Take the result of a job submitted ``waitable`` (flux's ``flux.job.wait``):
    that job's, or with no id the next waitable job's to end. A result is taken
    once; ``RPCError`` ECHILD when there is none to wait for."""
    payload = {"id": WAIT_ANY if jobid is None else int(jobid)}
    return _result((yield from ask("job-manager.wait", payload, wait=True, timeout=timeout)))


def wait_all(jobids: Iterable[int]) -> Exchange[dict[JobID, JobResult]]:
    """Wait for every job, all waits in flight at once."""
    replies = yield [Call("job-manager.result", {"id": int(j)}, wait=True) for j in jobids]
    results = [_result(reply) for reply in replies]
    return {result.id: result for result in results}


def submit_dag(
    nodes: Mapping[Hashable, Mapping[str, Any] | Sequence[str]],
    edges: Iterable[tuple[Hashable, Hashable]] = (),
    *,
    scheme: str = "afterok",
    **options: Unpack[BuilderOptions],
) -> Exchange[dict[Any, JobID]]:
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
        ids.update(zip(level, (yield from submit_many(jobspecs)), strict=True))
    return ids


def run_dag(
    nodes: Mapping[Hashable, Mapping[str, Any] | Sequence[str]],
    edges: Iterable[tuple[Hashable, Hashable]] = (),
    *,
    scheme: str = "afterok",
    **options: Unpack[BuilderOptions],
) -> Exchange[dict[Any, tuple[JobID, JobResult]]]:
    """``submit_dag`` and wait for every node: each node's id and result."""
    ids = yield from submit_dag(nodes, edges, scheme=scheme, **options)
    results = yield from wait_all(ids.values())
    return {name: (jobid, results[jobid]) for name, jobid in ids.items()}


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
    from pflux.api.jobspec import jobspec_of

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
