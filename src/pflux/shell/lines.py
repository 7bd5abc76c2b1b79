"""Line buffering and labelling of task output, shared by the job shell and job-exec.

Kept apart from ``output`` so that the shell, forked from the launcher,
imports nothing more than it runs.
"""

from __future__ import annotations

MAX_PARTIAL_LINE = 65536  # a line longer than this is passed on in pieces

__all__ = ["MAX_PARTIAL_LINE", "LineBuffer", "label"]


class LineBuffer:
    """Holds back a partial last line until its newline arrives, unless unbuffered."""

    __slots__ = ("_held", "_line")

    def __init__(self, line: bool) -> None:
        self._line = line
        self._held = b""

    def feed(self, data: bytes) -> bytes:
        """The bytes ready to pass on now."""
        if not self._line:
            return data
        held = self._held + data if self._held else data
        end = held.rfind(b"\n") + 1
        if not end and len(held) < MAX_PARTIAL_LINE:
            self._held = held
            return b""
        if not end:
            end = len(held)
        self._held = held[end:]
        return held[:end]

    def rest(self) -> bytes:
        """Whatever is still held (at end of file)."""
        held, self._held = self._held, b""
        return held


def label(prefix: bytes, data: bytes) -> bytes:
    """Prefix every line of ``data`` with ``prefix`` (``label`` output, as flux-core's)."""
    lines = data.split(b"\n")
    last = lines.pop()
    out = b"".join(prefix + line + b"\n" for line in lines)
    return out + prefix + last if last else out
