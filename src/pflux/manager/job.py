"""A job as the job manager holds it: what replaying its eventlog yields, plus run-time flags.

The replayed fields are written only by ``states.apply``; the run-time fields
record requests in flight (to the scheduler, the execution service) and are
rebuilt from the state after a restart, never stored.
"""

from __future__ import annotations

from typing import Any

from pflux.manager.states import NEW, State

# job results, as flux-core names them
COMPLETED, FAILED, CANCELED, TIMEOUT = "COMPLETED", "FAILED", "CANCELED", "TIMEOUT"

FLAG_DEBUG = 1  # submit flags (RFC 21 "flags": 1=debug)
FLAG_WAITABLE = 2


class Outcome:
    """How a job ended, for the ``Job`` that is live and the ``Ended`` that remains."""

    __slots__ = ()
    state: State
    exception: tuple[str, str] | None
    ended_by_exception: bool  # a fatal exception, not finish, took it to CLEANUP
    finish_status: int | None

    @property
    def result(self) -> str | None:
        """COMPLETED, FAILED, CANCELED or TIMEOUT once inactive (flux-core's rule)."""
        if self.state is not State.INACTIVE:
            return None
        if self.exception is not None:
            etype = self.exception[0]
            return CANCELED if etype == "cancel" else TIMEOUT if etype == "timelimit" else FAILED
        return COMPLETED if self.finish_status == 0 else FAILED

    @property
    def success(self) -> bool:
        return self.result == COMPLETED

    def error_text(self) -> str:
        """Why a job did not succeed, in flux-core's words (``flux job wait``)."""
        if self.exception is not None:
            etype, note = self.exception
            return f"Fatal exception type={etype} {note}"
        return waitstatus_text(self.finish_status or 0)


class Job(Outcome):
    """One active job: its replayed state and what is in flight for it."""

    __slots__ = (
        "R",
        "alloc_canceled",
        "alloc_pending",
        "allocated",
        "depend_checked",
        "dependencies",
        "ended_by_exception",
        "exception",
        "exec_killed",
        "expiration",
        "finish_status",
        "flag_names",
        "flags",
        "has_resources",
        "history",
        "id",
        "jobspec",
        "jobspec_updates",
        "key",
        "memo",
        "perilog",
        "priority",
        "reattach",
        "release_final",
        "satisfied",
        "start_pending",
        "started",
        "state",
        "t_inactive",
        "t_submit",
        "urgency",
        "userid",
        "waiters",
    )

    def __init__(self, jobid: int) -> None:
        self.id = jobid
        self.key = ""  # the job's KVS directory, once asked for
        self.state = NEW
        self.history: list[str] = []
        self.userid = -1
        self.urgency = 16
        self.priority = 0
        self.flags = 0
        self.flag_names: set[str] = set()
        self.t_submit = 0.0
        self.t_inactive = 0.0
        self.dependencies: dict[str, None] = {}  # outstanding, in the order added
        self.satisfied: set[str] = set()
        self.perilog: dict[str, None] = {}  # prolog/epilog actions running
        self.has_resources = False
        self.allocated = False  # an alloc event was ever posted
        self.started = False
        self.finish_status: int | None = None
        self.release_final = False
        self.exception: tuple[str, str] | None = None  # first fatal: (type, note)
        self.ended_by_exception = False
        self.memo: dict[str, Any] = {}
        self.jobspec_updates: dict[str, Any] = {}
        self.expiration: float | None = None
        # run-time
        self.jobspec: dict[str, Any] | None = None
        self.R: dict[str, Any] | None = None
        self.alloc_pending = False
        self.alloc_canceled = False
        self.depend_checked = False
        self.start_pending = False
        self.exec_killed = False
        self.reattach = False
        self.waiters: list[Any] = []

    def __repr__(self) -> str:
        return f"Job({self.id}, {self.state.name})"

    def kvs(self, name: str) -> str:
        """The KVS key of ``name`` in the job's directory (computed once per job)."""
        if not self.key:
            from pflux.kvs.keys import job_key

            self.key = job_key(self.id)
        return f"{self.key}.{name}"

    @property
    def debug(self) -> bool:
        """Submitted with the debug flag, or given it since: post debug.* events."""
        return bool(self.flags & FLAG_DEBUG) or "debug" in self.flag_names


class Ended(Outcome):
    """An inactive job, as small as can be: 100,000 of them stay in memory.

    It keeps what later requests and other jobs' dependencies ask of it: its
    owner, whether it was allocated and started, and how it ended; and how many
    events its eventlog holds, which the journal tells job-list so that it can
    trust its cache of the job (``nevents``: the events replayed from the
    eventlog, or those the job went through when it ended live).
    """

    __slots__ = (
        "allocated",
        "ended_by_exception",
        "exception",
        "finish_status",
        "id",
        "nevents",
        "started",
        "userid",
    )
    state = State.INACTIVE

    def __init__(self, job: Job, nevents: int | None = None) -> None:
        self.id = job.id
        self.nevents = len(job.history) if nevents is None else nevents
        self.userid = job.userid
        self.allocated = job.allocated
        self.started = job.started
        self.finish_status = job.finish_status
        self.exception = job.exception
        self.ended_by_exception = job.ended_by_exception

    def __repr__(self) -> str:
        return f"Ended({self.id}, {self.result})"


def exit_code(status: int) -> int:
    """The exit code a wait status gives a command (flux-core's rule).

    The job shell exits with the largest task exit code, or 128+signal for a
    signalled task; a shell itself killed by a signal also gives 128+signal.
    """
    if status & 0x7F:
        return 128 + (status & 0x7F)
    return (status >> 8) & 0xFF


def waitstatus_text(status: int) -> str:
    """What went wrong, for a non-zero wait status ("" for success)."""
    code = exit_code(status)
    if status & 0x7F:
        return f"job shell {signal_name(status & 0x7F)}"
    if code > 128:
        return f"task(s) {signal_name(code - 128)}"
    return f"task(s) exited with exit code {code}" if code else ""


def signal_name(signum: int) -> str:
    """A signal's description, as strsignal(3) gives it (``Killed``)."""
    import signal

    try:
        return signal.strsignal(signum) or f"signal {signum}"
    except ValueError:
        return f"signal {signum}"
