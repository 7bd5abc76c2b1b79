"""Processes that are not the test's children: their ends, awaited on pidfds."""

from __future__ import annotations

import os
import select


def children(pid: int) -> list[int]:
    """The direct children of ``pid``."""
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(p) for p in f.read().split()]


def pidfd_wait(pids: list[int], timeout: float) -> list[int]:
    """The pids still running after ``timeout``.

    A readable pidfd is the kernel's word that the process has exited; it is
    raised a moment before ``/proc`` shows the zombie, so the pidfd, not
    ``/proc``, decides for every process it reported.
    """
    fds = {}
    for pid in pids:
        try:
            fds[os.pidfd_open(pid)] = pid
        except ProcessLookupError:
            continue
    remaining = dict(fds)
    try:
        while remaining:
            ready, _, _ = select.select(list(remaining), [], [], timeout)
            if not ready:
                break
            for fd in ready:
                del remaining[fd]
    finally:
        for fd in fds:
            os.close(fd)
    return [pid for pid in pids if pid in remaining.values() and not _zombie(pid)]


def _zombie(pid: int) -> bool:
    """Ended and waiting to be reaped (or reaped already)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return text[text.rfind(b")") + 2 :].startswith(b"Z")
