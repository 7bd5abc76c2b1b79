"""``pflux kvs``: the instance's KVS from the command line, as flux-core's ``flux-kvs(1)``.

Sub-commands, options and output follow ``flux kvs``: ``-N`` names a namespace
(by default ``$PFLUX_KVS_NAMESPACE`` or ``$FLUX_KVS_NAMESPACE``, which a job's
tasks have set to the job's guest namespace, else ``primary``), and keys are
read as flux-core reads them (``a..b.`` is ``a.b``). ``get`` prints each value
on its own line (``-l`` with ``key=``, ``-r`` as it is, without a newline),
``-w`` follows changes (``-A`` only appends, ``-u`` only new values, ``-W``
waits for the key to appear, ``-c`` stops after so many); ``put`` stores
``key=value`` pairs in one commit (``-A`` appends, ``-r`` reads ``-`` from
stdin). ``version`` prints the root's version (the commits stored so far) and ``wait
VERSION`` waits until it is reached; ``get -t`` (RFC 11 tree objects) is refused: the
store holds rows, not a hash tree. The listing commands are in ``kvs_list``, the other
writes in ``kvs_write``, eventlogs in ``kvs_eventlog``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable

from pflux.cli import base
from pflux.cli.kvs_common import (
    Failure,
    as_flux,
    client,
    commit_failure,
    lookup_failure,
    namespace,
    normalize,
)
from pflux.errors import RPCError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from pflux import Client


def main(argv: list[str]) -> int:
    """Entry point of ``pflux kvs``."""
    args = _parser().parse_args(argv)
    module, name = args.func
    func: Callable[[argparse.Namespace], int | None] = getattr(
        importlib.import_module(f"pflux.cli.{module}"), name
    )
    return base.run("kvs", lambda: _as_flux_says(func, args))


def _as_flux_says(func: Callable[[argparse.Namespace], int | None], args: Any) -> int | None:
    """Run ``func``; as ``flux``, a failure is flux-kvs's one line, ``flux-kvs: WHY``."""
    if not as_flux():
        return func(args)
    try:
        return func(args)
    except Failure as exc:
        sys.stderr.write(f"flux-kvs: {exc}\n")
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = base.parser("kvs", "Read and write the instance's key-value store.")
    uri = argparse.ArgumentParser(add_help=False)
    uri.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    common = argparse.ArgumentParser(add_help=False, parents=[uri])
    common.add_argument(
        "-N", "--namespace", help="KVS namespace (default: $PFLUX_KVS_NAMESPACE, else primary)"
    )
    sub = parser.add_subparsers(metavar="COMMAND", required=True)

    get = sub.add_parser("get", parents=[common], help="print the values of keys")
    get.add_argument("-l", "--label", action="store_true", help="print KEY= before each value")
    get.add_argument("-r", "--raw", action="store_true", help="print values with no newline")
    get.add_argument("-W", "--waitcreate", action="store_true", help="wait for KEY to exist")
    get.add_argument("-w", "--watch", action="store_true", help="print each new value")
    get.add_argument("-A", "--append", action="store_true", help="with -w, only appended text")
    get.add_argument("-u", "--uniq", action="store_true", help="with -w, only changed values")
    get.add_argument("-c", "--count", type=_count, default=0, help="with -w, stop after COUNT")
    get.add_argument("-t", "--treeobj", action="store_true", help="(refused: no tree objects)")
    get.add_argument("keys", nargs="+", metavar="KEY")
    get.set_defaults(func=("kvs", "_get"))

    put = sub.add_parser("put", parents=[common], help="store values, in one commit")
    put.add_argument("-A", "--append", action="store_true", help="append instead of replacing")
    put.add_argument("-r", "--raw", action="store_true", help="a value '-' is read from stdin")
    put.add_argument(
        "-n", "--no-merge", action="store_true", help="a commit of its own (pflux's always is)"
    )
    put.add_argument("pairs", nargs="+", metavar="KEY=VALUE")
    put.set_defaults(func=("kvs", "_put"))

    version = sub.add_parser("version", parents=[common], help="print the KVS's version")
    version.set_defaults(func=("kvs", "_version"))
    wait = sub.add_parser("wait", parents=[common], help="wait until the KVS reaches VERSION")
    wait.add_argument("version", type=_count, metavar="VERSION")
    wait.set_defaults(func=("kvs", "_wait"))

    _listing_parsers(sub, common)
    _write_parsers(sub, common, uri)
    _namespace_parsers(sub, uri)
    _eventlog_parsers(sub, common)
    return parser


