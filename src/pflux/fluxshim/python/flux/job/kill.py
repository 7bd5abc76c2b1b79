"""Signalling, canceling and raising exceptions on jobs (``job-manager.kill``, ``.raise``)."""

from __future__ import annotations

import signal

from flux.future import Future
from flux.rpc import RPC

TYPE_CHECKING = False
if TYPE_CHECKING:
    from flux.core.handle import Flux
    from flux.job.JobID import JobID


def kill_async(flux_handle: Flux, jobid: JobID | int, signum: int | None = None) -> Future:
    """Send ``signum`` (default SIGTERM) to a running job's tasks."""
    if not signum:
        signum = signal.SIGTERM
    return RPC(flux_handle, "job-manager.kill", {"id": int(jobid), "signum": int(signum)})


def kill(flux_handle: Flux, jobid: JobID | int, signum: int | None = None) -> None:
    """Send ``signum`` (default SIGTERM) to a running job's tasks, and wait."""
    kill_async(flux_handle, jobid, signum).get()


def job_raise_async(
    flux_handle: Flux,
    jobid: JobID | int,
    exc_type: str,
    severity: int = 0,
    note: str | None = None,
) -> Future:
    """Raise an exception of type ``exc_type`` on a job (severity 0 ends it)."""
    payload = {"id": int(jobid), "type": exc_type, "severity": severity, "note": note or ""}
    return RPC(flux_handle, "job-manager.raise", payload)


def job_raise(
    flux_handle: Flux,
    jobid: JobID | int,
    exc_type: str,
    severity: int = 0,
    note: str | None = None,
) -> None:
    """Raise an exception on a job, and wait."""
    job_raise_async(flux_handle, jobid, exc_type, severity, note).get()


def cancel_async(flux_handle: Flux, jobid: JobID | int, reason: str | None = None) -> Future:
    """Cancel a pending or running job (a ``cancel`` exception, severity 0)."""
    return job_raise_async(flux_handle, jobid, "cancel", 0, reason)


def cancel(flux_handle: Flux, jobid: JobID | int, reason: str | None = None) -> None:
    """Cancel a pending or running job, and wait."""
    cancel_async(flux_handle, jobid, reason).get()
