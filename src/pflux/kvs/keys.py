"""KVS keys: checking them, and how namespaces map onto the store.

What a key is and where a job's keys live is RFC 16's scheme, in
``pflux.spec.kvs_keys``; here a bad key gets its EINVAL error, and ``.`` alone is
the root directory. Every namespace is a prefix of the one primary keyspace, so
mapping a key is string concatenation, done here and nowhere else.
"""

from __future__ import annotations

import errno
import re

import orjson

from pflux.errors import RPCError
from pflux.spec.kvs_keys import COMPONENT, KEY_PATTERN

ROOT = "."
PRIMARY = "primary"
NAMESPACES = "ns"  # the directory of the namespaces created without a prefix

# One test for the common case (KEY_PATTERN); the slow path below only runs to
# explain a failure.
_VALID_COMPONENT = re.compile(COMPONENT)
_VALID_NAME = re.compile(r"[^\s\x00-\x1f\x7f]+")
_BAD_CHAR = re.compile(r"[\s\x00-\x1f\x7f]")


class KVSError(RPCError):
    """A KVS request that cannot be done; ``errnum`` is the errno it is answered with."""


def quote(value: object) -> str:
    """``value`` as JSON, the way error messages show what they were given."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return repr(value)


def _key_error(key: str) -> KVSError:
    """The EINVAL error that explains why ``key`` is not a valid key."""
    if not key:
        return KVSError(errno.EINVAL, 'key "": empty')
    if key == ROOT:
        return KVSError(errno.EINVAL, 'key ".": the root directory is not allowed here')
    for component in key.split("."):
        if not component:
            return KVSError(errno.EINVAL, f"key {quote(key)}: empty path component")
        if _BAD_CHAR.search(component):
            return KVSError(
                errno.EINVAL,
                f"key {quote(key)}: path component {quote(component)} contains whitespace"
                " or a control character",
            )
    raise AssertionError(f"key {key!r} is valid")  # pragma: no cover - the regex agrees


def check_key(key: object, *, root: bool = False) -> str:
    """Return ``key`` if it is a valid key (``.`` too when ``root``), else raise KVSError."""
    if type(key) is not str:
        raise KVSError(errno.EINVAL, f"key must be a string, got {quote(key)}")
    if KEY_PATTERN.fullmatch(key) is None and not (root and key == ROOT):
        raise _key_error(key)
    return key


def check_component(name: str, what: str) -> str:
    """Return ``name`` if it is one key component, else raise KVSError naming ``what``."""
    if type(name) is not str or _VALID_COMPONENT.fullmatch(name) is None:
        raise KVSError(
            errno.EINVAL,
            f"{what} {quote(name)}: must be one path component, without whitespace",
        )
    return name


def check_name(name: object) -> str:
    """Return ``name`` if it is a valid namespace name, else raise KVSError."""
    if type(name) is not str or _VALID_NAME.fullmatch(name) is None:
        raise KVSError(
            errno.EINVAL,
            f"namespace {quote(name)}: a name must be non-empty text without whitespace",
        )
    return name


def default_prefix(name: str) -> str:
    """Where a namespace created without a prefix keeps its keys: ``ns.<name>``, one
    component, ``%`` and ``.`` escaped as ``%25`` and ``%2E`` so that two names never share
    it (a valid name has no whitespace or control character, nor has a component)."""
    return NAMESPACES + "." + name.replace("%", "%25").replace(".", "%2E")


def to_primary(prefix: str, key: str) -> str:
    """The primary key of ``key`` in a namespace rooted at ``prefix`` (ROOT for primary)."""
    if prefix == ROOT:
        return key
    return prefix if key == ROOT else f"{prefix}.{key}"


def from_primary(prefix: str, key: str) -> str:
    """The name within a namespace rooted at ``prefix`` of the primary ``key`` below it."""
    if prefix == ROOT:
        return key
    return key[len(prefix) + 1 :] if len(key) > len(prefix) else ROOT
