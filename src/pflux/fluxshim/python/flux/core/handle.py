"""``flux.Flux``: a connection to the instance, speaking pflux's wire protocol itself.

On the UNIX socket ``FLUX_URI`` names (``local:///path``) each message is a 4-byte
big-endian length and a JSON object ``{type (1 request, 2 response), topic,
matchtag, flags (1 streaming, 2 no response), payload, errnum, errstr}``.

How responses reach their futures (what ``FluxExecutor`` builds on):

- ``rpc()`` sends the request at once and returns a future registered under its
  matchtag until its last response (the only one, or a streaming RPC's error).
- Nothing reads the socket in the background. A blocking ``get()`` or
  ``wait_for()`` reads until *its* future has a response; responses for other
  futures are queued on them and no ``then`` callback runs meanwhile, as a
  blocking get in flux-core runs a reactor of its own.
- ``reactor_run()`` reads and calls ``then`` callbacks, each once per response
  (a callback that wants the next response of a stream calls ``reset()``), and
  timer watchers, until nothing is left to wait for: no future with a callback
  still expecting a response and no started timer; or until ``reactor_stop()``.
  An exception raised by a callback stops the reactor and is raised by
  ``reactor_run()``. Only the futures a response reached are called back, so a
  turn costs what arrived, not how many requests are in flight.
- Events (after ``event_subscribe``) and requests for a service the handle
  registered (``service_register``) are kept in arrival order until a started
  message watcher that matches takes them in ``reactor_run``, or ``recv()``/
  ``event_recv()`` does. A request no started watcher matches, while some
  watcher is started, is answered ENOSYS as flux-core's dispatcher does.
  Signal and fd watchers wake ``reactor_run`` as timers do.
- ``flux.job.executor``'s threads turn that loop themselves (``_read`` and
  ``_run_callbacks``), waiting on the socket and on their own wake-up pipe.

One handle belongs to one thread at a time.
"""

from __future__ import annotations

# the C module: ``socket`` would load enum and selectors, a few ms a job pays
import _socket
import contextlib
import errno
import json
import os
import time
from collections import deque
from functools import partial

from _pfluxcore import uri as _uri
from _pfluxcore.readbuffer import ReadBuffer

