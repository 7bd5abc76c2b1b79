"""Reading, following and printing job eventlogs: what ``job eventlog`` and ``wait-event`` share.

Paths have flux's short names (``exec`` is ``guest.exec.eventlog``, ``output``
is ``guest.output``) and each known log has the event that ends it, which
``eventlog --follow`` waits for. Events print in flux's text form
(``<timestamp> <name> key=value ...``) or as their JSON lines.
"""

from __future__ import annotations

import argparse
import errno
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from pflux.broker.message import RPCError
from pflux.spec.eventlog import Event, EventlogReader, TextFormatter, format_text

if TYPE_CHECKING:
    from pflux.client.handle import Handle
    from pflux.spec.fluid import JobID

# short name -> (path under the job's KVS directory, the event that ends that log)
PATHS: dict[str, tuple[str, str | None]] = {
    "eventlog": ("eventlog", "clean"),
    "exec": ("guest.exec.eventlog", "done"),
    "output": ("guest.output", None),
    "input": ("guest.input", None),
}
_BY_PATH = {path: (path, end) for path, end in PATHS.values()}


def resolve(name: str) -> tuple[str, str | None]:
    """The path a short name or full path means, and the event that ends its log, if known."""
    return PATHS.get(name) or _BY_PATH.get(name) or (name, None)


def add_path_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-p",
        "--path",
        default="eventlog",
        help="eventlog to read: eventlog (default), exec, output, input, or a full path"
        " such as guest.exec.eventlog",
    )


def add_format_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-f", "--format", choices=("text", "json"), default="text", help="output format"
    )
    parser.add_argument(
        "-T",
        "--time-format",
        choices=("raw", "iso", "offset"),
        default="raw",
        help="timestamps as seconds (raw), ISO 8601 (iso), or seconds since the first event",
    )
    parser.add_argument(
        "-H", "--human", action="store_true", help="human-readable text (implies --format=text)"
    )


class EventPrinter:
    """Formats events as the options ask, counting offsets from the first event *seen*.

    An event seen but not printed (``wait-event`` skips most) still sets the
    offset origin, as flux does.
    """

    def __init__(self, args: argparse.Namespace) -> None:
        self.json = args.format == "json" and not args.human
        self.time_format = "human" if args.human else args.time_format
        self.human = TextFormatter("human") if args.human else None
        self.t0: float | None = None

    def seen(self, event: Event) -> None:
        if self.t0 is None:
            self.t0 = event.timestamp

    def line(self, event: Event) -> str:
        self.seen(event)
        if self.json:
            return event.to_line()
        if self.human is not None:
            return self.human.format(event) + "\n"
        return format_text(event, time_format=self.time_format, t0=self.t0) + "\n"


def read(handle: Handle, jobid: JobID, path: str) -> Iterator[Event]:
    """The events of a job's log as it is now, parsed as its pieces arrive."""
    reader = EventlogReader()
    for text in _pieces(handle, jobid, path):
        yield from reader.feed(text)
    reader.finish()


def read_text(handle: Handle, jobid: JobID, path: str) -> str:
    """A job's log as it is now, as text."""
    return "".join(_pieces(handle, jobid, path))


def _pieces(handle: Handle, jobid: JobID, path: str) -> Iterator[str]:
    """A job's log in pieces. The job eventlog comes through job-info (which checks
    ownership); a guest log straight from the KVS, since job-info can only follow
    those, a piece at a time (a job's output may be larger than a message)."""
    if path == "eventlog":
        reply = handle.call("job-info.lookup", {"id": int(jobid), "keys": ["eventlog"]})
        yield reply["eventlog"]
        return
    from pflux.spec.kvs_keys import job_key

    rpc = handle.rpc("kvs.get", {"key": job_key(jobid, *path.split("."))}, streaming=True)
    try:
        for reply in rpc:
            yield reply["value"]
    except RPCError as exc:
        if exc.errnum in (errno.ENOENT, errno.EISDIR):
            raise RPCError(exc.errnum, f"eventlog path {path} not found") from None
        raise


def follow(handle: Handle, jobid: JobID, path: str, timeout: float | None) -> Iterator[Event]:
    """A log's events from the first, live, until job-info ends the stream.

    Raises RPCTimeout (ETIMEDOUT) once ``timeout`` seconds have passed in all.
    Standard output is flushed before each wait, so a pipe sees events as they come.
    """
    reader = EventlogReader()
    payload = {"id": int(jobid), "path": path}
    rpc = handle.rpc("job-info.eventlog-watch", payload, streaming=True, wait=True)
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        msg = rpc.next_message(remaining)
        if msg.errnum == errno.ENODATA:
            reader.finish()
            return
        yield from reader.feed(msg.raise_for_error()["data"])
        sys.stdout.flush()
