"""A job shell's feeding of its tasks' stdin from the job's input (INPUT records).

Most jobs are never sent input, so a pipe is made non-blocking only when
input first comes for it; what a task has not read yet is held (at most
``INPUT_HELD_MAX`` bytes, flux-core's limit) and written when its pipe can
take more. A task on a pty is fed through the pty's master, where the end of
input is typed (the terminal's end-of-file character) rather than a close.
"""

from __future__ import annotations

import os
import select

from pflux.protocol import shellwire as wire
from pflux.shell.context import warn

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (mypy knows it)
if TYPE_CHECKING:  # the launcher imports this before it forks: keep typing out of it
    from typing import Final

__all__ = ["INPUT_HELD_MAX", "StdinFeeder"]

INPUT_HELD_MAX: Final = 1 << 25  # stdin bytes a task may leave unread (flux-core: 32M)
_OUT: Final = select.POLLOUT


class _Input:
    """A task's stdin pipe: what the job's input holds for it and the task has not read."""

    __slots__ = ("eof", "fd", "held", "midline", "polling", "ready", "tty")

    def __init__(self, fd: int, tty: bool = False) -> None:
        self.fd = fd
        self.held = bytearray()
        self.eof = False
        self.polling = False  # waiting for the pipe to take more
        self.ready = False  # made non-blocking (most jobs are never sent input)
        self.tty = tty  # a pty's master: the end is typed, not a close
        self.midline = False  # a tty's last input did not end a line


class StdinFeeder:
    """The stdin pipes of one job's tasks, by task rank, polled on the shell's poller."""

    __slots__ = ("inputs", "jobid", "poller")

    def __init__(self, jobid: int, poller: select.poll) -> None:
        self.jobid = jobid
        self.poller = poller
        self.inputs: dict[int, _Input] = {}  # task rank -> its stdin pipe

    def add(self, rank: int, fd: int, *, tty: bool = False) -> None:
        """Feed task ``rank`` through ``fd`` (the shell's end of its pipe, or a pty's master)."""
        self.inputs[rank] = _Input(fd, tty)

    def receive(self, payload: bytes) -> None:
        """An INPUT record's data (or the end) of the job's input for some tasks, or all."""
        eof = payload[:1] == wire.INPUT_EOF
        count = int.from_bytes(payload[1:5], "big")
        start = 5 + 4 * count
        data = payload[start:]
        if count:
            ranks = [int.from_bytes(payload[i : i + 4], "big") for i in range(5, start, 4)]
            targets = [self.inputs[rank] for rank in ranks if rank in self.inputs]
        else:
            targets = list(self.inputs.values())
        for target in targets:
            if target.eof:
                continue
            target.held += data
            target.eof = eof
            if target.tty:  # a terminal's end of input: one EOF character on a new line
                target.midline = not data.endswith(b"\n") if data else target.midline
                if eof:
                    target.held += b"\x04\x04" if target.midline else b"\x04"
            if len(target.held) > INPUT_HELD_MAX:
                job = wire.key_name(self.jobid)
                warn(f"job {job}: a task left too much input unread; closing its stdin")
                target.held.clear()
                target.eof = True
            self._feed(target)

    def writable(self, fd: int) -> None:
        """A task's stdin pipe can take more."""
        target = next((t for t in self.inputs.values() if t.fd == fd), None)
        if target is not None:
            self._feed(target)

    def _feed(self, target: _Input) -> None:
        """Give a task what it has not read of its input; close it at the end."""
        if target.fd < 0:
            return
        if not target.ready:
            target.ready = True
            os.set_blocking(target.fd, False)
        try:
            while target.held:
                n = os.write(target.fd, target.held)
                del target.held[:n]
        except BlockingIOError:
            if not target.polling:
                target.polling = True
                self.poller.register(target.fd, _OUT)
            return
        except OSError:  # the task closed its stdin, or exited
            target.held.clear()
            target.eof = True
        if target.polling:
            target.polling = False
            self.poller.unregister(target.fd)
        if target.eof:
            self._close(target)

    def _close(self, target: _Input) -> None:
        if target.fd >= 0:
            if target.polling:
                target.polling = False
                self.poller.unregister(target.fd)
            os.close(target.fd)
            target.fd = -1

    def close_all(self) -> None:
        """The job is over: close every pipe still open."""
        for target in self.inputs.values():
            self._close(target)
