"""``kvs unlink|mkdir|link|copy|move|dropcache|namespace``: changing the KVS as flux-kvs does.

Each command's keys are checked first and written in one commit, so a refused
key leaves everything as it was. ``copy`` reads the source (a value, or every
value below a directory) and writes it in one commit; ``move`` unlinks the
source in that same commit, or, between two namespaces, in a second one after it.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys

from pflux.cli.kvs_common import (
    Failure,
    client,
    commit_failure,
    namespace,
    normalize,
)
from pflux.errors import RPCError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from pflux import Client

LIST_HEADER = "NAMESPACE                                 OWNER      FLAGS\n"


def _commit(kvs: Client, ops: list[list[Any]], ns: str | None, what: str) -> None:
    try:
        kvs.kvs_commit(ops, namespace=ns)
    except RPCError as exc:
        raise commit_failure(what, exc) from None


# --- unlink and mkdir ---------------------------------------------------------------------


def unlink(args: argparse.Namespace) -> None:
    with client(args) as kvs:
        ns = namespace(args)
        ops: list[list[Any]] = []
        for given in args.keys:
            key = normalize(given)
            if _unlinkable(kvs, ns, key, args):
                ops.append(["unlink", key, None])
        _commit(kvs, ops, ns, "flux_kvs_commit")


def _unlinkable(kvs: Client, ns: str | None, key: str, args: argparse.Namespace) -> bool:
    """flux's checks: the key exists (``-f``: or not, then False), and a directory is
    empty unless ``-R``."""
    try:
        kvs.kvs_get(key, namespace=ns)
    except RPCError as exc:
        if exc.errnum == errno.ENOENT and args.force:
            return False
        if exc.errnum != errno.EISDIR:
            raise _cannot_unlink(key, exc.errnum) from None
        if not args.recursive and kvs.kvs_ls(key, namespace=ns):
            raise _cannot_unlink(key, errno.ENOTEMPTY) from None
    return True


def _cannot_unlink(key: str, errnum: int) -> Failure:
    return Failure(f"cannot unlink '{key}': {os.strerror(errnum)}")


def mkdir(args: argparse.Namespace) -> None:
    with client(args) as kvs:
        ops: list[list[Any]] = [["mkdir", normalize(key), None] for key in args.keys]
        _commit(kvs, ops, namespace(args), "kvs_commit")


def link(args: argparse.Namespace) -> None:
    target: dict[str, str] = {"target": normalize(args.target)}
    if args.target_namespace:
        target["namespace"] = args.target_namespace
    with client(args) as kvs:
        ops: list[list[Any]] = [["symlink", normalize(args.linkname), target]]
        _commit(kvs, ops, namespace(args), "flux_kvs_commit")


# --- copy and move -------------------------------------------------------------------------------


def copy(args: argparse.Namespace) -> None:
    _copy(args, move=False)


def move(args: argparse.Namespace) -> None:
    _copy(args, move=True)


def _copy(args: argparse.Namespace, *, move: bool) -> None:
    what = "flux_kvs_move" if move else "flux_kvs_copy"
    source, dest = normalize(args.source), normalize(args.destination)
    src_ns, dst_ns = namespace(args, args.src_namespace), namespace(args, args.dst_namespace)
    with client(args) as kvs:
        try:
            ops = _copy_ops(kvs, src_ns, source, dest)
        except RPCError as exc:
            raise Failure(f"{what}: {os.strerror(exc.errnum)}") from None
        unlink_op = ["unlink", source, None]
        if move and src_ns == dst_ns:
            _commit(kvs, [*ops, unlink_op], dst_ns, what)  # one atomic commit
            return
        _commit(kvs, ops, dst_ns, what)
        if move:
            _commit(kvs, [unlink_op], src_ns, what)


def _copy_ops(kvs: Client, ns: str | None, source: str, dest: str) -> list[list[Any]]:
    """The ops that make ``dest`` what ``source`` is now: its value, or its directory."""
    try:
        return [["put", dest, kvs.kvs_get(source, namespace=ns)]]
    except RPCError as exc:
        if exc.errnum != errno.EISDIR:
            raise
    prefix = "" if source == "." else source + "."
    ops: list[list[Any]] = [["mkdir", dest, None]]
    for key, value in kvs.kvs_walk(source, namespace=ns):
        ops.append(["put", f"{dest}.{key[len(prefix) :]}", value])
    return ops


# --- dropcache and namespaces ----------------------------------------------------------------


def dropcache(args: argparse.Namespace) -> None:
    with client(args) as kvs:
        kvs.kvs_dropcache()


def namespace_create(args: argparse.Namespace) -> None:
    owner = os.getuid() if args.owner is None else _owner(args.owner)
    with client(args) as kvs:
        for name in args.names:
            try:
                kvs.kvs_namespace_create(name, owner)
            except RPCError as exc:
                raise Failure(f"{name}: {exc.errstr}") from None


def _owner(text: str) -> int:
    if not text.isdigit() or int(text) > 2**32 - 1:
        raise Failure("--owner requires an unsigned integer argument")
    return int(text)


def namespace_remove(args: argparse.Namespace) -> None:
    with client(args) as kvs:
        for name in args.names:
            try:
                kvs.kvs_namespace_remove(name)
            except RPCError as exc:
                raise Failure(f"{name}: {exc.errstr}") from None


def namespace_list(args: argparse.Namespace) -> None:
    with client(args) as kvs:
        namespaces = kvs.kvs_namespaces()
    out = [LIST_HEADER]
    out += [f"{ns['name']:<36} {ns['owner']:>10} 0x{0:08X}\n" for ns in namespaces]
    sys.stdout.write("".join(out))
