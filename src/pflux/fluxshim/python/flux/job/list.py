"""Listing jobs through job-list: ``job_list``, ``job_list_inactive``, ``job_list_id``,
``get_job`` and the ``JobList`` query."""

from __future__ import annotations

import errno
import os

from flux.constants import (
    FLUX_JOB_RESULT_CANCELED,
    FLUX_JOB_RESULT_COMPLETED,
    FLUX_JOB_RESULT_FAILED,
    FLUX_JOB_RESULT_TIMEOUT,
    FLUX_JOB_STATE_ACTIVE,
    FLUX_JOB_STATE_CLEANUP,
    FLUX_JOB_STATE_DEPEND,
    FLUX_JOB_STATE_INACTIVE,
    FLUX_JOB_STATE_PENDING,
    FLUX_JOB_STATE_PRIORITY,
    FLUX_JOB_STATE_RUN,
    FLUX_JOB_STATE_RUNNING,
    FLUX_JOB_STATE_SCHED,
    FLUX_USERID_UNKNOWN,
)
from flux.job.info import JobInfo
from flux.job.JobID import JobID
from flux.rpc import RPC

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar, Iterable, Iterator

    from flux.core.handle import Flux


class JobListRPC(RPC):
    def get_jobs(self) -> list[dict[str, Any]]:
        """The jobs listed, as dicts."""
        jobs: list[dict[str, Any]] = self.get()["jobs"]
        return jobs

    def get_jobinfos(self) -> Iterator[JobInfo]:
        for job in self.get_jobs():
            yield JobInfo(job)


def job_list(
    flux_handle: Flux,
    max_entries: int = 1000,
    attrs: Iterable[str] = ("all",),
    userid: int = os.getuid(),
    states: int = 0,
    results: int = 0,
    since: float = 0.0,
    name: str | None = None,
    queue: Any = None,
    constraint: Any = None,
) -> JobListRPC:
    """List jobs (newest first within pending, running, inactive) of ``userid``
    (FLUX_USERID_UNKNOWN: every user's) in ``states`` or with ``results`` (masks).
    RFC 31 ``constraint`` objects are not supported by pflux's job-list: refused."""
    if constraint is not None:
        raise OSError(errno.EINVAL, "job_list: constraint: not supported by pflux")
    payload: dict[str, Any] = {
        "max_entries": int(max_entries),
        "attrs": list(attrs),
        "userid": -1 if userid == FLUX_USERID_UNKNOWN else int(userid),
        "states": states,
        "results": results,
        "since": since,
    }
    if name:
        payload["name"] = name
    if queue:
        if isinstance(queue, str):
            queue = [queue]
        try:
            payload["queue"] = list(queue)
        except TypeError:
            raise ValueError("queue parameter must be a string or iterable") from None
    return JobListRPC(flux_handle, "job-list.list", payload)


def job_list_inactive(
    flux_handle: Flux,
    since: float = 0.0,
    max_entries: int = 1000,
    attrs: Iterable[str] = ("all",),
    name: str | None = None,
    queue: Any = None,
    constraint: Any = None,
) -> JobListRPC:
    """As ``job_list``, inactive jobs of every user only."""
    return job_list(
        flux_handle,
        max_entries=max_entries,
        attrs=attrs,
        userid=FLUX_USERID_UNKNOWN,
        states=FLUX_JOB_STATE_INACTIVE,
        since=since,
        name=name,
        queue=queue,
        constraint=constraint,
    )


class JobListIdRPC(RPC):
    jobid: Any = None

    def get_job(self) -> dict[str, Any]:
        job: dict[str, Any] = self.get()["job"]
        return job

    def get_jobinfo(self) -> JobInfo:
        return JobInfo(self.get_job())


def job_list_id(flux_handle: Flux, jobid: Any, attrs: Iterable[str] = ("all",)) -> JobListIdRPC:
    """One job's listing (``get_job()``, ``get_jobinfo()``)."""
    rpc = JobListIdRPC(flux_handle, "job-list.list-id", {"id": int(jobid), "attrs": list(attrs)})
    rpc.jobid = jobid
    return rpc


def get_job(flux_handle: Flux, jobid: Any) -> dict[str, Any] | None:
    """One job's attributes as a dict, or None for an unknown job."""
    try:
        info = job_list_id(flux_handle, jobid).get_jobinfo()
    except FileNotFoundError:
        return None
    return info.to_dict(filtered=False)


