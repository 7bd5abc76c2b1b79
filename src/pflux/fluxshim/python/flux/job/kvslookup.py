"""``flux.job.kvslookup``: a job's stored data (``jobspec``, ``R``, ``J``, ``eventlog``...)
by ``job-info.lookup``, for one job (``job_info_lookup``, ``job_kvs_lookup``) or many
(``JobKVSLookup``).

flux-core's lookup flags are applied here, by the client: ``FLUX_JOB_LOOKUP_CURRENT``
(the jobspec and R as the job's ``jobspec-update`` and ``resource-update`` events
left them: the eventlog is read with them and replayed onto them) and
``FLUX_JOB_LOOKUP_JSON_DECODE`` (those two as objects). ``original`` gives the
jobspec as submitted, unwrapped from J.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import json

from _pfluxcore import update

from flux.constants import FLUX_JOB_LOOKUP_CURRENT, FLUX_JOB_LOOKUP_JSON_DECODE
from flux.job.JobID import JobID
from flux.rpc import RPC

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterable

    from flux.core.handle import Flux

_UPDATED = ("jobspec", "R")  # the keys events change


def _decode_field(data: dict[str, Any], key: str) -> None:
    # what does not decode is left as text, as flux-core leaves it
    with contextlib.suppress(ValueError, TypeError):
        data[key] = json.loads(data[key])


def decode_special_data(data: dict[str, Any]) -> None:
    """Decode ``jobspec`` and ``R``, where present, into objects."""
    for key in _UPDATED:
        if key in data:
            _decode_field(data, key)


def _current(data: dict[str, Any], eventlog: str, decoded: bool) -> None:
    """Replay the eventlog's updates onto ``jobspec`` and ``R`` (text unless ``decoded``)."""
    objects = {key: json.loads(data[key]) for key in _UPDATED if key in data}
    changed = set()
    for line in eventlog.splitlines():
        if not line:
            continue
        event = json.loads(line)
        context = event.get("context", {})
        if event.get("name") == "jobspec-update" and "jobspec" in objects:
            update.apply(objects["jobspec"], context)
            changed.add("jobspec")
        elif event.get("name") == "resource-update" and "R" in objects and "expiration" in context:
            update.set_path(objects["R"], "execution.expiration", context["expiration"])
            changed.add("R")
    for key, value in objects.items():
        if decoded:
            data[key] = value
        elif key in changed:
            data[key] = json.dumps(value, separators=(",", ":"))


class JobInfoLookupRPC(RPC):
    """``job-info.lookup``'s answer: ``get()`` as stored, ``get_decode()`` with the
    jobspec and R as objects."""

    jobid: Any = None

    def __init__(self, flux_handle: Flux, jobid: Any, keys: Iterable[str], flags: int = 0) -> None:
        self.jobid = jobid
        self.keys = list(keys)
        self.flags = flags
        asked = list(self.keys)
        self._with_eventlog = bool(flags & FLUX_JOB_LOOKUP_CURRENT) and "eventlog" not in asked
        if flags & FLUX_JOB_LOOKUP_CURRENT and any(key in asked for key in _UPDATED):
            if self._with_eventlog:
                asked.append("eventlog")
        else:
            self._with_eventlog = False
        super().__init__(flux_handle, "job-info.lookup", {"id": int(jobid), "keys": asked})

    def _answer(self, decoded: bool) -> dict[str, Any]:
        data: dict[str, Any] = dict(super().get())
        eventlog = data.pop("eventlog") if self._with_eventlog else data.get("eventlog")
        if self.flags & FLUX_JOB_LOOKUP_CURRENT and eventlog is not None:
            _current(data, eventlog, decoded)
        elif decoded:
            decode_special_data(data)
        return data

    def get(self) -> dict[str, Any]:
        return self._answer(bool(self.flags & FLUX_JOB_LOOKUP_JSON_DECODE))

    def get_decode(self) -> dict[str, Any]:
        return self._answer(True)


def job_info_lookup(
    flux_handle: Flux, jobid: Any, keys: Iterable[str] = ("jobspec",), flags: int = 0
) -> JobInfoLookupRPC:
    """Ask for ``keys`` of the job's data (flux-core's ``FLUX_JOB_LOOKUP_*`` ``flags``)."""
    return JobInfoLookupRPC(flux_handle, jobid, keys, flags)


