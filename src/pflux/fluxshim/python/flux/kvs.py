"""``flux.kvs``: the instance's key-value store, as flux-core's Python API has it.

Values go in as JSON (``put(h, "a", "x")`` stores ``"x"``, quotes included);
``bytes`` go in as they are, where they are UTF-8 text (pflux's store holds
text). ``get`` decodes JSON, and gives back text that is not JSON as a str.
Writes are staged in a transaction (the handle's own for ``put`` and the
others without ``_kvstxn``, or a ``KVSTxn``) until ``commit``, which applies
it in one ``kvs.commit``, atomically. Keys are normalized as flux-core's
(``a..b.`` is ``a.b``). ``namespace=None`` is ``$FLUX_KVS_NAMESPACE``, else
the primary namespace.

A ``KVSDir`` reads its directory's listing once, when it is made.
``kvs_watch_async`` follows a key: each ``get()`` of its future is the key's next
value (one per commit that changes it), ``None`` once the watch is canceled.
"""

from __future__ import annotations

import errno
import json
import os
from collections import abc

from flux.constants import (
    FLUX_KVS_NO_MERGE,
    FLUX_KVS_SYNC,
    FLUX_KVS_TXN_COMPACT,
    FLUX_RPC_STREAMING,
)
from flux.future import Future
from flux.rpc import RPC

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from typing import Any, Iterator, List, Mapping

    from flux.core.handle import Flux

    Op = List[Any]

__all__ = [
    "KVSDir",
    "KVSTxn",
    "KVSWatchFuture",
    "commit",
    "commit_async",
    "dropcache",
    "exists",
    "get",
    "get_dir",
    "get_key_direct",
    "isdir",
    "join",
    "kvs_watch_async",
    "namespace_create",
    "namespace_list",
    "namespace_remove",
    "put",
    "put_mkdir",
    "put_symlink",
    "put_unlink",
    "walk",
]

_NAMESPACE_ENV = "FLUX_KVS_NAMESPACE"
# what a lookup fails with in flux-core: the errno alone, in the C library's words
_LOOKUP_ERRNOS = (errno.ENOENT, errno.EISDIR, errno.ENOTDIR)


def normalize_key(key: str) -> str:
    """``key`` with empty path components dropped, as flux-core's KVS reads keys:
    ``a..b.`` is ``a.b``, and a key of dots alone is the root, ``.``."""
    if not isinstance(key, str):
        raise TypeError(f"kvs: key must be a string, got {type(key).__name__}")
    parts = [part for part in key.split(".") if part]
    return ".".join(parts) if parts else "."


def _namespace(namespace: str | None) -> str | None:
    return namespace if namespace is not None else os.environ.get(_NAMESPACE_ENV) or None


def _payload(namespace: str | None, **fields: Any) -> dict[str, Any]:
    namespace = _namespace(namespace)
    if namespace is not None:
        fields["namespace"] = namespace
    return fields


def _lookup(flux_handle: Flux, topic: str, payload: dict[str, Any]) -> Any:
    """A read's response; its ENOENT, EISDIR and ENOTDIR in flux-core's words."""
    try:
        return flux_handle.rpc(topic, payload).get()
    except OSError as exc:
        if exc.errno in _LOOKUP_ERRNOS:
            raise OSError(exc.errno, os.strerror(exc.errno)) from None
        raise


def _decode(text: str) -> Any:
    """A stored value: its JSON, else the text itself; None for an empty value."""
    if text == "":
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def get_key_direct(flux_handle: Flux, key: str, namespace: str | None = None) -> Any:
    """The value at ``key`` (OSError EISDIR for a directory, ENOENT for nothing)."""
    payload = _payload(namespace, key=normalize_key(key))
    return _decode(_lookup(flux_handle, "kvs.get", payload)["value"])


def _kind(flux_handle: Flux, key: str, namespace: str | None) -> str | None:
    """What is at ``key``: ``"dir"``, ``"val"``, or None for nothing."""
    try:
        get_key_direct(flux_handle, key, namespace=namespace)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None
        if exc.errno == errno.EISDIR:
            return "dir"
        raise
    return "val"


