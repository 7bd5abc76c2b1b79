"""``flux.core.watchers``: what wakes ``Flux.reactor_run`` besides messages.

A timer after a delay (and on repeat), a file descriptor ready to read or
write, a signal. Each watcher is made stopped (``start()`` it, or use it as a
context manager) and calls its callback from ``reactor_run`` only; a started,
referenced watcher keeps the reactor running (``unref()``: it does not).
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time

from flux.constants import FLUX_POLLERR, FLUX_POLLIN, FLUX_POLLOUT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Protocol

    class WatcherHandle(Protocol):
        """What a watcher asks of its handle (``flux.Flux`` is one): the started
        watchers its reactor waits on, and the pipe a signal wakes it by."""

        _timers: set[TimerWatcher]
        _turn_watchers: dict[str, dict[Any, None]]  # prepare, check, idle
        _fd_watchers: dict[FDWatcher, None]
        _signal_watchers: dict[SignalWatcher, None]
        _signals: list[int]  # signals arrived, for their watchers

        def _wake_fd(self) -> int: ...


__all__ = [
    "CheckWatcher",
    "FDWatcher",
    "IdleWatcher",
    "PrepareWatcher",
    "SignalWatcher",
    "TimerWatcher",
    "Watcher",
]


class Watcher:
    """What every watcher does: start, stop, ref, unref, and a context manager."""

    def __init__(self, flux_handle: WatcherHandle, callback: Callable[..., Any], args: Any) -> None:
        if not callable(callback):
            raise TypeError(f"callback must be callable, not {type(callback).__name__}")
        self.flux_handle = flux_handle
        self.callback = callback
        self.args = args
        self.referenced = True

    def start(self) -> Watcher:
        raise NotImplementedError

    def stop(self) -> Watcher:
        raise NotImplementedError

    def ref(self) -> Watcher:
        self.referenced = True
        return self

    def unref(self) -> Watcher:
        """An unreferenced watcher does not keep ``reactor_run`` going by itself."""
        self.referenced = False
        return self

    def destroy(self) -> None:
        self.stop()

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class TimerWatcher(Watcher):
    """``callback(handle, watcher, revents, args)`` after ``after`` seconds, then every
    ``repeat`` seconds if ``repeat`` > 0."""

    def __init__(
        self,
        flux_handle: WatcherHandle,
        after: float,
        callback: Callable[..., Any],
        repeat: float = 0.0,
        args: Any = None,
    ) -> None:
        super().__init__(flux_handle, callback, args)
        self.after = float(after)
        self.repeat = float(repeat)
        if self.after < 0 or self.repeat < 0:
            raise OSError(errno.EINVAL, "timer: after and repeat must not be negative")
        self.due = 0.0
        # the times the timer runs by: ``after`` and ``repeat`` until a reset changes them
        self._after, self._repeat = self.after, self.repeat

    def start(self) -> TimerWatcher:
        self.due = time.monotonic() + self._after
        self.flux_handle._timers.add(self)
        return self

    def reset(self, after: float | None = None, repeat: float | None = None) -> None:
        """Run the timer afresh, ``after`` seconds from now and then every ``repeat``
        (each defaulting to what the watcher was created with), started or not."""
        after = self.after if after is None else float(after)
        repeat = self.repeat if repeat is None else float(repeat)
        if after < 0 or repeat < 0:
            raise OSError(errno.EINVAL, "timer: after and repeat must not be negative")
        self._after, self._repeat = after, repeat
        self.start()

    def stop(self) -> TimerWatcher:
        self.flux_handle._timers.discard(self)
        return self

    def _fire(self) -> None:
        if self._repeat > 0:
            self.due += self._repeat
        else:
            self.stop()
        self.callback(self.flux_handle, self, 0, self.args)


class _TurnWatcher(Watcher):
    """A watcher ``reactor_run`` calls at one point of each of its turns (``_kind``),
    as ``callback(handle, watcher, revents, args)``."""

    _kind = ""

    def start(self) -> _TurnWatcher:
        self.flux_handle._turn_watchers[self._kind][self] = None
        return self

    def stop(self) -> _TurnWatcher:
        self.flux_handle._turn_watchers[self._kind].pop(self, None)
        return self


class PrepareWatcher(_TurnWatcher):
    """Called on each turn of ``reactor_run`` before it waits (with an ``IdleWatcher``
    started, it does not: the prepare, idle, check pattern of flux-core's)."""

    _kind = "prepare"


class CheckWatcher(_TurnWatcher):
    """Called on each turn of ``reactor_run`` after it waited, before what arrived is
    handed to its callbacks."""

    _kind = "check"


class IdleWatcher(_TurnWatcher):
    """While started, ``reactor_run`` does not wait; its callback, if any, is called on
    each turn."""

    _kind = "idle"

    def __init__(
        self,
        flux_handle: WatcherHandle,
        callback: Callable[..., Any] | None = None,
        args: Any = None,
    ) -> None:
        super().__init__(flux_handle, callback or _nothing, args)


def _nothing(*_args: Any) -> None:
    """An idle watcher's callback when it has none."""


class FDWatcher(Watcher):
    """``callback(handle, watcher, fd, revents, args)`` while ``fd_int`` is ready for
    ``events`` (``FLUX_POLLIN``, ``FLUX_POLLOUT``; ``FLUX_POLLERR`` always)."""

    def __init__(
        self,
        flux_handle: WatcherHandle,
        fd_int: int,
        events: int,
        callback: Callable[..., Any],
        args: Any = None,
    ) -> None:
        super().__init__(flux_handle, callback, args)
        if not isinstance(fd_int, int) or fd_int < 0:
            raise OSError(errno.EINVAL, f"fd watcher: fd must be a file descriptor, got {fd_int!r}")
        if events & ~(FLUX_POLLIN | FLUX_POLLOUT | FLUX_POLLERR):
            raise OSError(errno.EINVAL, f"fd watcher: events: invalid value {events}")
        self.fd_int = fd_int
        self.events = events

    def start(self) -> FDWatcher:
        self.flux_handle._fd_watchers[self] = None
        return self

    def stop(self) -> FDWatcher:
        self.flux_handle._fd_watchers.pop(self, None)
        return self


class SignalWatcher(Watcher):
    """``callback(handle, watcher, signum, args)`` each time ``signal_int`` arrives while
    started (in the main thread: Python delivers signals there only)."""

    def __init__(
        self,
        flux_handle: WatcherHandle,
        signal_int: int,
        callback: Callable[..., Any],
        args: Any = None,
    ) -> None:
        super().__init__(flux_handle, callback, args)
        if not isinstance(signal_int, int) or not 0 < signal_int < signal.NSIG:
            raise OSError(errno.EINVAL, f"signal watcher: invalid signal number {signal_int!r}")
        self.signum = signal_int
        self._previous: Any = None

    def start(self) -> SignalWatcher:
        if self in self.flux_handle._signal_watchers:
            return self
        wake = self.flux_handle._wake_fd()
        handle = self.flux_handle

        def arrived(signum: int, _frame: Any) -> None:
            handle._signals.append(signum)
            with contextlib.suppress(OSError):  # the pipe is full: the reactor wakes anyway
                os.write(wake, b"\0")

        self._previous = signal.signal(self.signum, arrived)
        self.flux_handle._signal_watchers[self] = None
        return self

    def stop(self) -> SignalWatcher:
        if self in self.flux_handle._signal_watchers:
            signal.signal(self.signum, self._previous)
            del self.flux_handle._signal_watchers[self]
        return self
