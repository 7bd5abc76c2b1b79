"""``flux.job.output``: a job's standard output, error and shell log (RFC 24's output
eventlog, ``guest.output``) as text, and its events as objects.

``job_output`` waits for the job's shell to start (``shell.init``) and then for
every stream's end, or with ``nowait`` reads what is there now; log messages at
or below ``log_stderr_level`` join stderr, the others go to ``log``. A fatal job
exception before the shell starts is raised as ``JobException``.
"""

from __future__ import annotations

import base64
import errno
from typing import NamedTuple

from flux.eventlog import EventLogEvent
from flux.future import FutureExt
from flux.job.JobID import JobID

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterable, Iterator

    from flux.core.handle import Flux

# the job shell's log levels (flux-core's shell.h), for log_stderr_level
LOG_QUIET = -1
LOG_FATAL = 0
LOG_ERROR = 3
LOG_WARN = 4
LOG_NOTICE = 5
LOG_DEBUG = 6
LOG_TRACE = 7


def _ids(text: str) -> frozenset[int]:
    """An RFC 22 idset (``0-3,5``, brackets allowed) as its ids."""
    ids: set[int] = set()
    for part in str(text).strip("[]").split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        ids.update(range(int(lo), int(hi or lo) + 1))
    return frozenset(ids)


def _encode(ids: Iterable[int]) -> str:
    ranges: list[list[int]] = []
    for n in sorted(ids):
        if ranges and ranges[-1][1] == n - 1:
            ranges[-1][1] = n
        else:
            ranges.append([n, n])
    return ",".join(f"{lo}-{hi}" if hi > lo else str(lo) for lo, hi in ranges)


class Taskset:
    """Some task ranks, or all of them (``all`` or ``*``)."""

    def __init__(self, tasks: Any) -> None:
        self.all = False
        self.ids: frozenset[int] | None = None
        if isinstance(tasks, Taskset):
            self.all, self.ids = tasks.all, tasks.ids
        elif tasks in ("all", "*"):
            self.all = True
        elif isinstance(tasks, int):
            self.ids = frozenset((tasks,))
        else:
            self.ids = _ids(tasks)

    def intersect(self, tasks: Any) -> Taskset:
        other = tasks if isinstance(tasks, Taskset) else Taskset(tasks)
        if self.all:
            return Taskset(other)
        if other.all:
            return Taskset(self)
        result = Taskset("")
        result.ids = (self.ids or frozenset()) & (other.ids or frozenset())
        return result

    def __bool__(self) -> bool:
        return self.all or bool(self.ids)

    def __str__(self) -> str:
        return "all" if self.all else _encode(self.ids or ())


class OutputEvent(EventLogEvent):
    """A ``data`` event: ``rank``, ``stream``, ``eof``, ``data`` (decoded, repeated,
    with ``labelio`` each line prefixed by the ranks)."""

    def __init__(self, entry: Any, labelio: bool = False) -> None:
        super().__init__(entry)
        if self.name != "data":
            raise ValueError(f"event {self.name} is not a data event")
        context = self.context
        self.rank = Taskset(context["rank"])
        self.stream = context["stream"]
        self.eof = bool(context.get("eof", False))
        self.data: str | None = None
        if "data" in context:
            data = context["data"]
            if context.get("encoding") == "base64":
                data = base64.b64decode(data).decode("utf-8", errors="surrogateescape")
            data *= context.get("repeat", 1)
            if labelio:
                data = "".join(f"{self.rank}: {line}\n" for line in data.splitlines())
            self.data = data

    def render(self) -> str | None:
        return self.data


class LogEvent(EventLogEvent):
    """A shell's ``log`` event: ``rank``, ``level`` (``levelstr``), ``message``,
    ``component``, ``file``, ``line``; rendered as the shell prints it."""

    log_level_string = ("FATAL", "FATAL", "FATAL", "ERROR", " WARN", "", "DEBUG", "TRACE")

    def __init__(self, entry: Any) -> None:
        super().__init__(entry)
        if self.name != "log":
            raise ValueError(f"event {self.name} is not a log event")
        context = self.context
        self.level: int = context["level"]
        self.rank = Taskset(context["rank"])
        self.message: str = context["message"]
        self.component = context.get("component")
        self.file = context.get("file")
        self.line = context.get("line", -1)

    @property
    def levelstr(self) -> str:
        return self.log_level_string[self.level]

    def render(self, include_file_and_line: bool = False) -> str:
        prefix = f"flux-shell[{self.rank}]: "
        if self.levelstr:
            prefix += f"{self.levelstr}: "
        if self.component:
            prefix += f"{self.component}: "
        if include_file_and_line and self.file:
            prefix += f"{self.file}:{self.line}: "
        return prefix + self.message


