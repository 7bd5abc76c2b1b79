"""The KVS's requests (RFC 16's store: ``kvs.commit``, ``get``, ``watch``, ...), as types.

A key's syntax, who may use a namespace, and each op of a commit are the
KVS's own checks (``pflux.kvs.keys``, ``Store.apply``): a commit's ``ops`` are
checked here only to be an array, not copied, since job-ingest and the job
manager send thousands of them per commit.  ``namespace`` null or absent is
the primary namespace.
"""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta, Struct

from pflux.protocol.decode import decode, invalid

ROOT = "."  # the root directory's key (as pflux.kvs.keys has it)
MAX_USERID = 2**32 - 1  # a namespace's owner is a uid_t


class CommitRequest(Struct, frozen=True, omit_defaults=True):
    """``kvs.commit``: ``ops`` ([op, key, value], op put, append or unlink), applied atomically."""

    ops: Any  # an array, checked op by op by the store
    namespace: str | None = None

    def __post_init__(self) -> None:
        if type(self.ops) is not list:
            raise invalid("ops", "expected `array`")


class GetRequest(Struct, frozen=True, omit_defaults=True):
    """``kvs.get``: a key's value (as a streaming request, in pieces)."""

    key: str
    namespace: str | None = None


class GetReply(Struct, frozen=True):
    """``kvs.get``'s answer, or one piece of it for a streaming request."""

    value: str


def value_of(reply: Any) -> str:
    """The value in a ``kvs.get`` reply: the ``GetReply`` the KVS passes within the
    process, or its object from another (EPROTO if it is neither)."""
    return decode("kvs.get", reply, GetReply).value


class ReadlinkRequest(Struct, frozen=True):
    """``kvs.readlink``: a symbolic link's target."""

    key: str
    namespace: str | None = None


class LsRequest(Struct, frozen=True):
    """``kvs.ls``: a directory's entries."""

    key: str = ROOT
    namespace: str | None = None


class WalkRequest(Struct, frozen=True, omit_defaults=True):
    """``kvs.walk``: the values below ``key`` (with the last component ``suffix``; only the
    keys that sort after ``after``), in pages."""

    key: str = ROOT
    namespace: str | None = None
    suffix: str | None = None
    after: str | None = None


class WatchRequest(Struct, frozen=True, omit_defaults=True):
    """``kvs.watch``: a key's value, then each change (``append``: only the text appended)."""

    key: str
    namespace: str | None = None
    append: bool = False
    waitcreate: bool = False


class WatchCancelRequest(Struct, frozen=True):
    """``kvs.watch-cancel``: end the requester's watch sent with ``matchtag``."""

    matchtag: int


class NamespaceCreateRequest(Struct, frozen=True):
    """``kvs.namespace-create``: a namespace rooted at ``prefix`` (by default the key
    ``ns.<name>``, its dots and percent signs %-escaped), owned by ``owner``."""

    name: str
    owner: Annotated[int, Meta(ge=0, le=MAX_USERID)]
    prefix: str | None = None


class NamespaceRemoveRequest(Struct, frozen=True):
    """``kvs.namespace-remove``: its keys stay, read-only."""

    name: str


class GetrootRequest(Struct, frozen=True, omit_defaults=True):
    """``kvs.getroot``: the root's version (``rootseq``) as seen from ``namespace``."""

    namespace: str | None = None


class WaitVersionRequest(Struct, frozen=True, omit_defaults=True):
    """``kvs.wait-version``: answered once the root's version is ``rootseq`` or more."""

    rootseq: Annotated[int, Meta(ge=0)]
    namespace: str | None = None