def exists(flux_handle: Flux, key: str, namespace: str | None = None) -> bool:
    """Whether ``key`` is a value or a directory."""
    return _kind(flux_handle, key, namespace) is not None


def isdir(flux_handle: Flux, key: str, namespace: str | None = None) -> bool:
    """Whether ``key`` is a directory."""
    return _kind(flux_handle, key, namespace) == "dir"


def get_dir(
    flux_handle: Flux, key: str = ".", namespace: str | None = None, _kvstxn: Any = None
) -> KVSDir:
    """The directory at ``key``, as a ``KVSDir``."""
    return KVSDir(path=key, flux_handle=flux_handle, namespace=namespace, _kvstxn=_kvstxn)


def get(flux_handle: Flux, key: str, namespace: str | None = None, _kvstxn: Any = None) -> Any:
    """The value at ``key`` (decoded from JSON where it is JSON), or its ``KVSDir``."""
    try:
        return get_key_direct(flux_handle, key, namespace=namespace)
    except OSError as exc:
        if exc.errno != errno.EISDIR:
            raise
    return get_dir(flux_handle, key, namespace=namespace, _kvstxn=_kvstxn)


# --- transactions ----------------------------------------------------------------------


def _ops(flux_handle: Flux, _kvstxn: Any) -> list[Op]:
    """The ops of the transaction a write goes to: ``_kvstxn``'s, else the handle's own."""
    if _kvstxn is None:
        ops: list[Op] | None = getattr(flux_handle, "aux_txn", None)
        if ops is None:
            ops = []
            flux_handle.aux_txn = ops  # type: ignore[attr-defined]
        return ops
    if isinstance(_kvstxn, KVSTxn):
        return _kvstxn.txn
    if isinstance(_kvstxn, list):
        return _kvstxn
    raise TypeError(f"kvs: _kvstxn must be a KVSTxn, got {type(_kvstxn).__name__}")


def _key(key: Any) -> str:
    """A key to write: normalized; the root is refused, as flux-core refuses it."""
    normal = normalize_key(key.decode("utf-8") if isinstance(key, bytes) else key)
    if normal == ".":
        raise OSError(errno.EINVAL, "kvs: the root directory cannot be written")
    return normal


