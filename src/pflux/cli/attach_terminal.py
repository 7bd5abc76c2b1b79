"""The client's terminal made the job's pty's, for ``pflux run -o pty.interactive``.

pflux's shells have no broker connection, so the pty is reached through
job-exec: keystrokes go as standard input (``job-exec.stdin``, written to
the pty's master by the shell) and the pty's output comes back in the
output eventlog. Once the job starts, the local terminal is put in raw mode
(so Ctrl-C, Ctrl-Z and every key go to the job's terminal, not to this
client) and its size is sent (``job-exec.winsize``), again on every
SIGWINCH; the terminal's settings are put back when the job ends, or the
client exits.
"""

from __future__ import annotations

import os

from pflux.cli import base

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from pflux import Client

__all__ = ["RawTerminal", "asks_interactive", "looked_up"]


def asks_interactive(jobspec: Any) -> bool:
    """Whether a jobspec asks for an interactive pty (``-o pty.interactive``).

    job-exec's reading of the option (``pflux.exec.terminal``) refuses
    a bad one; this only looks for the flag.
    """
    try:
        option = jobspec["attributes"]["system"]["shell"]["options"]["pty"]
        return isinstance(option, dict) and bool(option.get("interactive", False))
    except (KeyError, TypeError):
        return False


def looked_up(client: Client, jobid: int) -> bool:
    """Whether job ``jobid`` asks for an interactive pty, by its jobspec (``job attach``).

    A job that cannot be looked up is not: following its eventlog says why.
    """
    import json

    from pflux.errors import RPCError

    try:
        return asks_interactive(json.loads(client.lookup(jobid, ["jobspec"])["jobspec"]))
    except (RPCError, ValueError, KeyError, TypeError):
        return False


class RawTerminal:
    """The local terminal, raw while the job's pty is its; does nothing if stdin is no tty."""

    def __init__(self, client: Client, jobid: int) -> None:
        self.client = client
        self.jobid = jobid
        self.saved: list[Any] | None = None
        self.began = False

    def begin(self) -> None:
        """The job runs: make the terminal raw and tell the job its size."""
        self.began = True
        if not os.isatty(0):
            return
        import termios
        import tty

        self.saved = termios.tcgetattr(0)
        tty.setraw(0, termios.TCSADRAIN)
        self.resize()

    def resize(self) -> None:
        """Send the terminal's size to the job's ptys."""
        if self.saved is None:
            return
        import errno

        from pflux.errors import RPCError

        size = os.get_terminal_size(0)
        try:
            self.client.send_winsize(self.jobid, rows=size.lines, cols=size.columns)
        except RPCError as exc:  # a size sent as the job ended finds no pty: no loss
            if exc.errnum != errno.ENOSYS:
                _say(f"winsize: {exc.errstr or os.strerror(exc.errnum)}")

    def end(self) -> None:
        """Put the terminal's settings back (before anything else is written on it)."""
        if self.saved is not None:
            import termios

            saved, self.saved = self.saved, None
            try:
                termios.tcsetattr(0, termios.TCSADRAIN, saved)
            except termios.error:  # the terminal is gone (hung up)
                return


def _say(text: str) -> None:
    """A complaint on the raw terminal (its lines need a carriage return)."""
    import sys

    sys.stderr.write(f"{base.PROG}-job: {text}\r\n")
