"""Prolog and epilog: instance-owner commands run before a job starts and before it frees.

Configured as flux-core configures them (TOML):

    [job-manager.prolog]
    command = ["/usr/local/bin/prolog", "arg"]
    [job-manager.epilog]
    command = ["/usr/local/bin/epilog"]

The prolog runs once the job has resources, bracketed by ``prolog-start`` and
``prolog-finish``; the job manager sends no start request while it runs, and a
failing prolog raises an exception, so the job never starts. The epilog runs
once the job's shells are done and before its resources go back to the
scheduler (``epilog-start`` / ``epilog-finish``). Both get ``FLUX_JOB_ID`` and
``FLUX_JOB_USERID`` in their environment.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import TYPE_CHECKING, Any

from pflux.errors import PfluxError
from pflux.manager.job import Job
from pflux.manager.plugins import Host, Plugin
from pflux.manager.states import State
from pflux.spec.fluid import JobID

if TYPE_CHECKING:
    from pflux.manager.job import Ended
    from pflux.spec.eventlog import Event

log = logging.getLogger("pflux.job-manager")

PROLOG = "job-manager.prolog"
EPILOG = "job-manager.epilog"


def _command(config: dict[str, Any], section: str) -> list[str] | None:
    table = config.get("job-manager", {}).get(section.split(".", 1)[1])
    if table is None:
        return None
    command = table.get("command") if isinstance(table, dict) else None
    if not isinstance(command, list) or not command or not all(isinstance(a, str) for a in command):
        raise PfluxError(f"[{section}] command: must be a non-empty list of strings")
    return command


class Perilog(Plugin):
    """Runs the configured prolog and epilog of every job."""

    name = "perilog"
    events = frozenset(("alloc",))

    def __init__(self, host: Host, config: dict[str, Any]) -> None:
        super().__init__(host)
        self.prolog = _command(config, PROLOG)
        self.epilog = _command(config, EPILOG)
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def active(self) -> bool:
        return bool(self.prolog or self.epilog)

    def restarted(self, job: Job) -> None:
        """An action that was running when the instance died is gone: say so and fail it."""
        for description in list(job.perilog):
            kind = "prolog" if description == PROLOG else "epilog"
            self.host.post(job, f"{kind}-finish", {"description": description, "status": 1})
            self.host.raise_exception(job, kind, f"{kind} was running when the instance restarted")

    def event(self, job: Job | Ended, event: Event) -> None:
        if self.prolog and isinstance(job, Job) and job.state is State.RUN:
            self._run(job, "prolog", PROLOG, self.prolog)

    def before_free(self, job: Job) -> bool:
        """Start the epilog before the job's resources are freed; True if it started."""
        if not self.epilog or job.plugin_data.get("epilog-run"):
            return False
        job.plugin_data["epilog-run"] = True
        self._run(job, "epilog", EPILOG, self.epilog)
        return True

    def _run(self, job: Job, kind: str, description: str, command: list[str]) -> None:
        self.host.post(job, f"{kind}-start", {"description": description})
        task = self.host.loop.create_task(self._execute(job, kind, description, command))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _execute(self, job: Job, kind: str, description: str, command: list[str]) -> None:
        env = dict(os.environ, FLUX_JOB_ID=str(JobID(job.id)), FLUX_JOB_USERID=str(job.userid))
        try:
            proc = await asyncio.create_subprocess_exec(
                *command, env=env, stdin=asyncio.subprocess.DEVNULL
            )
            status = await proc.wait()
            reason = f"exit code {status}" if status >= 0 else f"signal {-status}"
        except OSError as exc:
            status, reason = 127, f"{command[0]}: {exc.strerror}"
        code = status if status >= 0 else 128 - status
        self.host.post(job, f"{kind}-finish", {"description": description, "status": code})
        if code != 0:
            log.error("job %d: %s failed: %s", job.id, kind, reason)
            self.host.raise_exception(job, kind, f"{kind} failed with {reason}")
