"""The status line ``pflux run`` and ``pflux job attach`` show while a job waits to start.

As ``flux job attach``: when stdin, stdout and stderr are all terminals (and
the job's events are not being printed), a job that has not started 2 s
after attaching gets one line on stderr, rewritten every second, saying what
it waits for (from its last event) and the time since it was submitted; the
line ends when the job starts or is over, and a fatal exception stops it.
"""

from __future__ import annotations

import os
import sys
import time

from pflux.cli import base

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Final

__all__ = ["FIRST_AFTER", "StatusLine", "wanted"]

FIRST_AFTER: Final = 2.0  # seconds after attaching before the line first shows
EVERY: Final = 1.0

# what a job waits for after each event (flux-core's words); other events keep the last
_WAITING: Final = {
    "submit": "submitted",
    "validate": "resolving dependencies",
    "depend": "waiting for priority assignment",
    "priority": "waiting for resources",
    "alloc": "starting",
    "start": "started",
}


def wanted(show_events: bool) -> bool:
    """Whether to keep a status line: used interactively, events not printed."""
    return not show_events and all(os.isatty(fd) for fd in (0, 1, 2))


class StatusLine:
    """The line's state: the job's last word on what it waits for, and when to draw it."""

    def __init__(self, jobid: str) -> None:
        self.jobid = jobid
        self.message: str | None = None
        self.t0 = 0.0  # the submit event's time
        self.due: float | None = time.monotonic() + FIRST_AFTER
        self.shown = False
        self.prologs = 0
        self.stopped = False  # a fatal exception: the line no longer changes

    def timeout(self) -> float | None:
        """Seconds until the line is due, None once it is over."""
        if self.due is None:
            return None
        return max(0.0, self.due - time.monotonic())

    def tick(self) -> None:
        """The line is due: draw it, and again in a second."""
        if self.due is None or time.monotonic() < self.due:
            return
        self.shown = True
        self.due = time.monotonic() + EVERY
        self._draw()

    def event(self, name: str, timestamp: float, fatal: bool) -> None:
        """A job event: what it waits for now; the line ends at ``start`` and ``clean``."""
        if not self.t0:
            self.t0 = timestamp
        if fatal:
            self.message = "canceling due to exception"
        elif name == "prolog-start":
            self.prologs += 1
            self.message = "waiting for prolog"
        elif name == "prolog-finish":
            self.prologs -= 1
            self.message = "waiting for prolog" if self.prologs > 0 else "starting"
        else:
            self.message = _WAITING.get(name, self.message)
        self.stopped = self.stopped or fatal
        if self.shown:
            self._draw()
        if name in ("start", "clean"):
            self.end()

    def before_text(self) -> None:
        """Something else is written on stderr: clear the line first."""
        if self.shown:
            sys.stderr.write("\r\033[K")

    def end(self) -> None:
        """The job started or is over: end the line, and show no more."""
        if self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()
        self.shown = False
        self.due = None

    def _draw(self) -> None:
        if self.stopped or self.message is None:
            return
        elapsed = int(time.time() - self.t0) if self.t0 else 0
        try:
            columns = os.get_terminal_size(0).columns
        except OSError:
            columns = 80
        width = max(columns - 20 - len(self.jobid), 0)
        clock = f"{elapsed // 3600:02d}:{elapsed // 60 % 60:02d}:{elapsed % 60:02d}"
        sys.stderr.write(f"\r{base.PROG}-job: {self.jobid} {self.message:<{width}} {clock}\r")
        sys.stderr.flush()
