"""A file replaced whole: a crash, even of the machine, leaves the old one or the new.

The new content goes to ``PATH.new``, made afresh (never through a link another
left there), written in full and synced, then renamed over ``PATH``.
"""

from __future__ import annotations

import contextlib
import os

__all__ = ["replace_file"]


def replace_file(path: str, data: bytes) -> None:
    """Put a file of ``data``, mode 0600, in place of ``path``; OSError if it cannot."""
    new = f"{path}.new"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(new)
    fd = os.open(new, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(new, path)