def _listing_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    ls = sub.add_parser("ls", parents=[common], help="list directories")
    ls.add_argument("-R", "--recursive", action="store_true", help="list directories recursively")
    ls.add_argument(
        "-d", "--directory", action="store_true", help="list a directory, not its content"
    )
    ls.add_argument(
        "-F", "--classify", action="store_true", help="append . to directories, @ to links"
    )
    ls.add_argument("-w", "--width", type=_count, help="output width in columns (0: no limit)")
    ls.add_argument("-1", dest="one", action="store_true", help="one entry per line")
    ls.add_argument("keys", nargs="*", metavar="KEY")
    ls.set_defaults(func=("kvs_list", "ls"))

    dir_ = sub.add_parser("dir", parents=[common], help="print every key = value below a key")
    dir_.add_argument("-R", "--recursive", action="store_true", help="descend into directories")
    dir_.add_argument("-d", "--directory", action="store_true", help="keys only, no values")
    dir_.add_argument("-w", "--width", type=_count, help="output width in columns (0: no limit)")
    dir_.add_argument("key", nargs="?", default=".", metavar="KEY")
    dir_.set_defaults(func=("kvs_list", "dir_"))


def _write_parsers(sub: Any, common: argparse.ArgumentParser, uri: argparse.ArgumentParser) -> None:
    unlink = sub.add_parser("unlink", parents=[common], help="remove keys, in one commit")
    unlink.add_argument("-R", "--recursive", action="store_true", help="remove directories too")
    unlink.add_argument("-f", "--force", action="store_true", help="ignore nonexistent keys")
    unlink.add_argument("keys", nargs="+", metavar="KEY")
    unlink.set_defaults(func=("kvs_write", "unlink"))

    link = sub.add_parser("link", parents=[common], help="make LINKNAME a symbolic link")
    link.add_argument("-T", "--target-namespace", help="the target's namespace")
    link.add_argument("target", metavar="TARGET")
    link.add_argument("linkname", metavar="LINKNAME")
    link.set_defaults(func=("kvs_write", "link"))

    readlink = sub.add_parser("readlink", parents=[common], help="print links' targets")
    only = readlink.add_mutually_exclusive_group()
    only.add_argument("-o", "--namespace-only", action="store_true", help="only the namespace")
    only.add_argument("-k", "--key-only", action="store_true", help="only the key")
    readlink.add_argument("keys", nargs="+", metavar="KEY")
    readlink.set_defaults(func=("kvs_list", "readlink"))

    mkdir = sub.add_parser("mkdir", parents=[common], help="make empty directories")
    mkdir.add_argument("keys", nargs="+", metavar="KEY")
    mkdir.set_defaults(func=("kvs_write", "mkdir"))

    for name, what in (("copy", "copy"), ("move", "move")):
        cmd = sub.add_parser(name, parents=[uri], help=f"{what} a key or directory")
        cmd.add_argument("-S", "--src-namespace", help="the source's namespace")
        cmd.add_argument("-D", "--dst-namespace", help="the destination's namespace")
        cmd.add_argument("source", metavar="SOURCE")
        cmd.add_argument("destination", metavar="DESTINATION")
        cmd.set_defaults(func=("kvs_write", name))

    dropcache = sub.add_parser("dropcache", parents=[uri], help="free the KVS's cache")
    dropcache.add_argument("-a", "--all", action="store_true", help="every rank's (pflux: one)")
    dropcache.set_defaults(func=("kvs_write", "dropcache"))


def _namespace_parsers(sub: Any, uri: argparse.ArgumentParser) -> None:
    ns = sub.add_parser("namespace", help="KVS namespaces").add_subparsers(
        metavar="COMMAND", required=True
    )
    create = ns.add_parser("create", parents=[uri], help="create namespaces")
    create.add_argument("-o", "--owner", help="the owner's userid (default: yours)")
    create.add_argument("names", nargs="+", metavar="NAME")
    create.set_defaults(func=("kvs_write", "namespace_create"))
    remove = ns.add_parser("remove", parents=[uri], help="remove namespaces")
    remove.add_argument("names", nargs="+", metavar="NAME")
    remove.set_defaults(func=("kvs_write", "namespace_remove"))
    listing = ns.add_parser("list", parents=[uri], help="list the namespaces")
    listing.set_defaults(func=("kvs_write", "namespace_list"))


