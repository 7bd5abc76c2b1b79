"""KVS keys: what a valid key is, how namespaces map onto the store, and job keys.

A key is a dotted path (``job.0000.0004.b200.0000.eventlog``) whose components
are non-empty and hold no whitespace or control characters; ``.`` alone is the
root directory. Every namespace is a prefix of the one primary keyspace, so
mapping a key is string concatenation, done here and nowhere else.
"""

from __future__ import annotations

import errno
import re

import orjson

from pflux.broker.message import RPCError

ROOT = "."
PRIMARY = "primary"

# One test for the common case; the slow path below only runs to explain a failure.
_COMPONENT = r"[^\s.\x00-\x1f\x7f]+"
#: a valid key, for callers that check many (``KEY_PATTERN.fullmatch(key)``)
KEY_PATTERN = re.compile(rf"{_COMPONENT}(?:\.{_COMPONENT})*")
_VALID_COMPONENT = re.compile(_COMPONENT)
_VALID_NAME = re.compile(r"[^\s\x00-\x1f\x7f]+")
_BAD_CHAR = re.compile(r"[\s\x00-\x1f\x7f]")
_JOB_KEY = re.compile(r"job\.([0-9a-f]{4})\.([0-9a-f]{4})\.([0-9a-f]{4})\.([0-9a-f]{4})(?:\.(.+))?")


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


def job_key(jobid: int, *path: str) -> str:
    """``job.<kvs encoding of the FLUID>[.path...]``: where RFC 16 keeps a job's data.

    >>> job_key(6787342413402046, "eventlog")
    'job.0018.1d0d.4d85.0fbe.eventlog'
    """
    if type(jobid) is not int or not 0 <= jobid < 1 << 64:
        from pflux.spec.fluid import JobID

        JobID(jobid)  # raises the JobIDError that says why
    h = f"{jobid:016x}"  # the kvs encoding, written out: this is on every job's hot path
    base = f"job.{h[:4]}.{h[4:8]}.{h[8:12]}.{h[12:]}"
    return ".".join((base, *path)) if path else base


def job_id_from_key(key: str, *path: str) -> int | None:
    """The job id of ``job_key(id, *path)``, or None if ``key`` is not such a key.

    >>> job_id_from_key("job.0018.1d0d.4d85.0fbe.eventlog", "eventlog")
    6787342413402046
    """
    m = _JOB_KEY.fullmatch(key)
    if m is None or (m[5] or "") != ".".join(path):
        return None
    return int(m[1] + m[2] + m[3] + m[4], 16)
