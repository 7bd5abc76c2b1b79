"""A command run on a real pseudo-terminal, as a user at a terminal would run it.

The command leads a new session whose controlling terminal is the pty, so
what is typed (Ctrl-C, Ctrl-Z) reaches it as signals from the terminal
driver, and what it writes is read from the master side, as a terminal
shows it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time

from support.instance import PFLUX, environ
from support.screen import screen

TIMEOUT = 60.0


# run in the new session: take its stdin, the pty, as controlling terminal, then exec
_ACQUIRE_TTY = (
    "import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)


class Terminal:
    """``pflux ARGS`` with stdin, stdout and stderr on one pty; ``text`` is what it shows."""

    def __init__(
        self,
        uri: str,
        *args: str,
        stdin_tty: bool = True,
        size: tuple[int, int] = (24, 80),
        **env: str,
    ) -> None:
        self.master, slave = os.openpty()
        self.resize(*size)
        stdin: int | None = slave if stdin_tty else subprocess.DEVNULL
        command = [str(PFLUX), *args]
        if stdin_tty:
            command = [sys.executable, "-c", _ACQUIRE_TTY, *command]
        self.proc = subprocess.Popen(
            command,
            stdin=stdin,
            stdout=slave,
            stderr=slave,
            env=environ(PFLUX_URI=uri, **{"TERM": "dumb", **env}),  # TERM=xterm: a full screen
            start_new_session=True,
        )
        os.close(slave)
        self.data = b""

    @property
    def text(self) -> str:
        return self.data.decode(errors="replace")

    def resize(self, rows: int, cols: int) -> None:
        """Give the terminal a new size: its foreground process group gets SIGWINCH."""
        self.size = (rows, cols)
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def send(self, data: bytes) -> None:
        os.write(self.master, data)

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: every slave fd is closed
            return False
        self.data += chunk
        return bool(chunk)

    def expect(self, pattern: str, start: int = 0, timeout: float = TIMEOUT) -> re.Match[str]:
        """Read until ``pattern`` appears after offset ``start`` of the text; the match."""
        deadline = time.monotonic() + timeout
        while True:
            found = re.compile(pattern).search(self.text, start)
            if found:
                return found
            left = deadline - time.monotonic()
            if left <= 0 or not self._read(left):
                raise AssertionError(f"{pattern!r} not shown; the terminal shows {self.text!r}")

    def expect_screen(self, pattern: str, timeout: float = TIMEOUT) -> re.Match[str]:
        """Read until the screen, as an xterm shows it (lines joined by newlines),
        matches ``pattern``; for full-screen programs, which redraw only what changes."""
        deadline = time.monotonic() + timeout
        while True:
            shown = "\n".join(screen(self.text, *self.size))
            found = re.compile(pattern).search(shown)
            if found:
                return found
            left = deadline - time.monotonic()
            if left <= 0 or (not self._read(min(left, 1.0)) and self.proc.poll() is not None):
                raise AssertionError(f"{pattern!r} not on the screen; it shows:\n{shown}")

    def wait(self, timeout: float = TIMEOUT) -> int:
        """Read to the end; the command's exit status."""
        deadline = time.monotonic() + timeout
        while self._read(max(deadline - time.monotonic(), 0.0)):
            if time.monotonic() > deadline:
                break
        return self.proc.wait(timeout=max(deadline - time.monotonic(), 1.0))

    def close(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, 9)
            self.proc.wait()
        os.close(self.master)

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
