"""``flux.job.timeleft``: the seconds the calling job (or the enclosing instance) has
left, as flux-core's ``flux_job_timeleft``.

In a job (``FLUX_JOB_ID`` set) the job's expiration comes from job-list; a pending
job is an error, one no longer running has 0 left. Elsewhere, the instance's
resources' expiration (``sched.resource-status``), or, for an instance that is a
job (its ``jobid`` and ``parent-uri`` attributes), that job's in the parent
instance, since a pflux instance's R does not carry its job's expiration. No
expiration is ``inf``.
"""

from __future__ import annotations

import errno
import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from flux.core.handle import Flux

_PENDING = 2 | 4 | 8  # DEPEND, PRIORITY, SCHED
_RUN = 16


def timeleft(flux_handle: Flux | None = None) -> float:
    """Seconds left (``inf``: no time limit); OSError with flux-core's message when
    the job cannot be found or has not started. Opens a handle when given none."""
    if flux_handle is None:
        import flux

        flux_handle = flux.Flux()
    jobid = os.environ.get("FLUX_JOB_ID")
    expiration = _instance(flux_handle) if jobid is None else _job(flux_handle, jobid)
    if expiration == 0.0:
        return float("inf")
    return max(expiration - time.time(), 0.0)


def _job(flux_handle: Flux, text: str) -> float:
    from flux.job.JobID import JobID
    from flux.job.list import job_list_id

    try:
        jobid = JobID(text)
    except (ValueError, TypeError, OverflowError):
        raise OSError(errno.EINVAL, f"failed to parse jobid {text}") from None
    try:
        job = job_list_id(flux_handle, jobid, ["expiration", "state"]).get()["job"]
    except FileNotFoundError:
        raise OSError(errno.ENOENT, f"{text}: no such jobid") from None
    except OSError as exc:
        raise OSError(exc.errno, f"flux_job_list_id: {text}: {exc.strerror}") from None
    if job["state"] & _PENDING:
        raise OSError(errno.EINVAL, f"job {text} has not started")
    if job["state"] != _RUN:
        return 1.0  # long past: nothing left
    return float(job.get("expiration", 0.0))


def _instance(flux_handle: Flux) -> float:
    from flux.rpc import RPC

    try:
        status = RPC(flux_handle, "sched.resource-status", {}, nodeid=0).get()
        expiration = float(status["all"].get("execution", {}).get("expiration", 0.0))
        if expiration == 0.0:
            expiration = _as_job(flux_handle)
    except (OSError, KeyError, TypeError, AttributeError, ValueError):
        raise OSError(errno.EIO, "failed to get instance expiration") from None
    return expiration


def _as_job(flux_handle: Flux) -> float:
    """The expiration of the job this instance runs as, in its parent (0: none)."""
    try:
        jobid = flux_handle.attr_get("jobid")
        parent_uri = flux_handle.attr_get("parent-uri")
    except FileNotFoundError:
        return 0.0  # not a job of another instance
    import flux

    parent = flux.Flux(parent_uri)
    try:
        return _job(parent, jobid)
    finally:
        parent.close()
