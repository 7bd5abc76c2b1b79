"""Submitting jobs: ``submit_async`` (a future with ``get_id()``) and ``submit``.

A process that is not the instance owner sends each jobspec signed, as RFC 15's
J under MUNGE (``_pfluxcore.sign``), as flux-core's clients sign with
flux-security; the owner sends the jobspec as it is, and job-ingest signs it.
"""

from __future__ import annotations

import errno
import json

from flux.constants import FLUX_JOB_URGENCY_DEFAULT
from flux.core.handle import _text
from flux.job.JobID import JobID
from flux.rpc import RPC

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from flux.core.handle import Flux

# job-ingest.submit's flag bits (pflux's: debug, waitable)
_INGEST_DEBUG = 1
_INGEST_WAITABLE = 2


def _jobspec_object(jobspec: Any) -> dict[str, Any]:
    """A Jobspec, or its JSON text (str or bytes), as the object job-ingest takes."""
    if jobspec is None:
        raise OSError(errno.EINVAL, "jobspec must not be None/NULL")
    if hasattr(jobspec, "dumps"):
        if _plain_jobspec(jobspec):  # its object as it is: the request encodes it once
            return jobspec.jobspec  # type: ignore[no-any-return]
        jobspec = jobspec.dumps()
    if isinstance(jobspec, bytes):
        jobspec = jobspec.decode("utf-8")
    if isinstance(jobspec, str):
        try:
            jobspec = json.loads(jobspec)
        except ValueError as exc:
            raise OSError(errno.EINVAL, f"invalid jobspec: not JSON: {exc}") from None
    if not isinstance(jobspec, dict):
        raise TypeError(
            f"jobspec must be a Jobspec, a str or bytes of JSON, not {type(jobspec).__name__}"
        )
    return jobspec


def _plain_jobspec(jobspec: Any) -> bool:
    """Whether ``jobspec`` is a Jobspec whose ``dumps`` is the package's own, so that its
    text would be its object's: the request then encodes the object once, rather than
    it being made into text and read back first."""
    from flux.job.Jobspec import Jobspec

    return (
        isinstance(jobspec, Jobspec)
        and type(jobspec).dumps is Jobspec.dumps
        and "dumps" not in vars(jobspec)
        and isinstance(jobspec.jobspec, dict)
    )


class SubmitFuture(RPC):
    """The future of a submission; ``get_id()`` gives the job's JobID."""

    def get_id(self) -> JobID:
        return JobID(self.get()["id"])


def submit_async(
    flux_handle: Flux,
    jobspec: Any,
    urgency: int = FLUX_JOB_URGENCY_DEFAULT,
    waitable: bool = False,
    debug: bool = False,
    pre_signed: bool = False,
    novalidate: bool = False,
) -> SubmitFuture:
    """Submit ``jobspec`` (a Jobspec, or its JSON text); the future gives the job id.

    ``waitable`` (instance owner only) lets ``flux.job.wait`` take the job's result;
    ``debug`` adds debug events. With ``pre_signed``, ``jobspec`` is J, signed
    already. A pflux instance validates every jobspec: ``novalidate`` is refused.
    """
    if novalidate:
        raise OSError(errno.EINVAL, "submit: novalidate: pflux validates every jobspec")
    flags = (_INGEST_WAITABLE if waitable else 0) | (_INGEST_DEBUG if debug else 0)
    payload: dict[str, Any] = {"urgency": urgency, "flags": flags}
    if pre_signed:
        payload["J"] = _text(jobspec, "a pre_signed jobspec")
    elif _signs(flux_handle):
        from _pfluxcore.sign import SignError, wrap

        text = json.dumps(_jobspec_object(jobspec), separators=(",", ":"))
        try:
            payload["J"] = wrap(text)
        except SignError as exc:
            raise OSError(errno.EPERM, f"cannot sign the job request: {exc}") from None
    else:
        payload["jobspec"] = _jobspec_object(jobspec)
    return SubmitFuture(flux_handle, "job-ingest.submit", payload)


def _signs(h: Flux) -> bool:
    """Whether this process signs what it submits (``_pfluxcore.sign.client_signs``),
    decided once a handle."""
    if h._signs is None:
        from _pfluxcore.sign import client_signs

        # a ping's answer says how the instance takes this process, as flux-core's does
        hello = h.rpc("broker.ping", {}).get()
        h._signs = client_signs(int(hello.get("rolemask", 0)) if isinstance(hello, dict) else 0)
    return h._signs


def submit_get_id(future: SubmitFuture) -> JobID:
    """The job id of a ``submit_async`` future (waiting for it)."""
    if future is None:
        raise OSError(errno.EINVAL, "future must not be None/NULL")
    return future.get_id()


def submit(
    flux_handle: Flux,
    jobspec: Any,
    urgency: int = FLUX_JOB_URGENCY_DEFAULT,
    waitable: bool = False,
    debug: bool = False,
    pre_signed: bool = False,
) -> JobID:
    """Submit ``jobspec`` and return its job id."""
    return submit_async(flux_handle, jobspec, urgency, waitable, debug, pre_signed).get_id()
