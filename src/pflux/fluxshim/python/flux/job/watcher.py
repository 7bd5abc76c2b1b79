"""``flux.job.watcher``: following many jobs at once, as ``flux submit --watch`` does.

``JobWatcher`` copies each job's output to its streams as it comes and keeps the
worst exit code; ``JobProgressBar`` counts jobs pending, running, complete and
failed in a ``flux.progress`` bar. Both are driven by the handle's reactor.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter

from flux.constants import FLUX_JOB_STATE_SCHED
from flux.job.event import event_watch_async
from flux.job.info import JobInfo
from flux.job.output import JobExceptionEvent, output_watch_async
from flux.progress import ProgressBar

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, TextIO

    from flux.core.handle import Flux
    from flux.eventlog import EventLogEvent

_STATUS = {
    "DEPEND": "pending",
    "PRIORITY": "pending",
    "SCHED": "pending",
    "RUN": "running",
    "CLEANUP": "running",
    "COMPLETED": "complete",
    "FAILED": "failed",
    "CANCELED": "failed",
    "TIMEOUT": "failed",
}


class JobStatus:
    """A job's simple status (``pending``, ``running``, ``complete``, ``failed``), its
    ``exitcode`` and a count of the events seen, made from a ``JobInfo``."""

    def __init__(self, job: Any) -> None:
        if not isinstance(job, JobInfo):
            raise ValueError("JobStatus requires an object of type JobInfo")
        self.id = job.id
        status = _STATUS.get(job.status)
        if status is None:
            raise ValueError(f"unknown job status {job.status}")
        self.status = status
        self.exitcode = job.returncode if status == "failed" else 0
        self._events: Counter[str] = Counter()

    @property
    def active(self) -> bool:
        """True while the job is pending or running."""
        return self.status in ("running", "pending")

    def add_event(self, name: str) -> None:
        self._events[name] += 1

    def event_count(self, name: str) -> int:
        return self._events[name]

    def has_event(self, name: str) -> bool:
        return self.event_count(name) > 0


class JobProgressBar(ProgressBar):
    """A progress bar of jobs: ``PD:n R:n CD:n F:n`` on its left, the percent done and
    the elapsed time (``jps``: jobs per second) on its right. Jobs are added with
    ``add_job``/``add_jobs`` and their events given to ``process_event``."""

    def __init__(
        self,
        flux_handle: Flux,
        starttime: float | None = None,
        jps: bool = False,
        counter_width: int = 3,
        update_interval: float = 0.25,
    ) -> None:
        before = (
            "PD:{pending:<{width}} R:{running:<{width}} CD:{complete:<{width}} F:{failed:<{width}} "
        )
        after = "{percent:5.1f}% {jps:4.1f} job/s" if jps else "{percent:5.1f}% {elapsed.dt}"
        self.jobs: dict[Any, JobStatus] = {}
        self._finished_jobs: set[Any] = set()
        self._started = False
        self.starttime = starttime
        self.timer = flux_handle.timer_watcher_create(
            0, lambda *_args: self.redraw(), repeat=update_interval
        )
        super().__init__(
            total=0,
            before=before,
            after=after,
            width=counter_width,
            pending=0,
            running=0,
            complete=0,
            failed=0,
            jps=0,
        )
        self.pending = self.running = self.complete = self.failed = 0

    def start(self) -> JobProgressBar:
        """Draw the bar and redraw it every ``update_interval`` while the reactor runs
        (the timer alone does not keep it running)."""
        if self._started:
            return self
        self._started = True
        self.timer.start()
        self.timer.unref()
        super().start()
        if self.starttime is not None:
            self._t0 = self.starttime
        return self

    def update(self, advance: int = 0, **kwargs: Any) -> None:
        """Redraw with the current counts (``advance``: jobs done since)."""
        super().update(
            advance=advance,
            pending=self.pending,
            running=self.running,
            complete=self.complete,
            failed=self.failed,
            **kwargs,
        )

    def advance(self, **kwargs: Any) -> None:
        """Count one more job done."""
        self.update(advance=1, **kwargs)

    def add_job(self, job: Any) -> None:
        """Follow ``job`` (a ``JobInfo``)."""
        if not isinstance(job, JobInfo):
            raise ValueError("add_job takes an argument of type JobInfo")
        if job.id in self.jobs:
            raise ValueError(f"job {job.id} is already being monitored")
        if self._t0 is None or job.t_submit < self._t0:
            self._t0 = job.t_submit
        status = JobStatus(job)
        self.jobs[job.id] = status
        self.total += 1
        setattr(self, status.status, getattr(self, status.status) + 1)
        self.update()

    def add_jobs(self, *jobs: Any) -> None:
        for job in jobs:
            self.add_job(job)

    def jobs_per_sec(self) -> float:
        return (self.count + 1) / (time.time() - (self._t0 or time.time()) or 1e-9)

    def _move(self, jobid: Any, status: str) -> None:
        job = self.jobs[jobid]
        setattr(self, job.status, getattr(self, job.status) - 1)
        setattr(self, status, getattr(self, status) + 1)
        job.status = status

    def process_event(self, jobid: Any, event: EventLogEvent | None = None) -> None:
        """Count an event of a job; None: the job has no more (it is done)."""
        job = self.jobs[jobid]
        if event is None:
            if jobid not in self._finished_jobs:
                self._finished_jobs.add(jobid)
                self.advance(jps=self.jobs_per_sec())
        elif event.name == "alloc" and job.status == "pending":
            self._move(jobid, "running")
        elif event.name == "exception" and event.context["severity"] == 0:
            # a running job that gets one ends with a finish event
            if job.status == "pending":
                self._move(jobid, "failed")
        elif event.name == "finish" and job.active:
            job.exitcode = event.context["status"]
            self._move(jobid, "complete" if job.exitcode == 0 else "failed")
        self.update()


class JobWatcher:
    """Watch the output and status of jobs: their output goes to ``stdout``/``stderr``
    (each job's own, if given to ``add_jobs``), ``exitcode`` is the worst of theirs,
    ``progress`` shows a ``JobProgressBar``, ``log_events`` writes each event and
    ``log_status`` each job's end to stderr. A job is followed until its ``wait``
    event (``clean``, or ``exec.NAME`` of the exec eventlog). An ``output_callback``
    gets each piece of output instead, as ``cb(jobid, stream, data)`` (``stream``
    ``stdout`` or ``stderr``; both None once a job's output ends)."""

    class JobWatchStatus(JobStatus):
        """A job's status with where its output goes and the event that ends its watch."""

        def __init__(self, job: Any, stdout: TextIO, stderr: TextIO, wait: str = "clean") -> None:
            super().__init__(job)
            self.stdout = stdout
            self.stderr = stderr
            self.wait = wait

    def __init__(
        self,
        flux_handle: Flux,
        jobs: Any = None,
        progress: bool = False,
        jps: bool = False,
        wait: str = "clean",
        watch: bool = True,
        log_events: bool = False,
        log_status: bool = False,
        stdout: TextIO = sys.stdout,
        stderr: TextIO = sys.stderr,
        labelio: bool = False,
        starttime: float | None = None,
        output_callback: Callable[[Any, str | None, str | None], Any] | None = None,
    ) -> None:
        self.flux_handle = flux_handle
        self.wait = wait
        self.watch = watch
        self.t0 = starttime
        self.log_events = log_events
        self.log_status = log_status
        self.output_callback = output_callback
        self.stdout = stdout if output_callback else self._reopen(stdout)
        self.stderr = stderr if output_callback else self._reopen(stderr)
        self.labelio = labelio
        self.exitcode = 0
        self.show_progress = progress
        self.progress = JobProgressBar(flux_handle, starttime=self.t0, jps=jps)
        if jobs:
            self.add_jobs(*jobs)

    @staticmethod
    def _reopen(stream: Any) -> Any:
        """The stream, writing UTF-8 with undecodable bytes passed through."""
        try:
            stream.reconfigure(encoding="utf-8", errors="surrogateescape")
            return stream
        except AttributeError:
            return open(
                stream.fileno(), mode="w", encoding="utf-8", errors="surrogateescape", closefd=False
            )

    @staticmethod
    def _status_to_exitcode(status: int) -> int:
        if os.WIFEXITED(status):
            return os.WEXITSTATUS(status)
        if os.WIFSIGNALED(status):
            return 127 + os.WTERMSIG(status)
        return status

    def start(self) -> JobWatcher:
        """Show the progress bar, if asked for."""
        if self.show_progress:
            self.progress.start()
        return self

    def stop(self) -> JobWatcher:
        """Take the progress bar down, if shown."""
        if self.show_progress:
            self.progress.stop()
        return self

    def add_jobs(
        self, *jobs: Any, stdout: Any = None, stderr: Any = None, wait: str = "clean"
    ) -> JobWatcher:
        """Follow ``jobs`` (``JobInfo``s) until their ``wait`` event."""
        self.progress.add_jobs(*jobs)
        out = self.stdout if stdout is None else stdout
        err = self.stderr if stderr is None else stderr
        if self.output_callback is None:
            out, err = self._reopen(out), self._reopen(err)
        for job in jobs:
            if not self.t0 or job.t_submit < self.t0:
                self.t0 = job.t_submit
            status = self.JobWatchStatus(job, out, err, wait=wait)
            event_watch_async(self.flux_handle, job.id).then(self._event_watch_cb, status)
            if not status.active:
                self.progress.process_event(status.id)
        return self

    def add_jobid(
        self, jobid: Any, stdout: Any = None, stderr: Any = None, wait: str = "clean"
    ) -> None:
        """Follow a job known only by its id (taken as waiting to be scheduled)."""
        job = JobInfo({"id": jobid, "state": FLUX_JOB_STATE_SCHED, "t_submit": time.time()})
        self.add_jobs(job, stdout=stdout, stderr=stderr, wait=wait)

    def _log(self, job: JobWatchStatus, timestamp: float, msg: str) -> None:
        print(f"{job.id.f58}: {timestamp - (self.t0 or 0.0):4.3f}s: {msg}", file=job.stderr)

    def _log_event(self, job: JobWatchStatus, event: Any, prefix: str = "") -> None:
        if self.log_events and event is not None:
            self._log(job, event.timestamp, f"{prefix}{event.name} {event.context_string}")

    def _event_watch_cb(self, future: Any, job: JobWatchStatus) -> None:
        event = future.get_event()
        self.progress.process_event(job.id, event)
        if event is None:
            return
        job.add_event(event.name)
        if self.t0 is None or event.timestamp < self.t0:
            self.t0 = event.timestamp
        self._log_event(job, event)
        if event.name == "exception":
            self._on_exception(job, event)
        elif event.name == "alloc":
            job.status = "running"
        elif event.name == "start":
            if self.watch or job.wait.startswith("exec."):
                event_watch_async(self.flux_handle, job.id, eventlog="guest.exec.eventlog").then(
                    self._exec_event_cb, job, future
                )
        elif event.name == "finish":
            status = event.context["status"]
            self.exitcode = max(self.exitcode, self._status_to_exitcode(status))
            job.status = "failed" if status > 0 else "complete"
            if self.log_status:
                self._log(job, event.timestamp, f"{job.status}: status={status}")
        if job.wait and job.wait == event.name:
            self.progress.process_event(job.id)
            future.cancel(stop=True)

    def _on_exception(self, job: JobWatchStatus, event: Any) -> None:
        if event.context["severity"] != 0:
            return
        if not job.has_event("start"):
            self.exitcode = max(self.exitcode, 1)
            job.status = "failed"
        # the output watch (which starts at the shell) does not show it
        print(JobExceptionEvent(event).render(), file=job.stderr)

    def _exec_event_cb(self, future: Any, job: JobWatchStatus, main: Any) -> None:
        event = future.get_event()
        if event is None:
            return
        self._log_event(job, event, prefix="exec.")
        if self.watch and event.name == "shell.init":
            output_watch_async(self.flux_handle, job.id, labelio=self.labelio, nowait=True).then(
                self._output_watch_cb, job
            )
            if not job.wait or not job.wait.startswith("exec."):
                future.cancel(stop=True)
        if job.wait and job.wait == f"exec.{event.name}":
            future.cancel(stop=True)
            main.cancel(stop=True)

    def _output_watch_cb(self, future: Any, job: JobWatchStatus) -> None:
        stream, data = future.get_output()
        if self.output_callback is not None:
            self.output_callback(job.id, stream, data)
            return
        if stream is None:
            job.stdout.flush()
            job.stderr.flush()
            return
        out = getattr(job, stream)
        if self.labelio:
            for line in data.splitlines(keepends=True):
                out.write(f"{job.id}: {line}")
        else:
            out.write(data)