class OutputHeaderEvent(EventLogEvent):
    """The ``header`` event: ``version``, and each stream's count and encoding."""

    def __init__(self, entry: Any) -> None:
        super().__init__(entry)
        if self.name != "header":
            raise ValueError(f"event {self.name} is not a header event")
        context = self.context
        self.version = context["version"]
        self.stdout_count = context["count"]["stdout"]
        self.stderr_count = context["count"]["stderr"]
        self.stdout_encoding = context["encoding"]["stdout"]
        self.stderr_encoding = context["encoding"]["stderr"]


class RedirectEvent(EventLogEvent):
    """A ``redirect`` event: the ``stream`` of the ``rank`` tasks goes to ``path``."""

    def __init__(self, entry: Any) -> None:
        super().__init__(entry)
        if self.name != "redirect":
            raise ValueError(f"event {self.name} is not a redirect event")
        self.stream = self.context["stream"]
        self.rank = Taskset(self.context["rank"])
        self.path = self.context["path"]

    def render(self) -> str:
        return f"{self.rank}: {self.stream} redirected to {self.path}"


class JobExceptionEvent(EventLogEvent):
    """A job's ``exception`` event: ``severity``, ``exc_type``, ``note``."""

    def __init__(self, entry: Any) -> None:
        super().__init__(entry)
        if self.name != "exception":
            raise ValueError(f"event {self.name} is not an exception event")
        self.severity = self.context["severity"]
        self.exc_type = self.context["type"]
        self.note = self.context.get("note", "")

    def render(self) -> str:
        result = f"job.exception: type={self.exc_type} severity={self.severity}"
        return f"{result} {self.note}" if self.note else result


class JobOutput(NamedTuple):
    """A job's output: ``stdout``, ``stderr`` and ``log``, each as one text."""

    stdout: str
    stderr: str
    log: str


_EVENT_TYPES = {
    "log": LogEvent,
    "header": OutputHeaderEvent,
    "redirect": RedirectEvent,
    "exception": JobExceptionEvent,
}


def _parse_entry(entry: Any, labelio: bool = False) -> EventLogEvent:
    event = entry if isinstance(entry, EventLogEvent) else EventLogEvent(entry)
    if event.name == "data":
        return OutputEvent(event, labelio)
    kind = _EVENT_TYPES.get(event.name)
    if kind is None:
        raise ValueError(f"event {event.name} is not a supported output event type")
    return kind(event)


def _add(
    entry: Any, streams: dict[str, list[str]], tasks: Taskset, labelio: bool, level: int
) -> None:
    """Add what an output eventlog entry shows to its stream, if it is ``tasks``'."""
    event = _parse_entry(entry, labelio)
    if isinstance(event, OutputEvent):
        stream = event.stream if event.rank.intersect(tasks) else None
        text = event.render()
    elif isinstance(event, LogEvent):
        stream = "stderr" if event.level <= level else "log"
        text = event.render() + "\n"
    elif isinstance(event, (RedirectEvent, JobExceptionEvent)):
        stream, text = "stderr", event.render() + "\n"
    else:
        return
    if stream is not None and text:
        streams.setdefault(stream, []).append(text)


def _joined(streams: dict[str, list[str]]) -> JobOutput:
    return JobOutput(*("".join(streams.get(name, ())) for name in ("stdout", "stderr", "log")))


def job_output(
    flux_handle: Flux,
    jobid: Any,
    tasks: Any = "*",
    labelio: bool = False,
    nowait: bool = False,
    log_stderr_level: int = LOG_TRACE,
) -> JobOutput:
    """The job's output (of the ``tasks`` ranks), once complete, or with ``nowait`` as
    it is now (FileNotFoundError when there is none yet, or no such job)."""
    from flux.job.event import JobException, event_wait, event_watch

    jobid = JobID(jobid)
    taskset = Taskset(tasks)
    streams: dict[str, list[str]] = {"stdout": [], "stderr": [], "log": []}
    if nowait:
        from flux.job.kvslookup import job_kvs_lookup

        found = job_kvs_lookup(flux_handle, jobid, keys=["guest.output"])
        if found is None:
            raise FileNotFoundError(f"job {jobid} does not exist or output not ready")
        for line in found["guest.output"].splitlines():
            _add(line, streams, taskset, labelio, log_stderr_level)
        return _joined(streams)
    try:
        event_wait(flux_handle, jobid, "shell.init", "guest.exec.eventlog")
    except OSError:
        event = event_wait(flux_handle, jobid, "exception")
        if event is not None and event.context["severity"] == 0:
            raise JobException(event) from None
        raise
    for event in event_watch(flux_handle, jobid, "guest.output"):
        _add(event, streams, taskset, labelio, log_stderr_level)
    return _joined(streams)