def _encode(value: Any) -> str:
    """``value`` as stored: JSON text, or ``bytes`` as they are (UTF-8 text only)."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise OSError(
                errno.EINVAL, "kvs: value: pflux stores text, and these bytes are not UTF-8"
            ) from None
    text: str = json.dumps(value)
    return text


def put(flux_handle: Flux, key: str, value: Any, _kvstxn: Any = None, raw: bool = False) -> None:
    """Stage ``key`` = ``value`` (JSON-encoded; ``bytes`` raw, and with ``raw`` a ``str``
    too, as its text) until ``commit``."""
    if raw and isinstance(value, str):
        value = value.encode("utf-8")
    elif raw and not isinstance(value, bytes):
        raise TypeError(f"kvs: put: a raw value must be bytes or str, not {type(value).__name__}")
    _ops(flux_handle, _kvstxn).append(["put", _key(key), _encode(value)])


def put_mkdir(flux_handle: Flux, key: str, _kvstxn: Any = None) -> None:
    """Stage an empty directory at ``key`` (replacing what is there) until ``commit``."""
    _ops(flux_handle, _kvstxn).append(["mkdir", _key(key), None])


def put_unlink(flux_handle: Flux, key: str, _kvstxn: Any = None) -> None:
    """Stage the removal of ``key`` (a value, or a directory and all below) until ``commit``."""
    _ops(flux_handle, _kvstxn).append(["unlink", _key(key), None])


def put_symlink(flux_handle: Flux, key: str, target: Any, _kvstxn: Any = None) -> None:
    """Stage a symbolic link at ``key`` to the key ``target`` until ``commit``."""
    target_key = normalize_key(target.decode("utf-8") if isinstance(target, bytes) else target)
    _ops(flux_handle, _kvstxn).append(["symlink", _key(key), {"target": target_key}])


def _commit_rpc(flux_handle: Flux, flags: int, namespace: str | None, ops: list[Op]) -> Future:
    if not isinstance(flags, int) or flags & ~_COMMIT_FLAGS:
        raise OSError(errno.EINVAL, f"kvs: commit: flags: invalid value {flags!r}")
    return flux_handle.rpc("kvs.commit", _payload(namespace, ops=list(ops)))


# pflux never merges one client's commit into another's answer, keeps ops as given, and
# answers a commit once it is durable: each flag holds without anything more to do
_COMMIT_FLAGS = FLUX_KVS_NO_MERGE | FLUX_KVS_TXN_COMPACT | FLUX_KVS_SYNC


def commit(
    flux_handle: Flux, flags: int = 0, namespace: str | None = None, _kvstxn: Any = None
) -> None:
    """Apply the staged writes (the handle's own, or ``_kvstxn``'s) in one atomic commit."""
    if _kvstxn is None:
        ops: list[Op] | None = getattr(flux_handle, "aux_txn", None)
        if ops is None:
            return
        flux_handle.aux_txn = None  # type: ignore[attr-defined]
    else:
        ops = _ops(flux_handle, _kvstxn)
    _commit_rpc(flux_handle, flags, namespace, ops).get()


def commit_async(
    flux_handle: Flux, flags: int = 0, namespace: str | None = None, _kvstxn: Any = None
) -> Future:
    """As ``commit``, but returns the future of its RPC."""
    if _kvstxn is None:
        ops: list[Op] = getattr(flux_handle, "aux_txn", None) or []
        flux_handle.aux_txn = None  # type: ignore[attr-defined]
    else:
        ops = _ops(flux_handle, _kvstxn)
    return _commit_rpc(flux_handle, flags, namespace, ops)


# --- namespaces and the cache -------------------------------------------------------------


def namespace_create(
    flux_handle: Flux, namespace: str, owner: int = os.getuid(), flags: int = 0
) -> None:
    """Create the namespace ``namespace``, owned by ``owner``."""
    if flags:
        raise OSError(errno.EINVAL, f"kvs: namespace_create: flags: invalid value {flags!r}")
    flux_handle.rpc("kvs.namespace-create", {"name": namespace, "owner": owner}).get()


def namespace_remove(flux_handle: Flux, namespace: str) -> None:
    """Remove the namespace ``namespace``."""
    flux_handle.rpc("kvs.namespace-remove", {"name": namespace}).get()


def namespace_list(flux_handle: Flux) -> list[str]:
    """The names of the namespaces, ``primary`` first."""
    namespaces = flux_handle.rpc("kvs.namespace-list", {}).get()["namespaces"]
    return [str(ns["name"]) for ns in namespaces]


def dropcache(flux_handle: Flux) -> None:
    """Have the KVS give back the memory of its cache."""
    flux_handle.rpc("kvs.dropcache", {}).get()


# --- KVSTxn and KVSDir -----------------------------------------------------------------------


def _base(path: str) -> str:
    """The prefix of keys below ``path``: ``""`` for the root, else ``path.``."""
    path = normalize_key(path)
    return "" if path == "." else path + "."


class KVSTxn:
    """Writes staged under ``path`` until ``commit`` (on leaving a ``with`` block too)."""

    def __init__(
        self, flux_handle: Flux | None = None, path: str = ".", namespace: str | None = None
    ) -> None:
        self.fhdl = flux_handle
        self.path = path
        self._path = _base(path)
        self.namespace = namespace
        self.txn: list[Op] = []

    def _handle(self) -> Flux:
        if self.fhdl is None:
            raise ValueError("flux_handle must be a valid Flux object")
        return self.fhdl

    def commit(self, flags: int = 0) -> None:
        """Apply the staged writes in one atomic commit (nothing staged: no request)."""
        if not self.txn:
            return
        try:
            commit(self._handle(), flags=flags, namespace=self.namespace, _kvstxn=self)
        finally:
            self.clear()

    def commit_async(self, flags: int = 0) -> Future:
        """As ``commit``, but returns the future of its RPC."""
        future = commit_async(self._handle(), flags=flags, namespace=self.namespace, _kvstxn=self)
        self.clear()
        return future

    def put(self, key: str, value: Any, raw: bool = False) -> None:
        put(self._handle(), self._path + key, value, _kvstxn=self, raw=raw)

    def mkdir(self, key: str) -> None:
        put_mkdir(self._handle(), self._path + key, _kvstxn=self)

    def unlink(self, key: str) -> None:
        put_unlink(self._handle(), self._path + key, _kvstxn=self)

    def symlink(self, key: str, target: str) -> None:
        put_symlink(self._handle(), self._path + key, target, _kvstxn=self)

    def clear(self) -> None:
        self.txn = []

    def __enter__(self) -> KVSTxn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.commit()


class KVSDir(abc.MutableMapping):  # type: ignore[type-arg]
    """A directory of the KVS as a mapping: its names to values or ``KVSDir``s.

    Assignments and deletions are staged in a transaction that the
    directories reached through this one share, applied by ``commit`` (or on
    leaving a ``with`` block).
    """

    def __init__(
        self,
        flux_handle: Flux | None = None,
        path: str = ".",
        handle: Any = None,
        namespace: str | None = None,
        _kvstxn: KVSTxn | None = None,
    ) -> None:
        if flux_handle is None:
            raise ValueError("flux_handle must be a valid Flux object")
        if handle is not None:
            raise ValueError("handle: wrapping a C kvsdir is not supported")
        self.fhdl = flux_handle
        self.path = path
        self._path = _base(path)
        self.namespace = namespace
        key = normalize_key(path)
        self._entries: dict[str, str] = _lookup(
            flux_handle, "kvs.ls", _payload(namespace, key=key)
        )["entries"]
        self.kvstxn = _kvstxn if _kvstxn else KVSTxn(flux_handle, ".", namespace=namespace)

    def commit(self, flags: int = 0) -> None:
        """Apply the staged writes of this directory (and those reached through it)."""
        try:
            self.kvstxn.commit(flags=flags)
        finally:
            self.kvstxn.clear()

    def commit_async(self, flags: int = 0) -> Future:
        """As ``commit``, but returns the future of its RPC."""
        return self.kvstxn.commit_async(flags=flags)

    def key_at(self, key: str) -> str:
        """The full key of ``key`` in this directory."""
        return self._path + key if self._path else key

    def exists(self, name: str) -> bool:
        """Whether ``name`` is in this directory (now, in the KVS)."""
        return exists(self.fhdl, self._path + name, namespace=self.namespace)

    def __getitem__(self, key: str) -> Any:
        try:
            return get(self.fhdl, self.key_at(key), namespace=self.namespace, _kvstxn=self.kvstxn)
        except OSError:
            raise KeyError(f"{key} not found under directory {self.key_at('')}") from None

    def __setitem__(self, key: str, value: Any) -> None:
        self.kvstxn.put(self._path + key, value)

    def __delitem__(self, key: str) -> None:
        self.kvstxn.unlink(self._path + key)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def fill(self, contents: Mapping[str, Any]) -> None:
        """Put every ``contents`` key (``a.b`` makes directories) and commit."""
        if contents is None:
            raise ValueError("contents must be non-None")
        try:
            for key, value in contents.items():
                self[key] = value
        finally:
            self.commit()

    def mkdir(self, key: str, contents: Mapping[str, Any] | None = None) -> None:
        """Make the empty directory ``key`` and commit, then ``fill`` it with ``contents``."""
        self.kvstxn.mkdir(self._path + key)
        self.commit()
        if contents is not None:
            KVSDir(self.fhdl, self._path + key, namespace=self.namespace).fill(contents)

    def files(self) -> Iterator[str]:
        """The names of the values in this directory."""
        for name, kind in list(self._entries.items()):
            if kind != "dir":
                yield name

    def directories(self) -> Iterator[str]:
        """The names of the directories in this directory."""
        for name, kind in list(self._entries.items()):
            if kind == "dir":
                yield name

    def list_all(self) -> tuple[list[str], list[str]]:
        """``(files, directories)``."""
        return list(self.files()), list(self.directories())

    def __enter__(self) -> KVSDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.commit()


def join(*args: str) -> str:
    """The key of path components, as ``os.path.join`` for ``walk``'s names."""
    return ".".join(a for a in args if len(a) > 0)