from flux.constants import (
    FLUX_MATCHTAG_NONE,
    FLUX_MSGTYPE_ANY,
    FLUX_MSGTYPE_EVENT,
    FLUX_MSGTYPE_REQUEST,
    FLUX_MSGTYPE_RESPONSE,
    FLUX_NODEID_ANY,
    FLUX_NODEID_UPSTREAM,
    FLUX_O_NONBLOCK,
    FLUX_POLLERR,
    FLUX_POLLIN,
    FLUX_POLLOUT,
    FLUX_REACTOR_NOWAIT,
    FLUX_REACTOR_ONCE,
    FLUX_RPC_NORESPONSE,
    FLUX_RPC_STREAMING,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from typing import Any, Callable, Iterator

    from flux.core.watchers import (
        CheckWatcher,
        FDWatcher,
        IdleWatcher,
        PrepareWatcher,
        SignalWatcher,
        TimerWatcher,
    )
    from flux.future import Future
    from flux.message import Message, MessageWatcher
    from flux.rpc import RPC

_REQUEST = 1
_RESPONSE = 2
_WIRE_STREAMING = 1
_WIRE_NORESPONSE = 2
_MAX_SIZE = 64 * 1024 * 1024


def _system_uri() -> str:
    """With no FLUX_URI, the system instance's, as flux-core's handle opens."""
    system = _uri.system_uri(os.environ)
    if not os.path.exists(_uri.socket_path(system)):
        raise OSError(
            errno.ENOENT,
            f"Unable to connect to Flux: FLUX_URI is not set and there is no system"
            f' instance at {system} (run inside a pflux instance, or eval "$(pflux env)")',
        )
    return system


def _socket_path(url: Any) -> str:
    if isinstance(url, bytes):
        url = url.decode("utf-8")
    if url is None:
        url = os.environ.get("FLUX_URI") or _system_uri()
    if not isinstance(url, str):
        raise TypeError(f"url must be a str or bytes, not {type(url).__name__}")
    try:
        return _uri.socket_path(url)
    except ValueError as exc:
        if exc.args[1]:
            raise OSError(
                errno.EINVAL,
                f"Unable to connect to Flux: {url}: {exc.args[0]}"
                " (pflux serves local:// URIs only)",
            ) from None
        raise OSError(errno.EINVAL, f"Unable to connect to Flux: {url!r} names no socket") from None


class Flux:
    """A connection to the pflux instance at ``url`` (str or bytes; default ``FLUX_URI``).

    ``flags`` and ``handle`` are accepted for flux-core's signature; no flag
    is defined, so any other value than 0 is refused.
    """

    def __init__(self, url: Any = None, flags: int = 0, handle: Any = None) -> None:
        if flags:
            raise OSError(errno.EINVAL, f"flux.Flux: flags: no flag is supported, got {flags}")
        if handle is not None:
            raise OSError(errno.EINVAL, "flux.Flux: handle: wrapping a C handle is not supported")
        path = _socket_path(url)
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.connect(path)
        except OSError as exc:
            sock.close()
            raise OSError(exc.errno, f"Unable to connect to Flux: {path}: {exc.strerror}") from None
        self._sock: _socket.socket | None = sock
        self._tag = 0
        self._rpcs: dict[int, RPC] = {}
        self._inbuf = bytearray()
        self._reads = ReadBuffer()
        self._thens: dict[Future, None] = {}  # futures with a callback, in the order set
        self._ready: deque[Future] = deque()  # futures whose callback has a result to see
        self._timers: set[TimerWatcher] = set()
        self._fd_watchers: dict[FDWatcher, None] = {}  # started
        self._signal_watchers: dict[SignalWatcher, None] = {}  # started
        # started prepare, check and idle watchers, called on each turn of reactor_run
        self._turn_watchers: dict[str, dict[Any, None]] = {"prepare": {}, "check": {}, "idle": {}}
        self._msg_watchers: dict[MessageWatcher, None] = {}  # started, in the order started
        self._inbox: deque[Message] = deque()  # events and requests no watcher has taken
        self._signals: list[int] = []  # signals arrived, for their watchers
        self._wake: tuple[int, int] | None = None  # the pipe a signal wakes the reactor by
        self._fired: list[tuple[FDWatcher, int]] = []  # fd watchers ready, with their revents
        self._kept: dict[Any, None] = {}
        self._config: Any = None
        self._stopped = False
        self._exception: BaseException | None = None
        self._reactor_depth = 0
        self._attrs: dict[str, Any] | None = None
        self._signs: bool | None = None  # whether submissions go signed (flux.job.submit)

    # --- requests ---------------------------------------------------------------------

    def rpc(
        self, topic: Any, payload: Any = None, nodeid: int = FLUX_NODEID_ANY, flags: int = 0
    ) -> RPC:
        """Send a request; the returned future gives its response(s)."""
        from flux.rpc import RPC

        return RPC(self, topic, payload, nodeid, flags)

    def _send_request(self, rpc: RPC, topic: str, payload: Any, nodeid: int, flags: int) -> int:
        """Send ``rpc``'s request; an unsendable one is the future's error instead."""
        if flags & ~(FLUX_RPC_STREAMING | FLUX_RPC_NORESPONSE) or flags == (
            FLUX_RPC_STREAMING | FLUX_RPC_NORESPONSE
        ):
            raise OSError(errno.EINVAL, f"rpc: flags: invalid value {flags}")
        if self._sock is None:
            raise OSError(errno.EBADF, "rpc: the Flux handle is closed")
        self._tag += 1
        wire = 0
        if flags & FLUX_RPC_STREAMING:
            wire = _WIRE_STREAMING
        elif flags & FLUX_RPC_NORESPONSE:
            wire = _WIRE_NORESPONSE
        message = {
            "type": _REQUEST,
            "topic": topic,
            "matchtag": self._tag,
            "flags": wire,
            "payload": payload,
            "errnum": 0,
            "errstr": None,
        }
        if nodeid not in (FLUX_NODEID_ANY, FLUX_NODEID_UPSTREAM):
            message["nodeid"] = nodeid  # one rank's service; the broker routes it there
        body = json.dumps(message, separators=(",", ":")).encode("utf-8", "surrogateescape")
        if wire != _WIRE_NORESPONSE:
            self._rpcs[self._tag] = rpc
        try:
            self._sock.sendall(len(body).to_bytes(4, "big") + body)
        except OSError as exc:
            self._lost(exc)
        return self._tag

    # --- responses --------------------------------------------------------------------

    def _read(self, timeout: float | None) -> bool:
        """Read what arrives within ``timeout`` seconds (None: wait) and hand each response
        to its future; False if nothing came."""
        sock = self._sock
        if sock is None:
            return False
        if timeout is not None:
            import select

            ready, _, _ = select.select([sock], [], [], max(0.0, timeout))
            if not ready:
                return False
        if not self._take_in(sock):
            return True
        buf = self._inbuf
        pos = 0
        end = len(buf)
        messages = []
        while end - pos >= 4:
            size = int.from_bytes(buf[pos : pos + 4], "big")
            if size > _MAX_SIZE:
                self._lost(OSError(errno.EPROTO, "message too large"))
                return True
            if end - pos - 4 < size:
                break
            messages.append(bytes(buf[pos + 4 : pos + 4 + size]))
            pos += 4 + size
        del buf[:pos]
        if messages:
            for body in messages:
                self._route(json.loads(body))
        return True

    def _take_in(self, sock: _socket.socket) -> bool:
        """Add what one read gets to ``_inbuf``; False if nothing came (the connection lost
        or the read interrupted)."""
        try:
            data = self._reads.recv(sock)
        except InterruptedError:
            return False
        except OSError as exc:
            self._lost(exc)
            return False
        if not data:
            self._lost(None)
            return False
        self._inbuf += data
        return True

    def _route(self, msg: dict[str, Any]) -> None:
        if msg.get("type") in (FLUX_MSGTYPE_EVENT, FLUX_MSGTYPE_REQUEST):
            from flux.message import Message

            self._inbox.append(Message._from_wire(msg))
            return
        tag = msg.get("matchtag", 0)
        errnum = msg.get("errnum") or 0
        if tag == 0 and errnum:  # the broker refused this connection
            self._lost(OSError(errnum, msg.get("errstr") or os.strerror(errnum)))
            return
        rpc = self._rpcs.get(tag)
        if rpc is None:
            return
        if errnum or not rpc._streaming:
            del self._rpcs[tag]
            rpc._more = False
        rpc._on_response(msg.get("payload"), errnum, msg.get("errstr"))

    def _lost(self, exc: OSError | None) -> None:
        """The connection is gone: every RPC still waiting gets an error."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        errnum = errno.ECONNRESET
        text = "Connection to the Flux instance was lost"
        if exc is not None and exc.errno is not None:
            errnum = exc.errno
            text = f"{text}: {exc.strerror}"
        rpcs, self._rpcs = self._rpcs, {}
        for rpc in rpcs.values():
            rpc._more = False
            rpc._fulfill_error(errnum, text)

    def _wait(self, future: Future, timeout: float | None) -> None:
        """Read until ``future`` has a result (``timeout`` seconds at most: TimeoutError)."""
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        while not future._results:
            if not future._more:
                raise OSError(errno.ENODATA, "the future has no more results")
            if self._sock is None:
                raise OSError(errno.ECONNRESET, "Connection to the Flux instance was lost")
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise OSError(errno.ETIMEDOUT, os.strerror(errno.ETIMEDOUT))
            self._read(remaining)

    def _run_until(self, future: Future, timeout: float | None) -> None:
        """Run callbacks and watchers until ``future`` has a result (a blocking get of
        a future that other futures' callbacks fulfil: ``FutureExt``)."""
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        while True:
            self._run_callbacks()
            if future._results:
                return
            if self._stopped:
                self._stopped = False
                exc, self._exception = self._exception, None
                if exc is not None:
                    raise exc
            if not future._more:
                raise OSError(errno.ENODATA, "the future has no more results")
            wait = self._timer_wait()
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise OSError(errno.ETIMEDOUT, os.strerror(errno.ETIMEDOUT))
                wait = remaining if wait is None else min(wait, remaining)
            if wait is None and self._sock is None:
                raise OSError(errno.ECONNRESET, "Connection to the Flux instance was lost")
            self._poll(wait)

    # --- the reactor ------------------------------------------------------------------

    def reactor_run(self, reactor: Any = None, flags: int = 0) -> int:
        """Call ``then`` callbacks and timers until nothing is left to wait for, or
        ``reactor_stop()``; re-raise what a callback raised. Returns 0; a connection
        lost while a message watcher waited raises ECONNRESET. ``FLUX_REACTOR_NOWAIT``
        calls only what is ready now, ``FLUX_REACTOR_ONCE`` waits until something is:
        both return 1 if something is still to be waited for, else 0."""
        if flags & ~(FLUX_REACTOR_NOWAIT | FLUX_REACTOR_ONCE):
            raise OSError(errno.EINVAL, f"reactor_run: flags: invalid value {flags!r}")
        self._stopped = False
        self._reactor_depth += 1
        try:
            while True:
                ran = self._run_callbacks()
                if self._stopped or not self._active() or (flags & FLUX_REACTOR_ONCE and ran):
                    break
                if flags & FLUX_REACTOR_NOWAIT:
                    self._turn(0.0)
                    self._run_callbacks()
                    break
                self._turn(self._timer_wait())
        finally:
            self._reactor_depth -= 1
        exc, self._exception = self._exception, None
        if exc is not None:
            raise exc
        if not self._stopped and self._sock is None and self._msg_watchers:
            raise OSError(errno.ECONNRESET, "Connection to the Flux instance was lost")
        return int(bool(flags) and self._active())

    def reactor_running(self) -> bool:
        """Whether ``reactor_run`` is running on this handle."""
        return self._reactor_depth > 0

    def reactor_enter(self) -> None:
        """Count this handle's reactor as running (``reactor_running``) until ``reactor_exit``."""
        self._reactor_depth += 1

    def reactor_exit(self) -> None:
        self._reactor_depth -= 1

    @contextlib.contextmanager
    def in_reactor(self) -> Iterator[None]:
        """``reactor_enter`` for the ``with`` block."""
        self.reactor_enter()
        try:
            yield
        finally:
            self.reactor_exit()

    def set_exception(self, exception: BaseException | None) -> BaseException | None:
        """Set what ``reactor_run`` raises once it returns (a callback's error); the one
        set before is returned."""
        previous, self._exception = self._exception, exception
        return previous

    def raise_if_exception(self) -> None:
        """Raise the exception set, if any, and clear it."""
        exc = self.set_exception(None)
        if exc is not None:
            raise exc from None

    def reactor_stop(self, reactor: Any = None) -> None:
        self._stopped = True

    def reactor_stop_error(self, reactor: Any = None) -> None:
        self._stopped = True

    def timer_watcher_create(
        self, after: float, callback: Callable[..., Any], repeat: float = 0.0, args: Any = None
    ) -> TimerWatcher:
        """A timer (not started: call ``start()``)."""
        from flux.core.watchers import TimerWatcher

        return TimerWatcher(self, after, callback, repeat=repeat, args=args)

    def prepare_watcher_create(
        self, callback: Callable[..., Any], args: Any = None
    ) -> PrepareWatcher:
        """A watcher called before each wait of ``reactor_run`` (not started)."""
        from flux.core.watchers import PrepareWatcher

        return PrepareWatcher(self, callback, args)

    def check_watcher_create(self, callback: Callable[..., Any], args: Any = None) -> CheckWatcher:
        """A watcher called after each wait of ``reactor_run`` (not started)."""
        from flux.core.watchers import CheckWatcher

        return CheckWatcher(self, callback, args)

    def idle_watcher_create(
        self, callback: Callable[..., Any] | None = None, args: Any = None
    ) -> IdleWatcher:
        """A watcher that keeps ``reactor_run`` from waiting while started (not started)."""
        from flux.core.watchers import IdleWatcher

        return IdleWatcher(self, callback, args)

    def fd_watcher_create(
        self, fd_int: int, callback: Callable[..., Any], events: int | None = None, args: Any = None
    ) -> FDWatcher:
        """A watcher of ``fd_int`` (default events: in, out and error; not started)."""
        from flux.core.watchers import FDWatcher

        if events is None:
            events = FLUX_POLLIN | FLUX_POLLOUT | FLUX_POLLERR
        return FDWatcher(self, fd_int, events, callback, args=args)

    def signal_watcher_create(
        self, signum: int, callback: Callable[..., Any], args: Any = None
    ) -> SignalWatcher:
        """A watcher of signal ``signum`` (not started)."""
        from flux.core.watchers import SignalWatcher

        return SignalWatcher(self, signum, callback, args)

    def msg_watcher_create(
        self,
        callback: Callable[..., Any],
        type_mask: int = FLUX_MSGTYPE_ANY,
        topic_glob: Any = "*",
        args: Any = None,
        match_tag: int = FLUX_MATCHTAG_NONE,
        rolemask: Any = None,
    ) -> MessageWatcher:
        """A watcher of the events and requests that reach this handle (not started).
        ``rolemask`` is accepted as flux-core's: every request here comes from the
        instance owner, whom any rolemask allows."""
        from flux.message import MessageWatcher

        return MessageWatcher(self, type_mask, callback, topic_glob, match_tag, rolemask, args)

    def add_watcher(self, watcher: Any) -> Any:
        """Keep ``watcher`` referenced (flux-core's guard against garbage collection)."""
        self._kept[watcher] = None
        return watcher

    def del_watcher(self, watcher: Any) -> None:
        self._kept.pop(watcher, None)

    def _active(self) -> bool:
        if any(t.referenced for t in self._timers):
            return True
        if any(w.referenced for kind in self._turn_watchers.values() for w in kind):
            return True
        if any(w.referenced for w in self._fd_watchers) or any(
            w.referenced for w in self._signal_watchers
        ):
            return True
        if self._sock is not None and any(w.referenced for w in self._msg_watchers):
            return True  # a message may come while the connection is up
        return any(f._more or f._undelivered() for f in self._thens)

    def _wake_fd(self) -> int:
        """The write end of the pipe a signal handler wakes the reactor with."""
        if self._wake is None:
            rfd, wfd = os.pipe()
            os.set_blocking(rfd, False)
            os.set_blocking(wfd, False)
            self._wake = (rfd, wfd)
        return self._wake[1]

    def _poll(self, timeout: float | None) -> None:
        """Wait for a message, a ready fd watcher or a signal (``timeout`` at most)."""
        watchers = list(self._fd_watchers)
        if not watchers and self._wake is None:
            if self._sock is None:  # nothing to read: only a timer can be waited for
                if timeout:
                    time.sleep(timeout)
                return
            self._read(timeout)
            return
        import select

        reads: list[int] = [] if self._sock is None else [self._sock.fileno()]
        if self._wake is not None:
            reads.append(self._wake[0])
        reads += [w.fd_int for w in watchers if w.events & FLUX_POLLIN]
        writes = [w.fd_int for w in watchers if w.events & FLUX_POLLOUT]
        try:
            rready, wready, xready = select.select(reads, writes, reads + writes, timeout)
        except (OSError, ValueError):  # a watched fd was closed: its watcher hears of it
            rready, wready = [], []
            xready = [w.fd_int for w in watchers if not _valid_fd(w.fd_int)]
            if not xready:
                raise
        if self._wake is not None and self._wake[0] in rready:
            with contextlib.suppress(BlockingIOError):
                os.read(self._wake[0], 4096)
        for w in watchers:
            revents = (
                (FLUX_POLLIN if w.fd_int in rready else 0)
                | (FLUX_POLLOUT if w.fd_int in wready else 0)
                | (FLUX_POLLERR if w.fd_int in xready else 0)
            )
            if revents:
                self._fired.append((w, revents))
        if self._sock is not None and self._sock.fileno() in rready:
            self._read(0.0)

    def _timer_wait(self) -> float | None:
        if not self._timers:
            return None
        return max(0.0, min(t.due for t in self._timers) - time.monotonic())

    def _turn(self, timeout: float | None) -> None:
        """One wait of ``reactor_run`` (none while an idle watcher is started), between
        its prepare watchers and its check and idle watchers."""
        watchers = self._turn_watchers
        if not self._call_turn(watchers["prepare"]):
            return
        self._poll(0.0 if watchers["idle"] else timeout)
        if self._call_turn(watchers["check"]):
            self._call_turn(watchers["idle"])

    def _call_turn(self, started: dict[Any, None]) -> bool:
        for watcher in list(started):
            if watcher in started and not self._call(
                partial(watcher.callback, self, watcher, 0, watcher.args)
            ):
                return False
        return True

    def _run_callbacks(self) -> bool:
        """Call every timer due, every watcher woken and every callback queued with a
        result it has not seen, until none is left (a callback may reset its future
        or fulfil another): whether any was."""
        ran = False
        progress = True
        while progress and not self._stopped:
            progress = False
            if self._timers:
                fired = self._run_timers()
                if fired is None:
                    return True
                progress = fired
            if self._fired or self._signals:
                progress = True
                if not self._call_watchers():
                    return True
            if self._inbox and self._msg_watchers:
                progress = True
                if not self._dispatch():
                    return True
            if self._ready:
                progress = True
                if not self._run_thens():
                    return True
            ran = ran or progress
        return ran

    def _run_thens(self) -> bool:
        """Call the ``then`` callbacks queued (False: the reactor is to stop)."""
        ready = self._ready
        while ready:
            future = ready.popleft()
            if future._stopped_cb:
                continue
            if future._undelivered():
                future._delivered = future._results[0]
                if not self._call(future._callback):
                    return False
            if not future._more and not future._undelivered():
                self._thens.pop(future, None)
        return True

    def _run_timers(self) -> bool | None:
        """Fire the timers due: whether any was (None: the reactor is to stop)."""
        now = time.monotonic()
        due = [t for t in self._timers if t.due <= now]
        for timer in due:
            if not self._call(timer._fire):
                return None
        return bool(due)

    def _call_watchers(self) -> bool:
        """Call the fd watchers found ready and the signal watchers of signals arrived."""
        fired, self._fired = self._fired, []
        for fw, revents in fired:
            if fw in self._fd_watchers and not self._call(
                partial(fw.callback, self, fw, fw.fd_int, revents, fw.args)
            ):
                return False
        signals, self._signals = self._signals, []
        for signum in signals:
            for sw in [w for w in self._signal_watchers if w.signum == signum]:
                if not self._call(partial(sw.callback, self, sw, signum, sw.args)):
                    return False
        return True

    def _dispatch(self) -> bool:
        """Hand each message kept to the first started watcher that matches it; with none,
        drop an event and answer a request ENOSYS (flux-core's dispatcher)."""
        inbox = self._inbox
        while inbox and self._msg_watchers and not self._stopped:
            msg = inbox.popleft()
            watcher = next((w for w in self._msg_watchers if w.matches(msg)), None)
            if watcher is None:
                if msg.type == FLUX_MSGTYPE_REQUEST:
                    self._respond(msg, None, errno.ENOSYS, None)
                continue
            if not self._call(partial(watcher.callback, self, watcher, msg, watcher.args)):
                return False
        return True

    def _call(self, function: Callable[[], None]) -> bool:
        try:
            function()
        except Exception as exc:
            self._exception = exc
            self._stopped = True
            return False
        return not self._stopped

    # --- attributes and the rest ------------------------------------------------------

    def attr_get(self, attr_name: Any) -> str:
        """A broker attribute, as a string (``broker.attrs``); ENOENT for an unknown one."""
        if isinstance(attr_name, bytes):
            attr_name = attr_name.decode("utf-8")
        if self._attrs is None:
            self._attrs = self.rpc("broker.attrs", {}).get()["attrs"]
        try:
            value = self._attrs[attr_name]
        except KeyError:
            raise OSError(errno.ENOENT, os.strerror(errno.ENOENT)) from None
        return str(value)

    def attr_set(self, attr: Any, value: Any) -> None:
        """Set a broker attribute flux-core lets change at run time (``log-stderr-level``,
        ``log-level``, ``log-ring-size``); others are EPERM, an unknown name ENOENT."""
        if not isinstance(attr, str):
            raise ValueError("Attribute name must be a string")
        if not isinstance(value, str):
            raise ValueError("Attribute value must be a string")
        self.rpc("attr.set", {"name": attr, "value": value}).get()
        if self._attrs is not None:
            self._attrs[attr] = value

    def attr_remove(self, attr: Any) -> None:
        """Remove a broker attribute: none of pflux's may be (EPERM; ENOENT for an
        unknown one), as ``setattr`` makes none."""
        if not isinstance(attr, str):
            raise ValueError("Attribute name must be a string")
        self.attr_get(attr)
        raise OSError(errno.EPERM, f"attr.rm: {attr} cannot be removed")

    def conf_get(self, key: Any = None, default: Any = None, update: bool = False) -> Any:
        """The instance's configuration (``config.get``, fetched once and kept unless
        ``update``), or the value at dotted ``key`` (``default`` where it is not set)."""
        if update or self._config is None:
            self._config = self.rpc("config.get").get()
        if key is None:
            return self._config
        value = self._config
        for part in _text(key, "key").split("."):
            if not isinstance(value, dict) or part not in value:
                return default
            value = value[part]
        return value

    def log(self, level: int, fstring: Any) -> None:
        """Add ``fstring`` to the instance's log ring (``flux dmesg`` shows it) at syslog
        ``level``; nothing is formatted."""
        import sys

        text = fstring.decode("utf-8", "replace") if isinstance(fstring, bytes) else fstring
        if not isinstance(text, str):
            raise TypeError(f"fstring must be a str or bytes, not {type(fstring).__name__}")
        name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
        entry = {
            "timestamp": time.time(),
            "name": name or "python",
            "severity": int(level) & 7,
            "rank": self.get_rank(),
            "message": text,
        }
        self._send_message(_REQUEST, "log.append", 0, entry, flags=_WIRE_NORESPONSE)

    # --- events, services, messages ---------------------------------------------------

    def event_subscribe(self, topic: Any) -> None:
        """Receive the events whose topic starts with ``topic`` (``""``: all of them)."""
        self.rpc("event.subscribe", {"topic": _event_topic(topic)}).get()

    def event_unsubscribe(self, topic: Any) -> None:
        """Undo one ``event_subscribe(topic)``."""
        self.rpc("event.unsubscribe", {"topic": _event_topic(topic)}).get()

    def event_create(self, topic: Any, payload: Any = None) -> Message:
        """An event message, for ``send``."""
        from flux.message import Message

        return Message.from_event_encode(_event_topic(topic), payload)

    def event_send(self, topic: Any, payload: Any = None) -> None:
        """Publish an event (without waiting for it to be published)."""
        self.send(self.event_create(topic, payload))

    def event_recv(self, topic: Any = None) -> Message:
        """The next event received (one whose topic matches the glob ``topic``)."""
        return self.recv(type_mask=FLUX_MSGTYPE_EVENT, topic_glob=topic)

    def recv(
        self,
        type_mask: int = FLUX_MSGTYPE_ANY,
        match_tag: int = FLUX_MATCHTAG_NONE,
        topic_glob: Any = None,
        flags: int = 0,
    ) -> Message:
        """The first event or request kept that matches, waiting for one
        (``FLUX_O_NONBLOCK``: EAGAIN instead of waiting)."""
        from flux.message import MessageWatcher

        if flags & ~FLUX_O_NONBLOCK:
            raise OSError(errno.EINVAL, f"recv: flags: invalid value {flags}")
        match = MessageWatcher(self, type_mask, _ignore, topic_glob, match_tag)
        seen = 0
        while True:
            inbox = self._inbox
            for i in range(seen, len(inbox)):
                if match.matches(inbox[i]):
                    msg = inbox[i]
                    del inbox[i]
                    return msg
            seen = len(inbox)
            if flags & FLUX_O_NONBLOCK:
                raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN))
            if self._sock is None:
                raise OSError(errno.ECONNRESET, "Connection to the Flux instance was lost")
            self._read(None)

    def send(self, message: Message, flags: int = 0) -> None:
        """Send a message made here: an event is published (``event.pub``), a response
        answers its request, a request is sent wanting no response."""
        from flux.message import Message

        if not isinstance(message, Message):
            raise TypeError(f"message must be a flux.message.Message, not {type(message).__name__}")
        if flags:
            raise OSError(errno.EINVAL, f"send: flags: invalid value {flags}")
        payload = message._wire_payload()
        if message.type == FLUX_MSGTYPE_EVENT:
            pub = {"topic": message.topic, "flags": message.flags, "payload": payload}
            self._send_message(_REQUEST, "event.pub", 0, pub, flags=_WIRE_NORESPONSE)
        elif message.type == FLUX_MSGTYPE_RESPONSE:
            self._respond(message, payload, message.errnum, message.errstr)
        elif message.type == FLUX_MSGTYPE_REQUEST:
            self._send_message(_REQUEST, message.topic, 0, payload, flags=_WIRE_NORESPONSE)
        else:
            raise OSError(errno.EINVAL, f"send: a {message.type_str} message cannot be sent")

    def respond(self, message: Message, payload: Any = None) -> None:
        """Answer the request ``message`` (received by a message watcher or ``recv``)."""
        from flux.message import Message, encode_payload

        if not isinstance(message, Message) or message.type != FLUX_MSGTYPE_REQUEST:
            raise OSError(errno.EPROTO, "respond: message is not a request")
        text = encode_payload(payload)
        try:
            value = None if text is None else json.loads(text)
        except ValueError as exc:
            raise OSError(errno.EPROTO, f"respond: payload: not JSON text: {exc}") from None
        self._respond(message, value, 0, None)

    def respond_error(self, message: Message, errnum: int, errstr: str | None = None) -> None:
        """Answer the request ``message`` with an error (flux_respond_error)."""
        if not errnum:
            raise OSError(errno.EINVAL, "respond_error: errnum must not be 0")
        self._respond(message, None, errnum, errstr)

    def _respond(self, message: Message, payload: Any, errnum: int, errstr: str | None) -> None:
        if message.flags & _WIRE_NORESPONSE:
            return
        self._send_message(
            _RESPONSE, message.topic, message.matchtag, payload, errnum=errnum, errstr=errstr
        )

    def service_register(self, name: Any) -> Future:
        """Provide service ``name``: requests for ``name.*`` reach this handle's message
        watchers. The future's ``get()`` says whether the broker agreed."""
        return self._void_rpc("broker.service-add", {"service": _text(name, "name")})

    def service_unregister(self, name: Any) -> Future:
        """Provide service ``name`` no longer."""
        return self._void_rpc("broker.service-remove", {"service": _text(name, "name")})

    def _void_rpc(self, topic: str, payload: Any) -> Future:
        from flux.rpc import VoidRPC

        return VoidRPC(self, topic, payload)

    def _send_message(
        self,
        mtype: int,
        topic: str,
        matchtag: int,
        payload: Any,
        *,
        flags: int = 0,
        errnum: int = 0,
        errstr: str | None = None,
    ) -> None:
        if self._sock is None:
            raise OSError(errno.EBADF, "send: the Flux handle is closed")
        message = {
            "type": mtype,
            "topic": topic,
            "matchtag": matchtag,
            "flags": flags,
            "payload": payload,
            "errnum": errnum,
            "errstr": errstr,
        }
        body = json.dumps(message, separators=(",", ":")).encode("utf-8", "surrogateescape")
        try:
            self._sock.sendall(len(body).to_bytes(4, "big") + body)
        except OSError as exc:
            self._lost(exc)

    def get_rank(self) -> int:
        """This broker's rank: a pflux instance is one broker, rank 0."""
        return 0

    def close(self) -> None:
        """Close the connection: waiting RPCs fail (flux-core closes on garbage collection)."""
        if self._sock is not None:
            self._lost(None)

    def __del__(self) -> None:
        sock = getattr(self, "_sock", None)
        if sock is not None:
            sock.close()
        wake = getattr(self, "_wake", None)
        if wake is not None:
            os.close(wake[0])
            os.close(wake[1])


def _text(value: Any, what: str) -> str:
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str or bytes, not {type(value).__name__}")
    return value


def _event_topic(topic: Any) -> str:
    """flux-core's checks of a topic: None is EINVAL, anything but text a TypeError."""
    if topic is None:
        raise OSError(errno.EINVAL, "Topic must not be None/NULL")
    if not isinstance(topic, (str, bytes)):
        raise TypeError(f"Topic must be a string, not {type(topic)}")
    return _text(topic, "topic")


def _valid_fd(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _ignore(*_args: Any) -> None:
    """The callback of a watcher used only to match (``recv``)."""