class _Stream(FutureExt):
    """A FutureExt fulfilled many times: each ``_emit`` queues one more result, and
    ``fulfill``/``fulfill_error`` give the last."""

    def __init__(self, init_cb: Any, jobid: JobID, flux_handle: Flux) -> None:
        self._handle = flux_handle  # a Flux (get_flux() gives what a future needs of one)
        super().__init__(init_cb, jobid, flux_handle=flux_handle)

    def _emit(self, value: Any) -> None:
        self._fulfill(value)


class JobOutputEventWatch(_Stream):
    """The events of a job's output eventlog as they come (``output_event_watch_async``)."""

    def __init__(
        self, flux_handle: Flux, jobid: Any, labelio: bool = False, nowait: bool = False
    ) -> None:
        self.labelio = labelio
        self.nowait = nowait
        self.started = False  # the main eventlog's start event was seen
        self.finished = False  # ... and its finish event
        self.closed = False  # the output eventlog ended
        super().__init__(self._watch_init, JobID(jobid), flux_handle)

    def get_event(self, autoreset: bool = True) -> EventLogEvent | None:
        """The next output event (OutputEvent, LogEvent, ...), or None after the last."""
        event = self.get()
        if event is None:
            return None
        if autoreset:
            self.reset()
        return _parse_entry(event, labelio=self.labelio)

    def _watch(self, jobid: JobID, eventlog: str, callback: Any, *args: Any) -> None:
        from flux.job.event import event_watch_async

        event_watch_async(self._handle, int(jobid), eventlog=eventlog).then(callback, *args)

    def _watch_init(self, future: Any, jobid: JobID) -> None:
        if self.nowait:
            self._watch(jobid, "guest.output", self._watch_output)
        else:
            self._watch(jobid, "eventlog", self._wait_for_start, jobid)

    def _wait_for_start(self, future: Any, jobid: JobID) -> None:
        # errors are passed on, not raised: a callback's exception would stop the reactor
        try:
            event = future.get_event()
        except OSError as exc:
            text = f"job {jobid} not found" if exc.errno == errno.ENOENT else exc.strerror
            self.fulfill_error(exc.errno or errno.EIO, text)
            return
        if event is None:
            if not self.started:
                self.fulfill_error(errno.EIO, f"job {jobid} never started")
            return
        if event.name == "exception":
            self._emit(event)
        elif event.name == "start":
            self.started = True
            self._watch(jobid, "guest.exec.eventlog", self._wait_for_shell_init)
        elif event.name == "finish":
            self.finished = True
            future.cancel(stop=True)
            if self.closed:
                self.fulfill()

    def _wait_for_shell_init(self, future: Any) -> None:
        try:
            event = future.get_event()
        except OSError as exc:
            self.fulfill_error(exc.errno or errno.EIO, exc.strerror)
            return
        if event is not None and event.name == "shell.init":
            self._watch(JobID(future.jobid), "guest.output", self._watch_output)
            future.cancel(stop=True)

    def _watch_output(self, future: Any) -> None:
        try:
            event = future.get_event(autoreset=False)
        except OSError as exc:
            self.fulfill_error(exc.errno or errno.EIO, exc.strerror)
            return
        if event is None:
            self.closed = True
            # the end waits for the finish event, so that an exception before it is seen
            if self.nowait or self.finished:
                self.fulfill()
            return
        self._emit(event)
        future.reset()


class JobOutputWatch(_Stream):
    """A job's output as ``(stream, data)`` chunks (``output_watch_async``)."""

    def __init__(
        self,
        flux_handle: Flux,
        jobid: Any,
        labelio: bool = False,
        log_stderr_level: int = LOG_TRACE,
        nowait: bool = False,
    ) -> None:
        self.labelio = labelio
        self.log_stderr_level = log_stderr_level
        self.nowait = nowait
        super().__init__(self._watch_init, JobID(jobid), flux_handle)

    def _watch_init(self, future: Any, jobid: JobID) -> None:
        JobOutputEventWatch(self._handle, jobid, labelio=self.labelio, nowait=self.nowait).then(
            self._on_event
        )

    def _on_event(self, future: JobOutputEventWatch) -> None:
        try:
            event = future.get_event()
        except OSError as exc:
            self.fulfill_error(exc.errno or errno.EIO, exc.strerror)
            return
        if event is None:
            self._more = False
            self._fulfill((None, None))
        elif isinstance(event, OutputEvent):
            if event.data is not None:
                self._emit((event.stream, event.data))
        elif isinstance(event, LogEvent):
            stream = "log" if event.level > self.log_stderr_level else "stderr"
            self._emit((stream, event.render() + "\n"))
        elif isinstance(event, (RedirectEvent, JobExceptionEvent)):
            self._emit(("stderr", event.render() + "\n"))

    def get_output(self) -> tuple[str | None, str | None]:
        """The next ``(stream, data)``: ``stdout``, ``stderr`` or ``log``; ``(None, None)``
        once there is no more."""
        result: tuple[str | None, str | None] = self.get()
        self.reset()
        return result


