"""``flux.progress``: a status line kept on the terminal's last row, and a progress bar
drawn in it.

The line is held with vt100 escapes: the scroll region is set to every row but the
last, so other output scrolls above it. As in flux-core the classes draw whether or
not stdout is a terminal; a caller checks ``sys.stdout.isatty()`` before starting one.
"""

from __future__ import annotations

import atexit
import datetime
import shutil
import sys
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from typing import Any, Callable, ClassVar

ESC = "\033"
SAVE, RESTORE = ESC + "7", ESC + "8"


class ElapsedTime(float):
    """Seconds elapsed, with ``dt`` giving them as a ``datetime.timedelta``."""

    @property
    def dt(self) -> datetime.timedelta:
        return datetime.timedelta(seconds=round(self))


class Bottombar:
    """A status line at the terminal's bottom: ``formatter(bbar, width)`` gives its text
    (the default lists the keyword arguments as ``key=value``). Extra keyword arguments
    are kept and read back as attributes (``bb.i``); ``bb.elapsed`` is the time since
    ``start()``."""

    def __init__(self, formatter: Callable[..., str] | None = None, **kwargs: Any) -> None:
        self.size: Any = None
        self.formatter = self._format if formatter is None else formatter
        self.kwargs = kwargs
        self._running = False
        self._t0: float | None = None

    def __getattr__(self, attr: str) -> Any:
        if attr == "elapsed":
            return ElapsedTime(time.time() - (self._t0 or time.time()))
        try:
            return self.kwargs[attr]
        except KeyError:
            raise AttributeError(attr) from None

    def _format(self, _bbar: Bottombar, _width: int) -> str:
        return " ".join(f"{key}={val}" for key, val in self.kwargs.items())

    def __str__(self) -> str:
        return str(self.formatter(self, self.size.columns))

    def _setup_terminal(self, size: Any = None) -> None:
        """Make every row but the last the scroll region, keeping the cursor."""
        if size:
            self.size = size
        sys.stdout.write(
            f"{SAVE}{ESC}[r{RESTORE}{ESC}D{ESC}M{SAVE}{ESC}[1;{self.size.lines - 1}r{RESTORE}"
        )

    def _reset_terminal(self) -> None:
        """Give the whole terminal back to scrolling and leave the last text on a line."""
        sys.stdout.write(f"{SAVE}{ESC}[{self.size.lines};1H{ESC}[K{ESC}[r{RESTORE}{self}\n")
        atexit.unregister(self._reset_terminal)

    def redraw(self) -> None:
        """Draw the line again with the current values (and terminal size)."""
        size = shutil.get_terminal_size()
        if self.size != size:
            self._setup_terminal(size)
        sys.stdout.write(
            f"{SAVE}{ESC}[{self.size.lines};1H{ESC}[2K{ESC}[?7l{ESC}[0m{self}{ESC}[?7h{RESTORE}"
        )
        sys.stdout.flush()

    def start(self) -> Bottombar:
        """Draw the line; the terminal is put back at exit if ``stop()`` is never called."""
        self._running = True
        self._t0 = time.time()
        self.redraw()
        atexit.register(self._reset_terminal)
        return self

    def stop(self) -> None:
        """Put the terminal back, leaving the line's last text followed by a newline."""
        if self._running:
            self._reset_terminal()
            self._running = False

    def update(self, **kwargs: Any) -> None:
        """Change kept values and redraw (if started)."""
        self.kwargs.update(kwargs)
        if self._running:
            self.redraw()


class ProgressBar(Bottombar):
    """A bar of ``count`` out of ``total`` in the bottom line, between the ``before`` and
    ``after`` texts. Those are format strings given ``total``, ``count``, ``percent``,
    ``elapsed`` and the extra keyword arguments. ``style`` is one of ``bar_style``;
    ``autostop`` stops the bar when ``count`` reaches ``total``."""

    bar_style: ClassVar[dict[str, str]] = {
        "line": "\u2500\u2501",
        "bar": "\u2500\u2588",
        "dots": "\u28c0\u28c4\u28e4\u28e6\u28f6\u28f7\u28ff",
        "steps": " \u2581\u2582\u2583\u2584\u2585\u2586\u2587\u2588",
        "vertbars": " \u258f\u258e\u258d\u258c\u258b\u258a\u2589\u2588",
    }

    def __init__(
        self,
        total: int = 100,
        style: str = "vertbars",
        before: str = "",
        after: str = " {percent:5.1f}%",
        autostop: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(self._formatter, **kwargs)
        self.count = 0
        self.total = total
        self.before = before
        self.after = after
        self.style = self.bar_style[style]
        self.autostop = autostop

    def _formatter(self, bbar: Bottombar, width: int) -> str:
        fraction = float(self.count / self.total)
        values = dict(
            bbar.kwargs,
            total=self.total,
            count=self.count,
            elapsed=self.elapsed,
            percent=100 * fraction,
        )
        before = self.before.format(**values)
        after = self.after.format(**values)
        style = self.style
        length = width - len(before) - len(after) - 2
        fill = int(length * fraction)
        filled = style[-1] * fill
        part = int(length * len(style) * fraction) - fill * len(style)
        if part:
            fill += 1
            filled += style[part]
        return f"{before}\u2502{filled}{style[0] * (length - fill)}\u2502{after}"

    def update(self, advance: int = 1, **kwargs: Any) -> None:
        """Advance the count by ``advance``, change kept values, redraw; stop at
        ``total`` if ``autostop``."""
        self.count += advance
        super().update(**kwargs)
        if self.count == self.total and self.autostop:
            self.stop()
