"""``flux.future.Future``: a result (or a stream of them) that will arrive.

A future holds a queue of results, each a value or an error. ``get()`` waits for
the first and returns it (an error raises ``OSError(errno, message)``) without
taking it off; ``reset()`` takes it off, so the next ``get()`` waits for the
next one (a streaming RPC's next response). ``then(cb)`` has ``cb(future)``
called by ``Flux.reactor_run()`` once for each result; see ``flux.core.handle``
for when responses are read.
"""

from __future__ import annotations

import errno
import os
from collections import deque

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from typing import Any, Callable, Protocol

    class FutureHandle(Protocol):
        """What a future asks of the handle whose responses fulfil it (``flux.Flux``
        is one): its reactor's queues of callbacks, a wait for a result, a timer."""

        _ready: deque[Future]  # futures whose callback has a result to see
        _thens: dict[Future, None]  # futures with a callback

        def _wait(self, future: Future, timeout: float | None) -> None: ...

        def _run_until(self, future: Future, timeout: float | None) -> None: ...

        def timer_watcher_create(self, after: float, callback: Callable[..., Any]) -> Startable: ...

    class Startable(Protocol):
        def start(self) -> object: ...


def _error(errnum: int, errstr: str | None) -> OSError:
    """flux-core's error: OSError (its subclass for ``errnum``) with the service's text."""
    return OSError(errnum, errstr or os.strerror(errnum))


class Future:
    """A future fulfilled by responses from ``flux_handle``."""

    def __init__(self, flux_handle: FutureHandle | None = None) -> None:
        self._flux = flux_handle
        self._results: deque[list[Any]] = deque()  # [value, errnum, errstr]
        self._more = True  # more results may still come
        self._delivered: list[Any] | None = None  # the result the callback last saw
        self._then_cb: Callable[..., Any] | None = None
        self._then_args: Any = ()
        self._then_kwargs: Any = {}
        self._stopped_cb = False

    # --- fulfilment -------------------------------------------------------------------

    def _fulfill(self, value: Any) -> None:
        self._results.append([value, 0, None])
        self._schedule()

    def _fulfill_error(self, errnum: int, errstr: str | None) -> None:
        self._results.append([None, errnum, errstr])
        self._schedule()

    def fulfill_error(self, errnum: int = errno.ENOENT, errstr: str | None = None) -> None:
        """Fulfil the future with an error (as flux-core's ``fulfill_error``)."""
        self._fulfill_error(errnum, errstr)

    def _schedule(self) -> None:
        """Queue the ``then`` callback for the result now first (the reactor calls only
        the futures queued, so a turn costs what arrived, not what is in flight)."""
        if self._then_cb is not None and self._flux is not None:
            self._flux._ready.append(self)

    def _undelivered(self) -> bool:
        return bool(self._results) and self._results[0] is not self._delivered

    def _callback(self) -> None:
        assert self._then_cb is not None
        self._then_cb(self, *self._then_args, **self._then_kwargs)

    # --- the caller's side ------------------------------------------------------------

    def get_flux(self) -> FutureHandle | None:
        return self._flux

    def set_flux(self, flux_handle: FutureHandle) -> None:
        """The handle whose responses (and reactor) fulfil the future."""
        self._flux = flux_handle

    def error_string(self) -> str | None:
        """The current result's error text (the errno's own if the service gave
        none); None if the future holds no result or no error. It does not wait."""
        if not self._results or not self._results[0][1]:
            return None
        _value, errnum, errstr = self._results[0]
        return str(errstr or os.strerror(errnum))

    def is_ready(self) -> bool:
        return bool(self._results)

    def wait_for(self, timeout: float = -1.0) -> Future:
        """Wait until a result is there (``timeout`` seconds at most, -1: no limit;
        then ``TimeoutError``)."""
        if not self._results:
            if self._flux is None:
                raise OSError(errno.EINVAL, "future has no Flux handle to wait on")
            self._flux._wait(self, timeout)
        return self

    def _result(self) -> Any:
        self.wait_for()
        value, errnum, errstr = self._results[0]
        if errnum:
            raise _error(errnum, errstr)
        return value

    def get(self) -> Any:
        """Wait for the result; raise OSError for an error; return nothing."""
        self._result()

    def reset(self) -> None:
        """Take the current result off: the next ``get()`` waits for the next one."""
        if self._results:
            self._results.popleft()
            if self._results:
                self._schedule()

    def then(
        self, callback: Callable[..., Any], *args: Any, timeout: float = -1.0, **kwargs: Any
    ) -> Future:
        """Have ``callback(future, *args, **kwargs)`` called from ``reactor_run`` for each
        result; with ``timeout`` >= 0, an ETIMEDOUT error if none came by then."""
        if self._then_cb is not None:
            raise OSError(errno.EEXIST, "then callback already exists for this future")
        if callback is None:
            raise ValueError("Callback cannot be None")
        if self._flux is None:
            raise OSError(errno.EINVAL, "future has no Flux handle to run a callback on")
        self._then_cb = callback
        self._then_args = args
        self._then_kwargs = kwargs
        self._flux._thens[self] = None
        if self._results:
            self._schedule()
        if timeout >= 0:
            self._flux.timer_watcher_create(timeout, self._expire).start()
        return self

    def _expire(self, *_args: Any) -> None:
        if not self._results and self._more:
            self._more = False
            self._fulfill_error(errno.ETIMEDOUT, None)

    def __enter__(self) -> Future:
        return self

    def __exit__(self, *exc: object) -> None:
        """Leaving a ``with`` block lets the future go: no callback is called after it."""
        self.stop()

    def stop(self) -> None:
        """Call the ``then`` callback no more (a stream's remaining responses are dropped)."""
        self._stopped_cb = True
        if self._flux is not None:
            self._flux._thens.pop(self, None)


