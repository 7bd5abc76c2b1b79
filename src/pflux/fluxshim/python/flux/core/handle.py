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
- ``flux.job.executor``'s threads turn that loop themselves (``_read`` and
  ``_run_callbacks``), waiting on the socket and on their own wake-up pipe.

One handle belongs to one thread at a time.
"""

from __future__ import annotations

# the C module: ``socket`` would load enum and selectors, a few ms a job pays
import _socket
import errno
import os
import time
from collections import deque

from flux.constants import (
    FLUX_NODEID_ANY,
    FLUX_NODEID_UPSTREAM,
    FLUX_RPC_NORESPONSE,
    FLUX_RPC_STREAMING,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from typing import Any, Callable

    from flux.future import Future
    from flux.rpc import RPC

_REQUEST = 1
_WIRE_STREAMING = 1
_WIRE_NORESPONSE = 2
_MAX_SIZE = 64 * 1024 * 1024


def _socket_path(url: Any) -> str:
    if isinstance(url, bytes):
        url = url.decode("utf-8")
    if url is None:
        url = os.environ.get("FLUX_URI")
        if not url:
            raise OSError(
                errno.ENOENT,
                "Unable to connect to Flux: FLUX_URI is not set"
                ' (run inside a pflux instance, or eval "$(pflux env)")',
            )
    if not isinstance(url, str):
        raise TypeError(f"url must be a str or bytes, not {type(url).__name__}")
    if url.startswith("local://"):
        path = url[len("local://") :]
    elif "://" in url:
        scheme = url.split("://", 1)[0]
        raise OSError(
            errno.EINVAL,
            f"Unable to connect to Flux: {url}: connector {scheme} is not supported"
            " (pflux serves local:// URIs only)",
        )
    else:
        path = url
    if not path:
        raise OSError(errno.EINVAL, f"Unable to connect to Flux: {url!r} names no socket")
    return path


class TimerWatcher:
    """A timer: ``callback(handle, watcher, revents, args)`` after ``after`` seconds,
    then every ``repeat`` seconds if ``repeat`` > 0 (flux-core's timer watcher)."""

    def __init__(
        self,
        handle: Flux,
        after: float,
        callback: Callable[..., Any],
        repeat: float = 0.0,
        args: Any = None,
    ) -> None:
        self.flux_handle = handle
        self.after = float(after)
        self.repeat = float(repeat)
        self.callback = callback
        self.args = args
        self.due = 0.0
        self.referenced = True

    def start(self) -> TimerWatcher:
        self.due = time.monotonic() + self.after
        self.flux_handle._timers.add(self)
        return self

    def stop(self) -> TimerWatcher:
        self.flux_handle._timers.discard(self)
        return self

    def ref(self) -> TimerWatcher:
        self.referenced = True
        return self

    def unref(self) -> TimerWatcher:
        """An unreferenced timer does not keep ``reactor_run`` going by itself."""
        self.referenced = False
        return self

    def destroy(self) -> None:
        self.stop()

    def __enter__(self) -> TimerWatcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _fire(self) -> None:
        if self.repeat > 0:
            self.due += self.repeat
        else:
            self.stop()
        self.callback(self.flux_handle, self, 0, self.args)


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
        self._thens: dict[Future, None] = {}  # futures with a callback, in the order set
        self._ready: deque[Future] = deque()  # futures whose callback has a result to see
        self._timers: set[TimerWatcher] = set()
        self._stopped = False
        self._exception: BaseException | None = None
        self._reactor_depth = 0
        self._attrs: dict[str, Any] | None = None

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
        import json

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
        try:
            data = sock.recv(1 << 20)
        except InterruptedError:
            return True
        except OSError as exc:
            self._lost(exc)
            return True
        if not data:
            self._lost(None)
            return True
        buf = self._inbuf
        buf += data
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
            import json

            for body in messages:
                self._route(json.loads(body))
        return True

    def _route(self, msg: dict[str, Any]) -> None:
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

    # --- the reactor ------------------------------------------------------------------

    def reactor_run(self, reactor: Any = None, flags: int = 0) -> int:
        """Call ``then`` callbacks and timers until nothing is left to wait for, or
        ``reactor_stop()``; re-raise what a callback raised. Returns 0."""
        self._stopped = False
        self._reactor_depth += 1
        try:
            while True:
                self._run_callbacks()
                if self._stopped or not self._active():
                    break
                self._read(self._timer_wait())
        finally:
            self._reactor_depth -= 1
        exc, self._exception = self._exception, None
        if exc is not None:
            raise exc
        return 0

    def reactor_running(self) -> bool:
        """Whether ``reactor_run`` is running on this handle."""
        return self._reactor_depth > 0

    def reactor_stop(self, reactor: Any = None) -> None:
        self._stopped = True

    def reactor_stop_error(self, reactor: Any = None) -> None:
        self._stopped = True

    def timer_watcher_create(
        self, after: float, callback: Callable[..., Any], repeat: float = 0.0, args: Any = None
    ) -> TimerWatcher:
        """A timer (not started: call ``start()``)."""
        return TimerWatcher(self, after, callback, repeat=repeat, args=args)

    def _active(self) -> bool:
        if any(t.referenced for t in self._timers):
            return True
        return any(f._more or f._undelivered() for f in self._thens)

    def _timer_wait(self) -> float | None:
        if not self._timers:
            return None
        return max(0.0, min(t.due for t in self._timers) - time.monotonic())

    def _run_callbacks(self) -> None:
        """Call every timer due and every callback queued with a result it has not seen,
        until none is left (a callback may reset its future or fulfil another)."""
        ready = self._ready
        progress = True
        while progress and not self._stopped:
            progress = False
            if self._timers:
                now = time.monotonic()
                for timer in [t for t in self._timers if t.due <= now]:
                    progress = True
                    if not self._call(timer._fire):
                        return
            while ready:
                progress = True
                future = ready.popleft()
                if future._stopped_cb:
                    continue
                if future._undelivered():
                    future._delivered = future._results[0]
                    if not self._call(future._callback):
                        return
                if not future._more and not future._undelivered():
                    self._thens.pop(future, None)

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
