"""A job as the job manager holds it: what replaying its eventlog yields, plus run-time flags.

The replayed fields (``pflux.spec.record``) are written only by ``states.apply``;
the run-time fields record requests in flight (to the scheduler, the execution
service) and are rebuilt from the state after a restart, never stored.
"""

from __future__ import annotations

from typing import Any

from msgspec import Struct

from pflux.spec.record import JobRecord
from pflux.spec.results import Outcome
from pflux.spec.states import State


class Job(JobRecord):
    """One active job: its replayed state and what is in flight for it."""

    __slots__ = (
        "J",
        "R",
        "alloc_canceled",
        "alloc_pending",
        "depend_checked",
        "exec_killed",
        "jobspec",
        "key",
        "reattach",
        "start_pending",
        "waiters",
    )

    def __init__(self, jobid: int) -> None:
        super().__init__(jobid)
        self.key = ""  # the job's KVS directory, once asked for
        self.jobspec: dict[str, Any] | None = None
        self.R: dict[str, Any] | None = None
        # a guest's J, from job-ingest, for job-exec (None: job-exec reads it from the KVS)
        self.J: str | None = None
        self.alloc_pending = False
        self.alloc_canceled = False
        self.depend_checked = False
        self.start_pending = False
        self.exec_killed = False
        self.reattach = False
        self.waiters: list[Any] = []

    def kvs(self, name: str) -> str:
        """The KVS key of ``name`` in the job's directory (computed once per job)."""
        if not self.key:
            from pflux.spec.kvs_keys import job_key

            self.key = job_key(self.id)
        return f"{self.key}.{name}"


class Ended(Struct, Outcome, array_like=True, gc=False, eq=False):
    """An inactive job, as small as can be: 100,000 of them stay in memory.

    It keeps what later requests and other jobs' dependencies ask of it: its
    owner, whether it was allocated and started, how it ended, and when (the
    order in which inactive jobs are purged, ``purge.py``); and how many
    events its eventlog holds, which the journal tells job-list so that it can
    trust its cache of the job (``nevents``: the events replayed from the
    eventlog, or those the job went through when it ended live).

    A ``msgspec`` struct, encoded as an array of its fields in this order, so
    that a restart decodes the job manager's snapshot (``snapshot.py``) into
    these records at once; untracked by the collector (none holds a reference
    that could make a cycle), compared by identity.
    """

    id: int
    userid: int
    t_inactive: float
    nevents: int
    allocated: bool
    started: bool
    finish_status: int | None
    exception: tuple[str, str] | None
    ended_by_exception: bool
    state = State.INACTIVE  # a class attribute, not a field

    @classmethod
    def from_job(cls, job: JobRecord, nevents: int | None = None) -> Ended:
        """The outcome of ``job``, just ended (or replayed), with ``nevents`` events (by
        default, its history's)."""
        return cls(
            job.id,
            job.userid,
            job.t_inactive,
            len(job.history) if nevents is None else nevents,
            job.allocated,
            job.started,
            job.finish_status,
            job.exception,
            job.ended_by_exception,
        )

    def __repr__(self) -> str:
        return f"Ended({self.id}, {self.result})"
