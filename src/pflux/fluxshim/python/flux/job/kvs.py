"""``flux.job.kvs``: a job's KVS directory (RFC 16's ``job.<kvs id>``) and its guest one."""

from __future__ import annotations

from flux.job.JobID import JobID

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from flux.core.handle import Flux
    from flux.kvs import KVSDir


def job_kvs(flux_handle: Flux, jobid: Any) -> KVSDir:
    """The job's KVS directory (``jobspec``, ``R``, ``eventlog``...)."""
    import flux.kvs

    return flux.kvs.get_dir(flux_handle, JobID(jobid).kvs)


def job_kvs_guest(flux_handle: Flux, jobid: Any) -> KVSDir:
    """The job's guest directory (``output``, ``exec.eventlog``...)."""
    import flux.kvs

    return flux.kvs.get_dir(flux_handle, f"{JobID(jobid).kvs}.guest")
