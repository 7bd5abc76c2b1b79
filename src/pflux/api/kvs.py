"""The KVS's requests: the request methods both clients share (``pflux.api.exchange``)."""

from __future__ import annotations

from pflux.api.exchange import Exchange, ask

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any


def kvs_payload(namespace: str | None, **payload: Any) -> dict[str, Any]:
    """A KVS request's payload, in ``namespace`` if one is named."""
    if namespace:
        payload["namespace"] = namespace
    return payload


def kvs_get(key: str, *, namespace: str | None = None) -> Exchange[str]:
    """The value of KVS ``key`` (in ``namespace``; default: the primary one)."""
    value: str = (yield from ask("kvs.get", kvs_payload(namespace, key=key)))["value"]
    return value


def kvs_put(
    pairs: Iterable[tuple[str, str]],
    *,
    append: bool = False,
    namespace: str | None = None,
) -> Exchange[None]:
    """Store each ``(key, value)`` in order, in one commit; ``append``: add to the
    values already there."""
    op = "append" if append else "put"
    ops = [[op, key, value] for key, value in pairs]
    yield from ask("kvs.commit", kvs_payload(namespace, ops=ops))


def kvs_ls(key: str = ".", *, namespace: str | None = None) -> Exchange[dict[str, str]]:
    """The KVS directory ``key``'s entries: each name and its kind (``dir``, ...);
    RPCError ENOTDIR when ``key`` is a value."""
    reply = yield from ask("kvs.ls", kvs_payload(namespace, key=key))
    entries: dict[str, str] = reply["entries"]
    return entries


def kvs_readlink(key: str, *, namespace: str | None = None) -> Exchange[dict[str, str]]:
    """The symbolic link at ``key``: ``{target, namespace?}``; RPCError EINVAL for
    anything else."""
    link: dict[str, str] = yield from ask("kvs.readlink", kvs_payload(namespace, key=key))
    return link


def kvs_commit(ops: list[list[Any]], *, namespace: str | None = None) -> Exchange[None]:
    """Apply ``ops`` (``[op, key, value]``: put, append, unlink, mkdir) in one atomic commit."""
    yield from ask("kvs.commit", kvs_payload(namespace, ops=ops))


def kvs_namespaces() -> Exchange[list[dict[str, Any]]]:
    """The KVS namespaces, ``{name, owner, prefix}`` each, ``primary`` first."""
    namespaces: list[dict[str, Any]] = (yield from ask("kvs.namespace-list", {}))["namespaces"]
    return namespaces


def kvs_namespace_create(name: str, owner: int) -> Exchange[None]:
    """Create the namespace ``name``, owned by the user ``owner`` (the KVS picks its prefix)."""
    yield from ask("kvs.namespace-create", {"name": name, "owner": owner})


def kvs_namespace_remove(name: str) -> Exchange[None]:
    """Remove the namespace ``name`` (its keys stay, read-only)."""
    yield from ask("kvs.namespace-remove", {"name": name})


def kvs_dropcache() -> Exchange[None]:
    """Have the KVS give back the memory of its page cache."""
    yield from ask("kvs.dropcache", {})


def kvs_version(*, namespace: str | None = None) -> Exchange[int]:
    """The KVS root's version: the commits stored (flux's root sequence number)."""
    root = yield from ask("kvs.getroot", kvs_payload(namespace))
    return int(root["rootseq"])


def kvs_wait_version(version: int, *, namespace: str | None = None) -> Exchange[None]:
    """Return once the KVS root's version is at least ``version``."""
    yield from ask("kvs.wait-version", kvs_payload(namespace, rootseq=version), wait=True)
