"""One process at a time on a file: an exclusive ``flock`` on a lock file beside it."""

from __future__ import annotations

import fcntl
import os


class LockHeld(Exception):
    """Another process holds the lock."""


def take(path: str) -> int:
    """Lock ``path`` (created mode 0600) for this process, or raise at once.

    Returns the descriptor that holds the lock until it is closed. OSError if the
    file cannot be opened; LockHeld if another process holds the lock.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise LockHeld(path) from None
    return fd
