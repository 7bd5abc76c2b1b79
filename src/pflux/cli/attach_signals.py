"""The signals ``pflux job attach`` and ``pflux run`` catch, as ``flux job attach`` does.

A first Ctrl-C (SIGINT) only says what a second would do; a second within
2 s cancels the job; Ctrl-Z (SIGTSTP) within 2 s of a Ctrl-C detaches,
leaving the job running, and a Ctrl-Z after that window suspends the client
as usual, once warned. SIGTERM, SIGHUP, SIGALRM, SIGUSR1 and SIGUSR2 are
sent on to the job's tasks (``Client.kill``). Signals are noted by
the interpreter on a wakeup fd, so the attach loop handles them between
messages rather than inside a handler that could interrupt the connection.
They are set through ``_signal``: the ``signal`` module would build its enums of
every signal and handler first, more than a millisecond of a short command.
"""

from __future__ import annotations

import os
import sys
import time

from pflux.cli import base

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import signal as _signal  # the same names, typed
    from collections.abc import Callable
    from types import FrameType
    from typing import Any, Final

    from pflux import Client
else:
    import _signal

__all__ = ["FORWARDED", "Signals"]

FORWARDED: Final = (
    _signal.SIGTERM,
    _signal.SIGHUP,
    _signal.SIGALRM,
    _signal.SIGUSR1,
    _signal.SIGUSR2,
)
CTRL_C_WINDOW: Final = 2.0  # seconds within which a second Ctrl-C cancels
CTRL_C_NOTICE: Final = "one more ctrl-C within 2s to cancel or ctrl-Z to detach"
CANCEL_NOTE: Final = "interrupted by ctrl-C"


def _noted(signum: int, frame: FrameType | None) -> None:
    """The Python-level handler: the wakeup fd has the signal already."""


class Signals:
    """Catching the attach signals from ``__enter__`` to ``__exit__``, then putting back."""

    def __init__(self) -> None:
        self.fd = -1
        self._write = -1
        self._saved: dict[int, Any] = {}
        self._saved_wakeup = -1
        self._t_sigint = -CTRL_C_WINDOW - 1.0
        self.detached = False
        self._on_winch: Callable[[], None] | None = None

    def __enter__(self) -> Signals:
        self.fd, self._write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._saved_wakeup = _signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        for signum in (_signal.SIGINT, *FORWARDED):
            self._catch(signum)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._saved.items():
            _signal.signal(signum, handler)
        self._saved.clear()
        _signal.set_wakeup_fd(self._saved_wakeup)
        os.close(self.fd)
        os.close(self._write)

    def _catch(self, signum: int) -> None:
        previous = _signal.signal(signum, _noted)
        self._saved.setdefault(signum, previous)

    def on_winch(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` when the terminal's size changes (SIGWINCH), from now on."""
        self._on_winch = callback
        self._catch(_signal.SIGWINCH)

    def handle(self, client: Client, jobid: int) -> None:
        """The wakeup fd is readable: act on each signal it names for job ``jobid``."""
        try:
            data = os.read(self.fd, 256)
        except BlockingIOError:
            return
        for signum in data:
            if signum == _signal.SIGINT:
                self._interrupt(client, jobid)
            elif signum == _signal.SIGTSTP:
                self._stop()
            elif signum == _signal.SIGWINCH and self._on_winch is not None:
                self._on_winch()
            elif signum in FORWARDED:
                _told("kill", client.kill, jobid, signum)

    def _interrupt(self, client: Client, jobid: int) -> None:
        now = time.monotonic()
        if now - self._t_sigint > CTRL_C_WINDOW:
            self._t_sigint = now
            self._catch(_signal.SIGTSTP)
            _say(CTRL_C_NOTICE)
            return
        _told("cancel", client.cancel, jobid, CANCEL_NOTE)

    def _stop(self) -> None:
        if time.monotonic() - self._t_sigint <= CTRL_C_WINDOW:
            _say("detaching...")
            self.detached = True
            return
        _signal.signal(_signal.SIGTSTP, self._saved.pop(_signal.SIGTSTP, _signal.SIG_DFL))
        _say("one more ctrl-Z to suspend")


def _say(text: str) -> None:
    sys.stderr.write(f"{base.PROG}-job: {text}\n")
    sys.stderr.flush()


def _told(what: str, request: Callable[..., None], *args: Any) -> None:
    """Make ``request``; a refusal is reported, as flux-core does, and the attach goes on."""
    from pflux.errors import RPCError

    try:
        request(*args)
    except RPCError as exc:
        _say(f"{what}: {exc.errstr or os.strerror(exc.errnum)}")
