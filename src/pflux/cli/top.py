"""``pflux top``: a live view of an instance's resources and running jobs, as flux-top(1).

A summary pane (nodes, cores and GPUs used as bars, jobs by state, size, depth,
uptime, version) above the running jobs, newest first. It redraws every 2 s
(flux's interval) and on a key: ``q`` quits (or goes back up from a nested
instance), ``j``/``k`` and the arrows move, ``enter`` opens a job that is a
nested instance whose URI it posted, ``d`` toggles complete/failed against
inactive, Ctrl-L redraws. Drawn with the standard library's curses (imported
only here): nothing to install, under a millisecond to import, and no CPU
while it waits for a key or the timer.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from dataclasses import dataclass

from pflux.cli import base
from pflux.errors import PfluxError, UsageError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from pflux import Client, JobListing
    from pflux.cli.topview import Counts, Snapshot

REFRESH_MS = 2000  # flux top's refresh interval


def parser() -> argparse.ArgumentParser:
    p = base.parser("top", "Display a live view of the instance's resources and running jobs.")
    p.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    p.add_argument(
        "--color",
        nargs="?",
        const="always",
        default="auto",
        metavar="WHEN",
        help="colorize: auto (on a terminal that has colors), always, never",
    )
    p.add_argument("-q", "--queue", metavar="NAME", help="only this queue's jobs")
    p.add_argument("--test-exit", action="store_true", help="draw once and exit (for tests)")
    p.add_argument(
        "target", nargs="?", metavar="TARGET", help="a URI, or the id of a nested instance's job"
    )
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    return base.run("top", lambda: _top(args))


@dataclass
class _View:
    """One instance on the stack of those opened with enter."""

    client: Client
    title: str
    counts: Counts
    selected: int = 0
    snap: Snapshot | None = None
    lumped: bool = False  # inactive jobs as one count (d), not complete and failed
    queue: str | None = None  # --queue: only its jobs (the root instance's only)


def _top(args: argparse.Namespace) -> None:
    if args.color not in ("auto", "always", "never"):
        raise UsageError(f"--color: {args.color!r} must be 'auto', 'always' or 'never'")
    from pflux import Client
    from pflux.cli.topview import Counts

    client = Client(args.uri)
    if args.queue is not None and args.queue not in client.queues():
        client.close()
        raise UsageError(f"--queue: {args.queue!r} is not a valid queue")
    if not os.isatty(0):
        client.close()
        raise PfluxError("stdin is not a terminal")
    title = ""
    if args.target is not None:
        uri, title = _resolve(client, args.target)
        client.close()
        client = Client(uri)
    import curses

    stack = [_View(client, title, Counts(), queue=args.queue)]
    try:
        curses.wrapper(_loop, stack, args.color, args.test_exit)
    finally:
        for view in stack:
            view.client.close()


def _resolve(client: Client, target: str) -> tuple[str, str]:
    """TARGET's URI and title: a URI as given, a job id as the URI its instance posted."""
    if "://" in target:
        return target, ""
    from pflux.cli.topview import nested_uri
    from pflux.errors import RPCError
    from pflux.spec.fluid import JobID
    from pflux.spec.states import State

    try:
        jobid = JobID.parse(target)
    except ValueError:
        raise UsageError(f"TARGET: {target} is neither a URI nor a valid jobid") from None
    try:
        job = client.job_info(jobid, attrs=("state", "annotations"))
    except RPCError as exc:
        raise PfluxError(f"jobid {target} not found") from exc
    if job.state is None or not job.state & State.RUNNING:
        raise PfluxError(f"jobid {target} is not running")
    uri = nested_uri(job)
    if uri is None:
        raise PfluxError(f"URI not found for job {target}: it has posted none (not an instance)")
    return uri, jobid.f58


def _loop(screen: Any, stack: list[_View], color: str, test_exit: bool) -> None:
    import curses
    import time

    from pflux.cli.topview import fetch

    colors = color == "always" or (color == "auto" and curses.has_colors())
    if colors:
        curses.use_default_colors()
        for pair, fg in ((1, curses.COLOR_YELLOW), (2, curses.COLOR_BLUE)):
            curses.init_pair(pair, fg, -1)
    with contextlib.suppress(curses.error):  # a terminal that cannot hide it shows it
        curses.curs_set(0)
    screen.timeout(REFRESH_MS)
    note = ""
    due = 0.0
    while stack:
        view = stack[-1]
        if view.snap is None or time.monotonic() >= due:
            view.snap = fetch(view.client, view.counts, queue=view.queue)
            due = time.monotonic() + REFRESH_MS / 1000
        _draw(screen, view, colors, note)
        if test_exit:
            return
        note = _key(screen, stack, view, screen.getch())


def _key(screen: Any, stack: list[_View], view: _View, key: int) -> str:
    """Act on a key pressed (-1: none, the timer); the note to show, if any."""
    import curses

    assert view.snap is not None
    jobs = view.snap.jobs
    if key == ord("q"):
        stack.pop().client.close()
    elif key in (ord("j"), curses.KEY_DOWN):
        view.selected = min(view.selected + 1, max(len(jobs) - 1, 0))
    elif key in (ord("k"), curses.KEY_UP):
        view.selected = max(view.selected - 1, 0)
    elif key == ord("d"):
        view.lumped = not view.lumped
    elif key == 12:  # Ctrl-L
        screen.clear()
    elif key in (10, 13, curses.KEY_ENTER) and jobs:
        return _open(stack, view, jobs[min(view.selected, len(jobs) - 1)])
    return ""


def _open(stack: list[_View], view: _View, job: JobListing) -> str:
    """Descend into the selected job's instance; else the note saying why not."""
    from pflux import Client
    from pflux.cli.topview import Counts, nested_uri
    from pflux.spec.fluid import JobID

    jobid = JobID(job.id).f58
    uri = nested_uri(job)
    if uri is None:
        return f"{jobid}: not an instance whose URI is known"
    try:
        client = Client(uri)
    except PfluxError as exc:
        return f"{jobid}: {exc}"
    title = f"{view.title}/{jobid}" if view.title else jobid
    stack.append(_View(client, title, Counts()))
    return ""


def _draw(screen: Any, view: _View, colors: bool, note: str) -> None:
    import curses
    import time

    from pflux.cli.topview import HEADER, job_line, nested_uri, summary

    assert view.snap is not None
    rows, cols = screen.getmaxyx()
    now = time.time()
    screen.erase()

    def put(y: int, text: str, attr: int = 0) -> None:
        if 0 <= y < rows:
            with contextlib.suppress(curses.error):  # past the bottom-right corner
                screen.addnstr(y, 0, text, cols - 1, attr)

    top = summary(view.snap, view.title, now, details=not view.lumped)
    for y, line in enumerate(top):
        put(y, line, curses.color_pair(1) if colors and 1 <= y <= 3 else 0)
    y0 = len(top) + 1
    put(y0, HEADER.ljust(cols - 1), curses.A_REVERSE)
    jobs = view.snap.jobs
    view.selected = min(view.selected, max(len(jobs) - 1, 0))
    room = max(rows - y0 - 2, 1)
    first = max(view.selected - room + 1, 0)  # scrolled so that the selected job shows
    for i, job in enumerate(jobs[first : first + room]):
        attr = curses.A_BOLD if first + i == view.selected else 0
        if colors and nested_uri(job):
            attr |= curses.color_pair(2)
        put(y0 + 1 + i, job_line(job, now), attr)
    if note:
        put(rows - 1, note)
    screen.refresh()