class _StartedFuture(Future):
    """A future whose work starts (``_start``) when a ``then`` callback is set or its
    result is first waited for; ``_NO_HANDLE`` says how it gets the handle it waits on."""

    _NO_HANDLE: str  # the error of waiting with no handle, as each kind words it

    def _start(self) -> None:
        raise NotImplementedError

    def then(
        self, callback: Callable[..., Any], *args: Any, timeout: float = -1.0, **kwargs: Any
    ) -> Future:
        super().then(callback, *args, timeout=timeout, **kwargs)
        self._start()
        return self

    def wait_for(self, timeout: float = -1.0) -> Future:
        if self._flux is None:
            raise OSError(errno.EINVAL, self._NO_HANDLE)
        self._start()
        self._flux._run_until(self, timeout)
        return self


class WaitAllFuture(_StartedFuture):
    """A future fulfilled, with nothing, once every child ``push()``ed has a result
    (each child keeps its own, for its ``get()``). It takes each child's ``then``,
    as flux-core's composite does: a child with one already is EEXIST."""

    _NO_HANDLE = "future has no Flux handle: push a child first"

    def __init__(self, children: list[Future] | None = None) -> None:
        super().__init__(None)
        self.children = [] if children is None else children
        self._pushed: list[Future] = []
        self._waiting: set[int] | None = None  # the children not yet ready, once started

    def push(self, child: Future, name: str | None = None) -> None:
        """Add ``child`` to those waited for (its handle becomes this future's if it has none)."""
        if self._flux is None:
            self._flux = child.get_flux()
        self._pushed.append(child)
        self.children.append(child)

    def _start(self) -> None:
        if self._waiting is not None:
            return
        self._waiting = {id(child) for child in self._pushed if not child.is_ready()}
        for child in self._pushed:
            if id(child) in self._waiting:
                child.then(self._child_ready)
        self._check()

    def _child_ready(self, child: Future) -> None:
        assert self._waiting is not None
        self._waiting.discard(id(child))
        self._check()

    def _check(self) -> None:
        if not self._waiting and self._more:
            self._more = False
            self._fulfill(None)


class FutureExt(_StartedFuture):
    """A future fulfilled from Python (flux-core's): ``init_cb(future, *args, **kwargs)``
    runs once, when a ``then`` callback is set or a result is first waited for, and
    starts what will ``fulfill()`` (or ``fulfill_error()``) it. While ``get()`` waits,
    the handle's callbacks and watchers run (what the init callback started among
    them), as flux-core runs a reactor for a blocking get. Once fulfilled, it keeps
    ``reactor_run`` going no longer."""

    _NO_HANDLE = "future has no Flux handle: call set_flux() first"

    def __init__(
        self,
        init_cb: Callable[..., Any],
        *args: Any,
        flux_handle: FutureHandle | None = None,
        **kw: Any,
    ) -> None:
        if not callable(init_cb):
            raise TypeError(f"init_cb must be callable, not {type(init_cb).__name__}")
        super().__init__(flux_handle)
        self._init: tuple[Callable[..., Any], Any, Any] | None = (init_cb, args, kw)

    def _start(self) -> None:
        if self._init is not None:
            init_cb, args, kw = self._init
            self._init = None
            init_cb(self, *args, **kw)

    def fulfill(self, result: Any = None) -> None:
        """Fulfil with ``result``, anything ``json.dumps`` takes (``get()`` returns it
        as ``json.loads`` gives it back)."""
        import json

        value = json.loads(json.dumps(result))
        self._more = False
        self._fulfill(value)

    def fulfill_error(self, errnum: int = errno.ENOENT, errstr: str | None = None) -> None:
        self._more = False
        self._fulfill_error(errnum, errstr)

    def get(self) -> Any:
        """The value ``fulfill()`` gave (an error raises its OSError)."""
        return self._result()