def _eventlog_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    from pflux.cli.kvs_eventlog import duration, timestamp

    eventlog = sub.add_parser("eventlog", help="RFC 18 eventlogs").add_subparsers(
        metavar="COMMAND", required=True
    )
    evget = eventlog.add_parser("get", parents=[common], help="print an eventlog")
    evget.add_argument("-W", "--waitcreate", action="store_true", help="wait for KEY to exist")
    evget.add_argument("-w", "--watch", action="store_true", help="print events as they come")
    evget.add_argument("-c", "--count", type=_count, default=0, help="stop after COUNT events")
    evget.add_argument("-u", "--unformatted", action="store_true", help="the raw RFC 18 lines")
    evget.add_argument("-H", "--human", action="store_true", help="human-readable timestamps")
    evget.add_argument(
        "-f", "--format", choices=("text", "json"), default="text", help="json: the raw lines"
    )
    evget.add_argument("key", metavar="KEY")
    evget.set_defaults(func=("kvs_eventlog", "get"))

    append = eventlog.add_parser("append", parents=[common], help="append an event")
    append.add_argument("-t", "--timestamp", type=timestamp, help="seconds since the epoch")
    append.add_argument("key", metavar="KEY")
    append.add_argument("name", metavar="NAME")
    append.add_argument("context", nargs="*", metavar="CONTEXT", help="a JSON object")
    append.set_defaults(func=("kvs_eventlog", "append"))

    wait = eventlog.add_parser("wait-event", parents=[common], help="wait for an event")
    wait.add_argument(
        "-t", "--timeout", type=duration, metavar="DURATION", help="fail after DURATION"
    )
    wait.add_argument("-u", "--unformatted", action="store_true", help="the raw RFC 18 lines")
    wait.add_argument("-W", "--waitcreate", action="store_true", help="wait for KEY to exist")
    wait.add_argument("-q", "--quiet", action="store_true", help="do not print the event")
    wait.add_argument("-v", "--verbose", action="store_true", help="print the events before it")
    wait.add_argument("-H", "--human", action="store_true", help="human-readable timestamps")
    wait.add_argument("key", metavar="KEY")
    wait.add_argument("event", metavar="EVENT")
    wait.set_defaults(func=("kvs_eventlog", "wait_event"))


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative")
    return value


# --- get and put ---------------------------------------------------------------------------


def _version(args: argparse.Namespace) -> None:
    with client(args) as kvs:
        try:
            print(kvs.kvs_version(namespace=namespace(args)))
        except RPCError as exc:
            raise Failure(f"version: {exc.errstr}") from None


def _wait(args: argparse.Namespace) -> None:
    with client(args) as kvs:
        try:
            kvs.kvs_wait_version(args.version, namespace=namespace(args))
        except RPCError as exc:
            raise Failure(f"wait: {exc.errstr}") from None


def _get(args: argparse.Namespace) -> None:
    if args.treeobj:
        raise Failure(
            "get: --treeobj: not supported: pflux's KVS stores values as rows, not RFC 11"
            " tree objects (no blobrefs)"
        )
    write = sys.stdout.write
    last: dict[str, str] = {}

    def show(key: str, value: str) -> int:
        if args.uniq and last.get(key) == value:
            return 0
        last[key] = value
        label = f"{key}=" if args.label else ""
        if args.raw:
            write(f"{label}{value}")
        elif value:
            write(f"{label}{value}\n")
        elif label:
            write(f"{label}\n")
        sys.stdout.flush()
        return 1

    keys = [normalize(key) for key in args.keys]
    with client(args) as kvs:
        if args.watch:
            _follow(kvs, args, keys, args.append, show, limit=args.count)
        elif args.waitcreate:
            _follow(kvs, args, keys, False, show, once=True)
        else:
            for key in keys:
                try:
                    value = kvs.kvs_get(key, namespace=namespace(args))
                except RPCError as exc:
                    raise lookup_failure(key, exc) from None
                show(key, value)


def _put(args: argparse.Namespace) -> None:
    pairs = []
    stdin: str | None = None
    for pair in args.pairs:
        key, eq, value = pair.partition("=")
        if not eq:
            raise Failure("put: you must specify a value as key=value")
        if args.raw and value == "-":
            if stdin is None:
                stdin = _read_stdin()
            value = stdin
        pairs.append((normalize(key), value))
    with client(args) as kvs:
        try:
            kvs.kvs_put(pairs, append=args.append, namespace=namespace(args))
        except RPCError as exc:
            raise commit_failure("flux_kvs_commit", exc) from None


def _read_stdin() -> str:
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise Failure("stdin: pflux's KVS stores text, and this is not UTF-8") from None


def _follow(
    kvs: Client,
    args: argparse.Namespace,
    keys: list[str],
    append: bool,
    show: Callable[[str, str], int],
    *,
    limit: int = 0,
    once: bool = False,
) -> None:
    """Watch ``keys`` at once; ``show`` returns how many items a value counted for.

    Each watch ends when its key goes, after ``limit`` items (0: no limit), or
    with ``once`` after its first value.
    """
    shown = [0] * len(keys)
    watch = kvs.kvs_watch(
        keys, append=append, waitcreate=args.waitcreate, namespace=namespace(args)
    )
    try:
        for index, value in watch:
            shown[index] += show(keys[index], value)
            if once or (limit and shown[index] >= limit):
                watch.stop(index)
    except RPCError as exc:
        if len(keys) > 1:
            raise
        raise lookup_failure(keys[0], exc) from None
