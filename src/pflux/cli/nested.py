"""An instance started inside a pflux job (``flux start CMD`` or ``flux broker CMD``
in a job's task, as Parsl and Maestro launch one): nested, as flux-core's.

A job's tasks have the enclosing instance's URI (PFLUX_URI), the job's id
(FLUX_JOB_ID) and its guest namespace (PFLUX_KVS_NAMESPACE, which only a job
shell sets). An instance started there manages what the job's R gives this host
(the first of its ranks on this host, else its first rank), unless
``--cores``/``--gpus``/``[resource]`` say otherwise; its tasks run on the CPUs the
job's shell bound it to. It has flux-core's attributes of a nested instance
(``jobid``, ``parent-uri``, ``parent-kvs-namespace``, ``jobid-path``,
``instance-level`` one more than the enclosing one's), and its initial program
reaches it, never the enclosing instance: a drain or shutdown there stays there.
Once it serves, and before its initial program runs, it posts its URI to the job
as the memo ``uri`` (the ``memo`` event, ``user.uri`` in job-list's annotations),
as flux-core's broker does, so that ``pflux uri JOBID``, ``pflux jobs -o {uri}``
and ``pflux pstree`` find it.
"""

from __future__ import annotations

import os
import socket

from pflux.errors import PfluxError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

__all__ = ["enclosing_job", "post_uri"]


def enclosing_job() -> tuple[dict[str, str], dict[str, int]] | None:
    """The attributes of an instance started here, and the cores and GPUs of the
    enclosing job on this host; None outside a pflux job."""
    jobid = os.environ.get("FLUX_JOB_ID")
    uri = os.environ.get("PFLUX_URI")
    namespace = os.environ.get("PFLUX_KVS_NAMESPACE")
    if not (jobid and uri and namespace):
        return None
    from pflux import Client
    from pflux.spec.fluid import JobID
    from pflux.spec.resource import ResourceSet

    try:
        job = JobID.parse(jobid)
        with Client(uri) as client:
            level = int(client.attrs().get("instance-level", "0"))
            R = ResourceSet.from_json(_json(client.lookup(job, ["R"])["R"]))  # noqa: N806
    except PfluxError as exc:
        raise PfluxError(
            f"cannot read the resources of job {jobid} (FLUX_JOB_ID) from its instance"
            f" ({uri}): {exc}"
        ) from None
    host = socket.gethostname()
    rank = next((r for r, t in R.targets.items() if t.hostname == host), min(R.targets))
    attrs = {
        "jobid": job.f58,
        "parent-uri": uri,
        "parent-kvs-namespace": namespace,
        "jobid-path": os.environ.get("FLUX_JOB_ID_PATH") or f"/{job.f58}",
        "instance-level": str(level + 1),
    }
    return attrs, {"cores": R.ncores(rank), "gpus": R.ngpus(rank)}


def post_uri(attrs: dict[str, str], uri: str) -> None:
    """Tell the enclosing instance this instance's URI: the memo ``uri`` on the job
    (a ``local://`` URI: pflux's instances are reached on this host only)."""
    from pflux import Client
    from pflux.spec.fluid import JobID

    try:
        with Client(attrs["parent-uri"]) as client:
            client.memo(JobID.parse(attrs["jobid"]), {"uri": uri})
    except PfluxError as exc:
        raise PfluxError(f"job-manager.memo uri: {exc}") from None


def _json(text: str) -> Any:
    import json

    return json.loads(text)
