"""``FluxExecutor`` and ``FluxExecutorFuture``: Flux jobs as ``concurrent.futures`` futures.

As flux-core's: each of the executor's threads owns a ``flux.Flux`` handle and
does every RPC on it. It submits each jobspec handed to it without waiting for
earlier answers (many ``job-ingest.submit`` requests in flight at once), then
watches the job's main eventlog (``job-info.eventlog-watch``), so a job's future
completes from the events streamed to it, with no polling per job: ``finish``
gives the exit code (``-signum`` for a signal), a fatal ``exception`` event
``JobException``. ``submit`` and ``attach`` wake the thread at once (a pipe it
waits on with the handle's socket), so a job is submitted as soon as it is asked
for; ``poll_interval`` bounds how long the thread waits between looks at its
queue all the same.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import errno
import itertools
import os
import threading
import weakref
from collections import deque

from flux.core.handle import Flux
from flux.job.event import MAIN_EVENTS, JobException, event_watch_async
from flux.job.submit import submit_async, submit_get_id

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Union

    from flux.eventlog import EventLogEvent
    from flux.job.event import JobEventWatchFuture
    from flux.job.submit import SubmitFuture

    _Package = Union["_SubmitPackage", "_AttachPackage"]


class _SubmitPackage:
    """A jobspec to submit (``flux.job.submit``'s arguments) for ``future``."""

    __slots__ = ("future", "submit_args", "submit_kwargs")

    def __init__(self, submit_args: Any, submit_kwargs: Any, future: FluxExecutorFuture) -> None:
        self.submit_args = submit_args
        self.submit_kwargs = submit_kwargs
        self.future = future


class _AttachPackage:
    """A job id to follow for ``future``, which has that id at once."""

    __slots__ = ("future", "jobid")

    def __init__(self, jobid: Any, future: FluxExecutorFuture) -> None:
        self.jobid = jobid
        self.future = future
        future._set_jobid(jobid)


def _exit_code(status: int) -> int:
    """A ``finish`` event's wait status as the future's result: the exit code, or
    ``-signum`` for a job killed by a signal."""
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    raise ValueError(status)


class _FluxExecutorThread(threading.Thread):
    """Submits the packages of its queue and completes their futures from job events.

    Its arguments, and its private ``__work_remains()`` and ``__running_user_futures``,
    are flux-core's (its tests drive the thread alone); ``lock`` is the executor's, so
    that a package is queued before the thread breaks, not after.
    """

    def __init__(
        self,
        broken_event: threading.Event,
        exit_event: threading.Event,
        packages_to_handle: deque[_Package],
        poll_interval: float,
        handle_args: Any,
        handle_kwargs: Any,
        *,
        lock: threading.Lock | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("daemon", True)
        super().__init__(**kwargs)
        self._lock = threading.Lock() if lock is None else lock
        self._broken = broken_event
        self._shutdown = exit_event
        self._packages = packages_to_handle
        self._poll_interval = poll_interval
        self._handle = Flux(*handle_args, **handle_kwargs)
        self.__running_user_futures: set[FluxExecutorFuture] = set()  # their eventlogs watched
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self._pipe_lock = threading.Lock()
        self._pipe_open = True

    def wake(self) -> None:
        """Have the thread look at its queue now (a byte on its pipe)."""
        with self._pipe_lock:
            if self._pipe_open:
                with contextlib.suppress(BlockingIOError):  # a full pipe wakes it as well
                    os.write(self._wake_w, b"\0")

    def _close(self) -> None:
        with self._pipe_lock:
            self._pipe_open = False
            os.close(self._wake_r)
            os.close(self._wake_w)
        self._handle.close()

    def run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:
            with self._lock:
                self._broken.set()
            for future in self.__running_user_futures:
                if not future.done():
                    future.set_exception(exc)
            while self._packages:
                future = self._packages.popleft().future
                if future.set_running_or_notify_cancel():
                    future.set_exception(exc)
            raise
        finally:
            self._close()

    def __work_remains(self) -> bool:
        running = self.__running_user_futures
        return not self._shutdown.is_set() or bool(self._packages) or bool(running)

    def _loop(self) -> None:
        import select

        handle = self._handle
        while True:
            self._take_packages()
            self._fileno()  # raises once the instance is gone, before any callback
            handle._stopped = False
            handle._run_callbacks()
            failure, handle._exception = handle._exception, None
            if failure is not None:
                raise failure
            if not self.__work_remains():
                return
            sock = self._fileno()
            readable, _, _ = select.select([self._wake_r, sock], [], [], self._poll_interval)
            if self._wake_r in readable:
                os.read(self._wake_r, 65536)
            if sock in readable:
                handle._read(0.0)

    def _fileno(self) -> int:
        """The handle's socket; a lost connection breaks the thread (and its futures)."""
        sock = self._handle._sock
        if sock is None:
            raise OSError(errno.ECONNRESET, "Connection to the Flux instance was lost")
        return sock.fileno()

    def _take_packages(self) -> None:
        packages = self._packages
        while packages:
            package = packages.popleft()
            if not package.future.set_running_or_notify_cancel():
                continue
            if isinstance(package, _SubmitPackage):
                self._submit(package)
            else:
                self._attach(package)

    def _submit(self, package: _SubmitPackage) -> None:
        try:
            submitted = submit_async(self._handle, *package.submit_args, **package.submit_kwargs)
            submitted.then(self._on_submitted, package.future)
        except Exception as exc:
            package.future.set_exception(exc)
        else:
            self.__running_user_futures.add(package.future)

    def _attach(self, package: _AttachPackage) -> None:
        try:
            event_watch_async(self._handle, package.jobid).then(self._on_event, package.future)
        except Exception as exc:
            package.future.set_exception(exc)
        else:
            self.__running_user_futures.add(package.future)

    def _on_submitted(self, submitted: SubmitFuture, future: FluxExecutorFuture) -> None:
        try:
            jobid = submit_get_id(submitted)
        except Exception as exc:
            future.set_exception(exc)
            self.__running_user_futures.discard(future)
            return
        future._set_jobid(jobid)
        event_watch_async(self._handle, jobid).then(self._on_event, future)

    def _on_event(self, watch: JobEventWatchFuture, future: FluxExecutorFuture) -> None:
        try:
            event = watch.get_event()
        except FileNotFoundError:  # no such job
            event = None
            if not future.done():
                future.set_exception(ValueError("job ID does not match any job"))
        except Exception as exc:
            event = None
            if not future.done():
                future.set_exception(exc)
        if event is None:  # the eventlog has ended (or failed)
            self.__running_user_futures.discard(future)
            return
        if event.name in MAIN_EVENTS:
            future._set_event(event)
        if future.done():
            return
        if event.name == "finish":
            try:
                future.set_result(_exit_code(event.context["status"]))
            except ValueError as exc:
                future.set_exception(exc)
        elif event.name == "exception" and event.context["severity"] == 0:
            future.set_exception(JobException(event))


if TYPE_CHECKING:
    _Future = concurrent.futures.Future[Any]
else:
    _Future = concurrent.futures.Future


class FluxExecutorFuture(_Future):
    """A ``concurrent.futures.Future`` for one Flux job: its result is the job's exit
    code (the highest of its tasks'; ``-signum`` if killed by a signal); a job ended by
    an exception raises ``JobException``. ``jobid()`` waits for the job's id;
    ``add_jobid_callback`` and ``add_event_callback`` (for the ``EVENTS`` names) call
    back from the executor's thread, or at once for what has already happened."""

    EVENTS = MAIN_EVENTS

    def __init__(self, owning_thread_id: int | None, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._owner = owning_thread_id
        self._jobid_ready = threading.Condition()
        self._jobid: Any = None
        self._jobid_set = False
        self._jobid_error: BaseException | None = None
        self._jobid_callbacks: list[Callable[..., Any]] = []
        self._event_lock = threading.RLock()
        self._events_seen: dict[str, list[EventLogEvent]] = {}
        self._event_callbacks: dict[str, list[Callable[..., Any]]] = {}

    def _set_jobid(self, jobid: Any, exc: BaseException | None = None) -> None:
        """Give the future its job id (``exc``: what ``jobid()`` raises instead)."""
        with self._jobid_ready:
            if self._jobid_set:
                raise RuntimeError("invalid state: jobid already set")
            self._jobid = jobid
            self._jobid_error = exc
            self._jobid_set = True
            self._jobid_ready.notify_all()
            callbacks, self._jobid_callbacks = self._jobid_callbacks, []
        for callback in callbacks:
            self._invoke_flux_callback(callback)

    def jobid(self, timeout: float | None = None) -> Any:
        """The job's id, waiting ``timeout`` seconds at most (None: no limit) for it:
        ``concurrent.futures.TimeoutError`` after that, ``CancelledError`` for a future
        cancelled before it was submitted, ``RuntimeError`` for a job never submitted."""
        with self._jobid_ready:
            if not self._jobid_set:
                self._jobid_ready.wait_for(lambda: self._jobid_set, timeout)
            if not self._jobid_set:
                raise concurrent.futures.TimeoutError()
        return self._get_jobid()

    def _get_jobid(self) -> Any:
        """The job id once set, or the error set in its place raised."""
        if self._jobid_error is not None:
            raise self._jobid_error
        return self._jobid

    def add_jobid_callback(self, callback: Callable[..., Any]) -> FluxExecutorFuture:
        """Call ``callback(future)`` once the job has its id (now if it has); an
        exception it raises is logged and ignored. Returns the future."""
        with self._jobid_ready:
            if not self._jobid_set:
                self._jobid_callbacks.append(callback)
                return self
        self._invoke_flux_callback(callback)
        return self

    def add_event_callback(self, event: str, callback: Callable[..., Any]) -> FluxExecutorFuture:
        """Call ``callback(future, event)`` for each event named ``event`` (one of
        ``EVENTS``; ValueError otherwise) of the job's eventlog, those already seen
        first. Returns the future."""
        if event not in self.EVENTS:
            raise ValueError(event)
        with self._event_lock:
            self._event_callbacks.setdefault(event, []).append(callback)
            for entry in list(self._events_seen.get(event, ())):
                self._invoke_flux_callback(callback, entry)
        return self

    def _set_event(self, entry: EventLogEvent) -> None:
        """An event of the job: kept, and handed to its callbacks."""
        if entry.name not in self.EVENTS:
            raise ValueError(entry.name)
        with self._event_lock:
            self._events_seen.setdefault(entry.name, []).append(entry)
            for callback in list(self._event_callbacks.get(entry.name, ())):
                self._invoke_flux_callback(callback, entry)

    def _invoke_flux_callback(self, callback: Callable[..., Any], *args: Any) -> None:
        try:
            callback(self, *args)
        except Exception:
            import logging

            logging.getLogger(__name__).exception("exception calling callback for %r", self)

    def add_done_callback(self, fn: Callable[..., Any]) -> FluxExecutorFuture:  # type: ignore[override]
        """``concurrent.futures.Future.add_done_callback``; returns the future."""
        super().add_done_callback(fn)
        return self

    def _check_not_owner(self) -> None:
        """Waiting from the executor's own thread (a callback) would wait forever."""
        if not self.done() and threading.get_ident() == self._owner:
            raise RuntimeError("Cannot wait for future from inside callback")

    def result(self, timeout: float | None = None) -> Any:
        """The job's exit code (waiting ``timeout`` seconds at most); raises what
        ended the job otherwise (``JobException``, ``OSError`` for a bad jobspec)."""
        self._check_not_owner()
        return super().result(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """What ``result()`` would raise (None for a job that ran to its end)."""
        self._check_not_owner()
        return super().exception(timeout)

    def set_exception(self, exception: BaseException | None) -> None:
        """Fail the future; one never submitted gets a job id that raises saying why."""
        with self._jobid_ready:
            unset = not self._jobid_set
        if unset:
            self._set_jobid(None, RuntimeError(f"job could not be submitted due to {exception!r}"))
        super().set_exception(exception)

    def cancel(self) -> bool:
        """Cancel the future if its job is not submitted yet (False once it is: cancel
        the Flux job itself with ``flux.job.cancel``, and the future raises
        ``JobException`` of type cancel)."""
        if self.cancelled():
            return True
        cancelled = super().cancel()
        if cancelled:
            with self._jobid_ready:
                unset = not self._jobid_set
            if unset:
                self._set_jobid(None, concurrent.futures.CancelledError())
        return cancelled


class FluxExecutor:
    """Submits jobspecs to Flux and follows the jobs, each as a ``FluxExecutorFuture``.

    Like a ``concurrent.futures.Executor``, except that ``submit`` takes a jobspec
    (and ``flux.job.submit``'s other arguments) rather than a callable, ``attach``
    follows a job submitted otherwise, and there is no ``map``. ``threads`` threads
    (each with its own handle: ``flux.Flux(*handle_args, **handle_kwargs)``) share
    the jobs in turn.
    """

    EVENTS = MAIN_EVENTS
    _counter = itertools.count().__next__

    def __init__(
        self,
        threads: int = 1,
        thread_name_prefix: str = "",
        poll_interval: float = 0.1,
        handle_args: Any = (),
        handle_kwargs: Any = {},  # noqa: B006 - flux-core's signature; only read
    ) -> None:
        if not isinstance(threads, int) or threads < 1:
            raise ValueError("the number of threads must be > 0")
        if not isinstance(poll_interval, (int, float)) or not poll_interval > 0:
            raise ValueError(f"poll_interval must be seconds > 0, not {poll_interval!r}")
        prefix = thread_name_prefix or f"{type(self).__name__}-{self._counter()}"
        self._submission_queues: list[deque[_Package]] = [deque() for _ in range(threads)]
        self._next_thread = 0
        self._shutdown_lock = threading.Lock()
        self._broken_event = threading.Event()
        self._shutdown_event = threading.Event()
        self._executor_threads = [
            _FluxExecutorThread(
                self._broken_event,
                self._shutdown_event,
                queue,
                float(poll_interval),
                handle_args,
                handle_kwargs,
                lock=self._shutdown_lock,
                name=f"{prefix}-{i}",
            )
            for i, queue in enumerate(self._submission_queues)
        ]
        for thread in self._executor_threads:
            thread.start()
        self._finalizer = weakref.finalize(
            self, FluxExecutor._shutdown_threads, self._shutdown_event, self._executor_threads
        )

    def submit(self, *args: Any, **kwargs: Any) -> FluxExecutorFuture:
        """Submit a jobspec: ``flux.job.submit``'s arguments less the handle (``jobspec``,
        ``urgency``, ``waitable``, ``debug``, ``pre_signed``). RuntimeError after
        ``shutdown`` or once the executor is broken."""
        return self._create_future(_SubmitPackage, args, kwargs)

    def attach(self, jobid: Any) -> FluxExecutorFuture:
        """A future for the job ``jobid``, submitted otherwise; one that names no job
        fails with ValueError."""
        return self._create_future(_AttachPackage, jobid)

    def _create_future(self, factory: Callable[..., _Package], *args: Any) -> FluxExecutorFuture:
        with self._shutdown_lock:
            if self._broken_event.is_set():
                raise RuntimeError("Executor is broken, new futures cannot be scheduled")
            if self._shutdown_event.is_set():
                raise RuntimeError("cannot schedule new futures after shutdown")
            index = self._next_thread
            thread = self._executor_threads[index]
            future = FluxExecutorFuture(thread.ident)
            self._submission_queues[index].append(factory(*args, future))
            self._next_thread = (index + 1) % len(self._executor_threads)
        thread.wake()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Take no more jobs; with ``wait``, return once every future is done and the
        threads have ended; ``cancel_futures`` cancels those not submitted yet. May be
        called more than once."""
        with self._shutdown_lock:
            self._shutdown_event.set()
        if cancel_futures:
            for queue in self._submission_queues:
                while queue:
                    try:
                        package = queue.popleft()
                    except IndexError:
                        break
                    if package.future.cancel():
                        package.future.set_running_or_notify_cancel()
        for thread in self._executor_threads:
            thread.wake()
        if wait:
            for thread in self._executor_threads:
                thread.join()

    def __enter__(self) -> FluxExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown(wait=True)

    @staticmethod
    def _shutdown_threads(shutdown: threading.Event, threads: list[_FluxExecutorThread]) -> None:
        """The executor was collected (or the interpreter exits): its threads end once
        their jobs are done, and are waited for (unless this is one of them)."""
        shutdown.set()
        for thread in threads:
            thread.wake()
        current = threading.current_thread()
        for thread in threads:
            if thread is not current:
                thread.join()