class JobOutputWatchLines(_Stream):
    """A job's output as ``(stream, line)`` (``output_watch_lines_async``)."""

    def __init__(
        self,
        flux_handle: Flux,
        jobid: Any,
        labelio: bool = False,
        log_stderr_level: int = LOG_TRACE,
        nowait: bool = False,
        keepends: bool = False,
    ) -> None:
        self.labelio = labelio
        self.log_stderr_level = log_stderr_level
        self.nowait = nowait
        self.keepends = keepends
        super().__init__(self._watch_init, JobID(jobid), flux_handle)

    def _watch_init(self, future: Any, jobid: JobID) -> None:
        JobOutputWatch(
            self._handle,
            jobid,
            labelio=self.labelio,
            log_stderr_level=self.log_stderr_level,
            nowait=self.nowait,
        ).then(self._on_output)

    def _on_output(self, future: JobOutputWatch) -> None:
        try:
            stream, data = future.get_output()
        except OSError as exc:
            self.fulfill_error(exc.errno or errno.EIO, exc.strerror)
            return
        if data is None:
            self._more = False
            self._fulfill((None, None))
            return
        for line in data.splitlines(keepends=self.keepends):
            self._emit((stream, line))

    def getline(self) -> tuple[str | None, str | None]:
        """The next ``(stream, line)``; ``(None, None)`` once there is no more."""
        result: tuple[str | None, str | None] = self.get()
        self.reset()
        return result


def output_event_watch_async(
    flux_handle: Flux, jobid: Any, labelio: bool = False, nowait: bool = False
) -> JobOutputEventWatch:
    """Watch a job's output events (``get_event()``); with ``nowait`` the output
    eventlog is taken to exist already. A job that never started: EIO."""
    return JobOutputEventWatch(flux_handle, jobid, labelio=labelio, nowait=nowait)


def output_watch_async(
    flux_handle: Flux,
    jobid: Any,
    labelio: bool = False,
    log_stderr_level: int = LOG_TRACE,
    nowait: bool = False,
) -> JobOutputWatch:
    """Watch a job's output as ``(stream, data)`` (``get_output()``); log messages above
    ``log_stderr_level`` are the ``log`` stream, exceptions and redirects stderr."""
    return JobOutputWatch(
        flux_handle, jobid, labelio=labelio, log_stderr_level=log_stderr_level, nowait=nowait
    )


def output_watch_lines_async(
    flux_handle: Flux,
    jobid: Any,
    labelio: bool = False,
    log_stderr_level: int = LOG_TRACE,
    nowait: bool = False,
    keepends: bool = False,
) -> JobOutputWatchLines:
    """As ``output_watch_async``, a line at a time (``getline()``)."""
    return JobOutputWatchLines(
        flux_handle,
        jobid,
        labelio=labelio,
        log_stderr_level=log_stderr_level,
        nowait=nowait,
        keepends=keepends,
    )


def output_event_watch(
    flux_handle: Flux, jobid: Any, labelio: bool = False, nowait: bool = False
) -> Iterator[EventLogEvent]:
    """Yield each output event of a job until its output ends."""
    watcher = output_event_watch_async(flux_handle, jobid, labelio=labelio, nowait=nowait)
    event = watcher.get_event()
    while event is not None:
        yield event
        event = watcher.get_event()


def output_watch(
    flux_handle: Flux,
    jobid: Any,
    labelio: bool = False,
    log_stderr_level: int = LOG_TRACE,
    nowait: bool = False,
) -> Iterator[tuple[str, str]]:
    """Yield ``(stream, data)`` for a job's output until it ends."""
    watcher = output_watch_async(
        flux_handle, jobid, labelio=labelio, log_stderr_level=log_stderr_level, nowait=nowait
    )
    stream, data = watcher.get_output()
    while stream is not None and data is not None:
        yield stream, data
        stream, data = watcher.get_output()


def output_watch_lines(
    flux_handle: Flux,
    jobid: Any,
    labelio: bool = False,
    log_stderr_level: int = LOG_TRACE,
    nowait: bool = False,
    keepends: bool = False,
) -> Iterator[tuple[str, str]]:
    """Yield ``(stream, line)`` for a job's output until it ends."""
    watcher = output_watch_lines_async(
        flux_handle,
        jobid,
        labelio=labelio,
        log_stderr_level=log_stderr_level,
        nowait=nowait,
        keepends=keepends,
    )
    stream, line = watcher.getline()
    while stream is not None and line is not None:
        yield stream, line
        stream, line = watcher.getline()
