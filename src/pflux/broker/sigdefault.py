"""Commands the broker's services start begin with every signal at its default action.

A signal ignored by whoever started the instance (``trap '' INT``, nohup's
SIGHUP) is ignored in the broker, and an ignored signal stays ignored across
exec, where a shell script cannot even trap it. The subprocess module sets only
SIGPIPE and SIGXFSZ (which Python itself ignores) back; the broker's loop
(uvloop: libuv's spawn) signals 1 to 31, not the real-time ones. Job tasks start
with every signal at its default (``pflux.shell.tasks``): ``preexec`` gives the
commands of ``pflux exec`` and the job manager's prolog and epilog the same.
"""

from __future__ import annotations

import signal
from collections.abc import Callable

__all__ = ["preexec"]

_RESTORED = frozenset((signal.SIGPIPE, signal.SIGXFSZ))  # every spawn sets these back


def preexec() -> Callable[[], None] | None:
    """A ``preexec_fn`` that sets the signals the broker ignores to their default in the
    child; None when there are none to set (the common case, which keeps the spawn
    free of Python code in the child)."""
    ignored = tuple(
        sig for sig in signal.valid_signals() - _RESTORED if signal.getsignal(sig) == signal.SIG_IGN
    )
    if not ignored:
        return None

    def default() -> None:
        for sig in ignored:
            signal.signal(sig, signal.SIG_DFL)

    return default
