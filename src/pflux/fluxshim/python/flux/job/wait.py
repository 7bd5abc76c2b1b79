"""Waiting for jobs: ``wait`` (a waitable job's end, ``job-manager.wait``) and
``result`` (any job's outcome, read from its eventlog)."""

from __future__ import annotations

import errno
from collections import namedtuple

from flux.constants import (
    FLUX_JOB_RESULT_CANCELED,
    FLUX_JOB_RESULT_COMPLETED,
    FLUX_JOB_RESULT_FAILED,
    FLUX_JOB_RESULT_TIMEOUT,
    FLUX_JOBID_ANY,
    FLUX_RPC_STREAMING,
)
from flux.job.JobID import JobID
from flux.rpc import RPC

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from flux.core.handle import Flux
    from flux.job.info import JobInfo

JobWaitResult = namedtuple("JobWaitResult", "jobid, success, errstr")


class JobWaitFuture(RPC):
    def get_status(self) -> JobWaitResult:
        """The job's ``(jobid, success, errstr)``; errstr is bytes, as flux-core's."""
        resp = self.get()
        return JobWaitResult(int(resp["id"]), bool(resp["success"]), resp["errstr"].encode())


def wait_async(flux_handle: Flux, jobid: int = FLUX_JOBID_ANY) -> JobWaitFuture:
    """Wait for a waitable job (default: any) to end."""
    return JobWaitFuture(flux_handle, "job-manager.wait", {"id": int(jobid)})


def wait_get_status(future: JobWaitFuture) -> JobWaitResult:
    if future is None:
        raise OSError(errno.EINVAL, "future must not be None/NULL")
    return future.get_status()


def wait(flux_handle: Flux, jobid: int = FLUX_JOBID_ANY) -> JobWaitResult:
    """Wait for a waitable job (default: any) to end: its ``(jobid, success, errstr)``."""
    return wait_async(flux_handle, jobid).get_status()


def _result_code(res: dict[str, Any]) -> int:
    if res.get("t_run", -1.0) > 0 and res.get("waitstatus", -1) == 0:
        return FLUX_JOB_RESULT_COMPLETED
    if res["exception_occurred"]:
        if res.get("exception_type") == "cancel":
            return FLUX_JOB_RESULT_CANCELED
        if res.get("exception_type") == "timeout":
            return FLUX_JOB_RESULT_TIMEOUT
    return FLUX_JOB_RESULT_FAILED


class JobResultFuture(RPC):
    """A job's result: its eventlog, watched to the end and summed up as flux-core's
    ``flux_job_result``: ``id``, ``t_submit``, ``t_run``, ``t_cleanup``,
    ``waitstatus``, the most severe exception, and ``result``."""

    def __init__(self, flux_handle: Flux, jobid: Any) -> None:
        self.jobid = JobID(jobid)
        self._summary: dict[str, Any] = {"id": int(self.jobid), "exception_occurred": False}
        payload = {"id": int(self.jobid), "path": "eventlog"}
        super().__init__(flux_handle, "job-info.eventlog-watch", payload, flags=FLUX_RPC_STREAMING)

    def _on_response(self, payload: Any, errnum: int, errstr: str | None) -> None:
        if errnum == errno.ENODATA:
            self._summary["result"] = _result_code(self._summary)
            self._fulfill(self._summary)
        elif errnum:
            super()._on_response(payload, errnum, errstr)
        else:
            import json

            for line in payload.get("data", "").splitlines():
                if line:
                    self._note(json.loads(line))

    def _note(self, event: dict[str, Any]) -> None:
        res = self._summary
        name = event.get("name")
        context = event.get("context") or {}
        if name == "submit":
            res["t_submit"] = event["timestamp"]
        elif name == "alloc":
            res["t_run"] = event["timestamp"]
        elif name == "finish":
            res["t_cleanup"] = event["timestamp"]
            res["waitstatus"] = context["status"]
        elif name == "exception":
            severity = context.get("severity", 0)
            previous = res.get("exception_severity", -1)
            if res["exception_occurred"] and 0 < previous < severity:
                return  # a less severe exception does not replace the one seen
            res["exception_occurred"] = True
            res["exception_type"] = context.get("type")
            res["exception_note"] = context.get("note", "")
            res["exception_severity"] = severity

    def get_dict(self) -> dict[str, Any]:
        """The result as a dict."""
        result: dict[str, Any] = self.get()
        return result

    def get_info(self) -> JobInfo:
        """The result as a JobInfo (``result``, ``returncode``, ``runtime``, times)."""
        from flux.job.info import JobInfo

        return JobInfo(self.get_dict())


def result_async(flux_handle: Flux, jobid: Any, flags: int = 0) -> JobResultFuture:
    """A job's result once it is inactive (any job, any number of times)."""
    if flags:
        raise OSError(errno.EINVAL, f"result: flags: no flag is defined, got {flags}")
    return JobResultFuture(flux_handle, jobid)


def result(flux_handle: Flux, jobid: Any, flags: int = 0) -> JobInfo:
    """Wait for a job to be inactive and return its result as a JobInfo."""
    return result_async(flux_handle, jobid, flags).get_info()