class JobListIdsFuture:
    """Several ``job_list_id`` requests, answered together; failures go to ``errors``."""

    def __init__(self) -> None:
        self.children: list[JobListIdRPC] = []
        self.errors: list[str] = []

    def push(self, child: JobListIdRPC) -> None:
        self.children.append(child)

    def get_jobs(self) -> list[dict[str, Any]]:
        jobs = []
        for child in self.children:
            try:
                jobs.append(child.get_job())
            except OSError as err:
                if err.errno == errno.ENOENT:
                    self.errors.append(f"JobID {JobID(child.jobid).orig} unknown")
                else:
                    self.errors.append(f"rpc: {err.strerror}")
        return jobs

    def get_jobinfos(self) -> list[JobInfo]:
        return [JobInfo(job) for job in self.get_jobs()]


class JobList:
    """A query of jobs: by ``ids``, or by user, state/result ``filters`` (``pending``,
    ``running``, ``completed``...), ``since``, ``name``, ``queue``; ``jobs()`` runs it."""

    STATES: ClassVar[dict[str, int]] = {
        "depend": FLUX_JOB_STATE_DEPEND,
        "priority": FLUX_JOB_STATE_PRIORITY,
        "sched": FLUX_JOB_STATE_SCHED,
        "run": FLUX_JOB_STATE_RUN,
        "cleanup": FLUX_JOB_STATE_CLEANUP,
        "inactive": FLUX_JOB_STATE_INACTIVE,
        "pending": FLUX_JOB_STATE_PENDING,
        "running": FLUX_JOB_STATE_RUNNING,
        "active": FLUX_JOB_STATE_ACTIVE,
    }
    RESULTS: ClassVar[dict[str, int]] = {
        "completed": FLUX_JOB_RESULT_COMPLETED,
        "failed": FLUX_JOB_RESULT_FAILED,
        "canceled": FLUX_JOB_RESULT_CANCELED,
        "timeout": FLUX_JOB_RESULT_TIMEOUT,
    }

    def __init__(
        self,
        flux_handle: Flux,
        attrs: Iterable[str] = ("all",),
        filters: Iterable[str] = (),
        ids: Iterable[Any] = (),
        user: Any = None,
        max_entries: int = 1000,
        since: float = 0.0,
        name: str | None = None,
        queue: Any = None,
        constraint: Any = None,
    ) -> None:
        self.handle = flux_handle
        self.attrs = list(attrs)
        self.states = 0
        self.results = 0
        self.max_entries = max_entries
        self.since = since
        self.name = name
        self.queue = queue
        self.ids = [JobID(i) for i in ids] or None
        self.errors: list[str] = []
        for fname in filters:
            for x in fname.split(","):
                self.add_filter(x)
        self.set_user(user)
        self.constraint = constraint

    def set_user(self, user: Any) -> None:
        """Only jobs of ``user`` (a name, a userid, or "all"; None: this user)."""
        if user is None:
            self.userid = os.getuid()
        elif user == "all":
            self.userid = FLUX_USERID_UNKNOWN
        else:
            import pwd

            try:
                self.userid = pwd.getpwnam(user).pw_uid
            except (KeyError, TypeError):
                try:
                    self.userid = int(user)
                except ValueError:
                    raise ValueError(f"Invalid user {user} specified") from None

    def add_filter(self, fname: str) -> None:
        """Add a state or result to what is listed."""
        fname = fname.lower()
        if fname in self.STATES:
            self.states |= self.STATES[fname]
        elif fname in self.RESULTS:
            self.results |= self.RESULTS[fname]
        else:
            raise ValueError(f"Invalid filter specified: {fname}")

    def fetch_jobs(self) -> Any:
        """Send the query: a future with ``get_jobs()``."""
        if self.ids:
            listids = JobListIdsFuture()
            for jobid in self.ids:
                listids.push(job_list_id(self.handle, jobid, self.attrs))
            return listids
        return job_list(
            self.handle,
            max_entries=self.max_entries,
            attrs=self.attrs,
            userid=self.userid,
            states=self.states,
            results=self.results,
            since=self.since,
            name=self.name,
            queue=self.queue,
            constraint=self.constraint,
        )

    def jobs(self) -> list[JobInfo]:
        """Run the query: a JobInfo per job (failures for ``ids`` in ``errors``)."""
        rpc = self.fetch_jobs()
        jobs = rpc.get_jobs()
        if isinstance(rpc, JobListIdsFuture):
            self.errors = rpc.errors
        return [JobInfo(job) for job in jobs]
