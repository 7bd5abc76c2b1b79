"""``--progress`` of ``submit``/``bulksubmit``: flux's bar on the terminal's last line.

Submitting alone: ``Submitting N jobs: │███   │ 42.0% 0:00:03``; with ``--wait`` or
``--watch``, the jobs' counts first (``PD:1   R:2   CD:3   F:0   ``). ``--jps`` puts
jobs/s where the elapsed time is. The line is held with vt100 escapes (every row
above it scrolls); on stop the last bar stays as a line of output. Drawn only when
stdout is a terminal: elsewhere ``--progress`` is refused with flux's warning and
the command goes on without it.
"""

from __future__ import annotations

import sys
import time
from datetime import timedelta

from pflux.cli import base

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, TextIO

#  flux's "vertbars" style: a cell's eighths, empty first
STYLE = " \u258f\u258e\u258d\u258c\u258b\u258a\u2589\u2588"
SUBMIT_BEFORE = "Submitting {total} jobs: "
WAIT_BEFORE = (
    "PD:{pending:<{width}} R:{running:<{width}} CD:{complete:<{width}} F:{failed:<{width}} "
)
ELAPSED = "{percent:5.1f}% {elapsed}"
JPS = "{percent:5.1f}% {jps:4.1f} job/s"
#  at most this many redraws a second, however fast jobs go
REDRAW_S = 0.25


def wanted(progress: bool, out: TextIO | None = None) -> bool:
    """Whether to draw: asked for and stdout a terminal (else flux's warning, once)."""
    out = sys.stdout if out is None else out
    if progress and not out.isatty():
        print(
            f"{base.PROG}: WARNING: stdout is not a tty. Ignoring --progress option",
            file=sys.stderr,
        )
        return False
    return progress


class ProgressBar:
    """``count`` of ``total`` jobs done, drawn on the last line of ``out``."""

    def __init__(self, total: int, *, jps: bool, counts: bool, out: TextIO | None = None) -> None:
        self.out = sys.stdout if out is None else out
        self.total = total
        self.count = 0
        self.before = WAIT_BEFORE if counts else SUBMIT_BEFORE
        self.after = JPS if jps else ELAPSED
        self.values: dict[str, int] = {"pending": 0, "running": 0, "complete": 0, "failed": 0}
        self.t0 = time.time()
        self.size: Any = None
        self.drawn = 0.0

    def start(self) -> ProgressBar:
        self.t0 = time.time()
        self.redraw(force=True)
        return self

    def update(self, advance: int = 0, **values: int) -> None:
        """Advance the count and change the job counts; redrawn at most every 0.25 s."""
        self.count += advance
        self.values.update(values)
        self.redraw(force=self.count == self.total)

    def text(self, width: int) -> str:
        """The line for a terminal ``width`` columns wide (flux's bar algorithm)."""
        elapsed = time.time() - self.t0
        fraction = self.count / self.total if self.total else 1.0
        fields = dict(
            self.values,
            total=self.total,
            width=len(str(self.total)) if self.before == SUBMIT_BEFORE else 3,
            percent=100 * fraction,
            elapsed=timedelta(seconds=round(elapsed)),
            jps=(self.count + 1) / elapsed if elapsed > 0 else 0.0,
        )
        before = self.before.format(**fields)
        after = self.after.format(**fields)
        length = max(width - len(before) - len(after) - 2, 0)
        fill = int(length * fraction)
        filled = STYLE[-1] * fill
        part = int(length * len(STYLE) * fraction) - fill * len(STYLE)
        if part:
            fill += 1
            filled += STYLE[part]
        return f"{before}\u2502{filled}{STYLE[0] * (length - fill)}\u2502{after}"

    def redraw(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.drawn < REDRAW_S:
            return
        self.drawn = now
        import shutil  # here: submit imports this module, and most submits draw no bar

        size = shutil.get_terminal_size()
        if size != self.size:
            self.size = size
            # every row but the last scrolls; the cursor stays where it was
            self.out.write(f"\0337\033[r\0338\033D\033M\0337\033[1;{size.lines - 1}r\0338")
        line = self.text(size.columns)
        self.out.write(f"\0337\033[{size.lines};1H\033[2K\033[?7l\033[0m{line}\033[?7h\0338")
        self.out.flush()

    def stop(self) -> None:
        """Give the terminal back its scrolling; the last bar stays as a line."""
        if self.size is None:
            return
        line = self.text(self.size.columns)
        self.out.write(f"\0337\033[{self.size.lines};1H\033[K\033[r\0338{line}\n")
        self.out.flush()
        self.size = None