def _lookup_keys(keys: list[str], original: bool) -> list[str]:
    """The keys to ask for: J in place of the jobspec when the original is wanted."""
    if original and "jobspec" in keys:
        keys = [key for key in keys if key != "jobspec"]
        if "J" not in keys:
            keys.append("J")
    return keys


def _unwrap(J: str) -> str:  # noqa: N803 - RFC 15's name
    """The payload of J (RFC 15: ``HEADER.PAYLOAD.SIGNATURE``, base64url)."""
    payload = J.split(".")[1]
    return base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode()


def _update_keys(data: dict[str, Any], decode: bool, keys: list[str], original: bool) -> None:
    if original and "jobspec" in keys:
        data["jobspec"] = _unwrap(data["J"])
        if decode:
            _decode_field(data, "jobspec")
        if "J" not in keys:
            data.pop("J")


def job_kvs_lookup(
    flux_handle: Flux,
    jobid: Any,
    keys: Iterable[str] = ("jobspec",),
    decode: bool = True,
    original: bool = False,
    base: bool = False,
) -> dict[str, Any] | None:
    """One job's ``keys`` (``jobspec`` and ``R`` as objects with ``decode``, as submitted
    with ``original``, as stored, without the updates of the eventlog, with ``base``);
    None for an unknown job."""
    keys = list(keys)
    flags = 0 if base else FLUX_JOB_LOOKUP_CURRENT
    rpc = job_info_lookup(flux_handle, jobid, _lookup_keys(keys, original), flags)
    try:
        data = rpc.get_decode() if decode else rpc.get()
    except FileNotFoundError:
        return None
    _update_keys(data, decode, keys, original)
    return data


class JobKVSLookupFuture:
    """The lookups of several jobs: ``get()``/``get_decode()`` give the answers of those
    found, the others' errors going to ``errors``."""

    def __init__(self) -> None:
        self.children: list[JobInfoLookupRPC] = []
        self.errors: list[str] = []

    def push(self, child: JobInfoLookupRPC) -> None:
        self.children.append(child)

    def wait_for(self, timeout: float = -1.0) -> JobKVSLookupFuture:
        for child in self.children:
            child.wait_for(timeout)
        return self

    def _get(self, decode: bool) -> list[dict[str, Any]]:
        jobs = []
        for child in self.children:
            try:
                jobs.append(child.get_decode() if decode else child.get())
            except OSError as exc:
                if exc.errno == errno.ENOENT:
                    self.errors.append(f"JobID {JobID(child.jobid).orig} unknown")
                else:
                    self.errors.append(f"rpc: {exc.strerror}")
        return jobs

    def get(self) -> list[dict[str, Any]]:
        return self._get(False)

    def get_decode(self) -> list[dict[str, Any]]:
        return self._get(True)


class JobKVSLookup:
    """Several jobs' data (``ids``), as ``job_kvs_lookup`` gives one's; ``data()`` runs
    the lookups, ``errors`` then names the jobs that failed."""

    def __init__(
        self,
        flux_handle: Flux,
        ids: Iterable[Any] = (),
        keys: Iterable[str] = ("jobspec",),
        decode: bool = True,
        original: bool = False,
        base: bool = False,
    ) -> None:
        self.handle = flux_handle
        self.keys = list(keys)
        self.ids = [JobID(jobid) for jobid in ids]
        self.decode = decode
        self.original = original
        self.base = base
        self.errors: list[str] = []
        self.keyslookup = _lookup_keys(list(self.keys), original)

    def fetch_data(self) -> JobKVSLookupFuture:
        """Send every lookup; the returned future gives their answers."""
        flags = 0 if self.base else FLUX_JOB_LOOKUP_CURRENT
        future = JobKVSLookupFuture()
        for jobid in self.ids:
            future.push(job_info_lookup(self.handle, jobid, self.keyslookup, flags))
        return future

    def data(self) -> list[dict[str, Any]]:
        """The answers of the jobs found (``errors``: the others)."""
        future = self.fetch_data()
        data = future.get_decode() if self.decode else future.get()
        self.errors = future.errors
        for job_data in data:
            _update_keys(job_data, self.decode, self.keys, self.original)
        return data