def _inner_walk(
    kvsdir: KVSDir, curr_dir: str, topdown: bool, namespace: str | None
) -> Iterator[tuple[str, Iterator[str], Iterator[str]]]:
    if topdown:
        yield curr_dir, kvsdir.directories(), kvsdir.files()
    for directory in kvsdir.directories():
        below = get_dir(kvsdir.fhdl, kvsdir.key_at(directory), namespace=namespace)
        yield from _inner_walk(below, join(curr_dir, directory), topdown, namespace)
    if not topdown:
        yield curr_dir, kvsdir.directories(), kvsdir.files()


def walk(
    directory: Any,
    topdown: bool = False,
    flux_handle: Flux | None = None,
    namespace: str | None = None,
) -> Iterator[tuple[str, Iterator[str], Iterator[str]]]:
    """``(path, directories, files)`` for a directory (a key or ``KVSDir``) and each below
    it, as ``os.walk``; ``topdown``: a directory before those below it."""
    if not isinstance(directory, KVSDir):
        if flux_handle is None:
            raise ValueError("If directory is a key, flux_handle must be specified")
        directory = KVSDir(flux_handle, directory, namespace=namespace)
    return _inner_walk(directory, "", topdown, namespace)


_UNSEEN = object()


class KVSWatchFuture(RPC):
    """A key followed (``kvs_watch_async``): ``get()`` is its current value, then
    each new one; ``None`` once the watch has ended (``cancel``)."""

    def __init__(
        self, flux_handle: Flux, key: str, namespace: str | None, waitcreate: bool, uniq: bool
    ) -> None:
        payload = _payload(namespace, key=normalize_key(key), waitcreate=bool(waitcreate))
        super().__init__(flux_handle, "kvs.watch", payload, flags=FLUX_RPC_STREAMING)
        self.needs_cancel = True
        self._uniq = bool(uniq)
        self._last: Any = _UNSEEN

    def get(self, autoreset: bool = True) -> Any:
        """The next value (blocking until there is one); ``None`` once the watch ended.
        The future is reset unless ``autoreset`` is False, so the next ``get()`` waits
        for the value after this one."""
        while True:
            try:
                self.wait_for()
                value = _decode(self._result()["value"])
            except OSError as exc:
                if exc.errno == errno.ENODATA:
                    self.needs_cancel = False
                    return None
                if exc.errno in _LOOKUP_ERRNOS:
                    raise OSError(exc.errno, os.strerror(exc.errno)) from None
                raise
            repeated = self._uniq and value == self._last
            self._last = value
            if autoreset or repeated:
                self.reset()
            if not repeated:
                return value

    def cancel(self, stop: bool = False) -> None:
        """End the watch: the KVS answers it with its end, which ``get()`` returns as
        None; ``stop``: no callback runs for it any more."""
        if self.needs_cancel:
            self.flux_handle.rpc("kvs.watch-cancel", {"matchtag": self.get_matchtag()})
            self.needs_cancel = False
        if stop:
            self.stop()


def kvs_watch_async(
    flux_handle: Flux,
    key: str,
    namespace: str | None = None,
    waitcreate: bool = False,
    uniq: bool = False,
    full: bool = False,
) -> KVSWatchFuture:
    """Follow ``key``: a future whose ``get()`` is each of its values in turn
    (``waitcreate``: wait for a key not there yet, else ENOENT; ``uniq``: a value the
    same as the one before is skipped)."""
    if full:
        # pflux's KVS tells a watch of its key's own changes only
        raise OSError(errno.EINVAL, "kvs_watch_async: full: not supported by pflux's KVS")
    return KVSWatchFuture(flux_handle, key, namespace, waitcreate, uniq)
