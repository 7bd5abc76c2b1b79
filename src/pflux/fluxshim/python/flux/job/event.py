"""Watching a job's eventlog: ``event_watch_async``, ``event_watch``, ``event_wait``.

``job-info.eventlog-watch`` streams the eventlog as text, one or more lines per
response, until the job is inactive and every line is sent (then ENODATA). The
future splits the lines: each event is one result, so a ``then`` callback is
called once per event, as with flux-core's.
"""

from __future__ import annotations

import errno

from flux.constants import FLUX_RPC_STREAMING
from flux.eventlog import EventLogEvent
from flux.job.JobID import JobID
from flux.rpc import RPC

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterator

    from flux.core.handle import Flux

# The events of the main eventlog flux-core's bindings name (RFC 21's, less those a
# tool does not watch for): what FluxExecutorFuture.add_event_callback accepts.
MAIN_EVENTS = frozenset(
    {
        "submit",
        "depend",
        "priority",
        "flux-restart",
        "urgency",
        "alloc",
        "free",
        "start",
        "release",
        "finish",
        "clean",
        "debug",
        "exception",
    }
)


class JobEventWatchFuture(RPC):
    """The events of one job's eventlog, one result each; ENODATA after the last."""

    def __init__(self, flux_handle: Flux, jobid: Any, eventlog: str = "eventlog") -> None:
        self.jobid = JobID(jobid)
        payload = {"id": int(self.jobid), "path": eventlog}
        super().__init__(flux_handle, "job-info.eventlog-watch", payload, flags=FLUX_RPC_STREAMING)

    def _on_response(self, payload: Any, errnum: int, errstr: str | None) -> None:
        if errnum:
            super()._on_response(payload, errnum, errstr)
            return
        for line in payload.get("data", "").splitlines():
            if line:
                self._fulfill(EventLogEvent(line))

    def get_event(self, autoreset: bool = True) -> EventLogEvent | None:
        """The next event (waiting for it), or None once the eventlog has ended; with
        ``autoreset`` the event is taken off, so the next call gives the one after."""
        self.wait_for()
        value, errnum, _errstr = self._results[0]
        if errnum == errno.ENODATA:
            return None
        if errnum:
            self._result()  # raises
        if autoreset:
            self.reset()
        event: EventLogEvent = value
        return event

    def cancel(self, stop: bool = False) -> None:
        """Stop watching: no more events are taken (``get_event`` then gives None);
        with ``stop``, the ``then`` callback is not called again either."""
        self.flux_handle._rpcs.pop(self._matchtag, None)
        if self._more:
            self._more = False
            self._fulfill_error(errno.ENODATA, None)
        if stop:
            self.stop()


def event_watch_async(
    flux_handle: Flux, jobid: Any, eventlog: str = "eventlog"
) -> JobEventWatchFuture:
    """Watch the events of a job's eventlog (``eventlog``: ``eventlog`` or
    ``guest.exec.eventlog``); ``get_event()`` gives each."""
    return JobEventWatchFuture(flux_handle, jobid, eventlog)


def event_watch(flux_handle: Flux, jobid: Any, eventlog: str = "eventlog") -> Iterator[Any]:
    """Yield each event of a job's eventlog until it ends."""
    watcher = event_watch_async(flux_handle, jobid, eventlog)
    event = watcher.get_event()
    while event is not None:
        yield event
        event = watcher.get_event()


class JobException(Exception):
    """An ``exception`` event of a job: ``timestamp``, ``type``, ``note``, ``severity``
    (0 is fatal)."""

    def __init__(self, event: EventLogEvent) -> None:
        self.timestamp = event.timestamp
        self.type = event.context["type"]
        self.note = event.context.get("note", "")
        self.severity = event.context["severity"]
        super().__init__()

    def __str__(self) -> str:
        return f"job.exception: type={self.type}: {self.note}"


def event_wait(
    flux_handle: Flux,
    jobid: Any,
    name: str,
    eventlog: str = "eventlog",
    raiseJobException: bool = True,  # noqa: N803 - flux-core's keyword
) -> EventLogEvent:
    """Wait for the event ``name`` and return it; a fatal exception before it raises
    JobException (unless ``raiseJobException`` is False), the eventlog's end without
    it OSError ENODATA."""
    for event in event_watch(flux_handle, jobid, eventlog):
        if event.name == name:
            found: EventLogEvent = event
            return found
        if raiseJobException and event.name == "exception" and event.context["severity"] == 0:
            raise JobException(event)
    raise OSError(errno.ENODATA, f"eventlog ended before event='{name}'")
