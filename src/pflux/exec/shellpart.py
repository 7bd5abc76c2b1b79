"""One of a job's shells as job-exec follows it: its rank, its key, where its records stand.

A run (``pflux.exec.shellrun``) keeps one per execution target of R, and its
takeover (``pflux.exec.takeover``) sets them from what an earlier job-exec
left.
"""

from __future__ import annotations

from pflux.protocol import shellwire as wire

__all__ = ["ShellPart"]


class ShellPart:
    """One of a job's shells: the broker rank it runs for, and where its records stand."""

    __slots__ = (
        "acked",
        "applied",
        "awaiting",
        "exited",
        "key",
        "live",
        "rank",
        "replaying",
        "spool",
        "started",
        "status",
        "tasks",
        "where",
    )

    def __init__(self, jobid: int, rank: int, tasks: frozenset[int] | None) -> None:
        self.rank = rank  # the broker rank it runs for
        self.key = wire.shell_key(jobid, rank)  # its records' key
        self.tasks = tasks  # the ranks of its tasks (None: every task of the job)
        self.applied = 0  # bytes of its records applied
        self.acked = 0  # the offset last acknowledged to it
        self.live = False  # it runs, and will send records
        self.started = False  # it said STARTED
        self.where = b""  # what STARTED said of its tasks: HOST RANK:PID,RANK:PID...
        self.exited = False  # its status is known (or it was lost)
        self.status = 0  # its wait status
        self.spool: str | None = None  # its spool file, if it may have one
        self.awaiting = False  # on another broker: taken over once that rank says it runs
        self.replaying = False  # its spool is being applied
