"""``pflux kvs get|put|ls|eventlog get``: the instance's KVS from the command line.

Options and output follow ``flux kvs``: ``-N`` names a namespace (by default
``$PFLUX_KVS_NAMESPACE``, which a job's tasks have set to the job's guest
namespace as flux-core sets ``FLUX_KVS_NAMESPACE``, else ``primary``); ``get``
prints each value on its own line (``-l`` with ``key=``), ``-w`` follows changes
(``-A`` only appends, ``-W`` waits for the key to appear, ``-c`` stops after so
many); ``ls`` prints names in columns that fit the terminal (``-1`` one per
line, ``-F`` marks directories with ``.``, ``-R`` recurses, ``-d`` lists a
directory itself); ``eventlog get`` prints an RFC 18 eventlog in the text form
of ``flux job eventlog`` (``-u`` or ``--format=json`` for the raw lines).
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from pflux.cli import base
from pflux.errors import PfluxError

if TYPE_CHECKING:
    from pflux.api import Client

ROOT = "."
NAMESPACE_ENV = "PFLUX_KVS_NAMESPACE"


def main(argv: list[str]) -> int:
    """Entry point of ``pflux kvs``."""
    args = _parser().parse_args(argv)
    return base.run("kvs", lambda: args.func(args))


def _parser() -> argparse.ArgumentParser:
    parser = base.parser("kvs", "Read and write the instance's key-value store.")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    common.add_argument(
        "-N", "--namespace", help="KVS namespace (default: $PFLUX_KVS_NAMESPACE, else primary)"
    )
    sub = parser.add_subparsers(metavar="COMMAND", required=True)

    get = sub.add_parser("get", parents=[common], help="print the values of keys")
    get.add_argument("-l", "--label", action="store_true", help="print KEY= before each value")
    get.add_argument("-W", "--waitcreate", action="store_true", help="wait for KEY to exist")
    get.add_argument("-w", "--watch", action="store_true", help="print each new value")
    get.add_argument("-A", "--append", action="store_true", help="with -w, only appended text")
    get.add_argument("-c", "--count", type=_count, default=0, help="with -w, stop after COUNT")
    get.add_argument("keys", nargs="+", metavar="KEY")
    get.set_defaults(func=_get)

    put = sub.add_parser("put", parents=[common], help="store values, in one commit")
    put.add_argument("-A", "--append", action="store_true", help="append instead of replacing")
    put.add_argument("pairs", nargs="+", metavar="KEY=VALUE")
    put.set_defaults(func=_put)

    ls = sub.add_parser("ls", parents=[common], help="list directories")
    ls.add_argument("-R", "--recursive", action="store_true", help="list directories recursively")
    ls.add_argument(
        "-d", "--directory", action="store_true", help="list a directory, not its content"
    )
    ls.add_argument("-F", "--classify", action="store_true", help="append . to directories")
    ls.add_argument("-w", "--width", type=_count, help="output width in columns (0: no limit)")
    ls.add_argument("-1", dest="one", action="store_true", help="one entry per line")
    ls.add_argument("keys", nargs="*", metavar="KEY")
    ls.set_defaults(func=_ls)

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
    evget.set_defaults(func=_eventlog_get)
    return parser


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative")
    return value


def _client(args: argparse.Namespace) -> Client:
    from pflux.api import Client

    return Client(args.uri)


def _namespace(args: argparse.Namespace) -> str | None:
    return args.namespace or os.environ.get(NAMESPACE_ENV) or None


# --- get and put ---------------------------------------------------------------------------


def _get(args: argparse.Namespace) -> None:
    write = sys.stdout.write

    def show(key: str, value: str) -> int:
        label = f"{key}=" if args.label else ""
        if value:
            write(f"{label}{value}\n")
        elif label:
            write(f"{label}\n")
        sys.stdout.flush()
        return 1

    with _client(args) as client:
        if args.watch:
            _follow(client, args, args.keys, args.append, show, limit=args.count)
        elif args.waitcreate:
            _follow(client, args, args.keys, False, show, once=True)
        else:
            for key in args.keys:
                show(key, client.kvs_get(key, namespace=_namespace(args)))


def _put(args: argparse.Namespace) -> None:
    pairs = []
    for pair in args.pairs:
        key, eq, value = pair.partition("=")
        if not eq:
            raise PfluxError("put: you must specify a value as key=value")
        pairs.append((key, value))
    with _client(args) as client:
        client.kvs_put(pairs, append=args.append, namespace=_namespace(args))


def _follow(
    client: Client,
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
    watch = client.kvs_watch(
        keys, append=append, waitcreate=args.waitcreate, namespace=_namespace(args)
    )
    for index, value in watch:
        shown[index] += show(keys[index], value)
        if once or (limit and shown[index] >= limit):
            watch.stop(index)


# --- ls ------------------------------------------------------------------------------------------


def _width(args: argparse.Namespace) -> int:
    """flux's rule: -1, else -w, else the terminal's width, else $COLUMNS, else 80."""
    if args.one:
        return 1
    if args.width is not None:
        return int(args.width)
    if sys.stdout.isatty():
        return os.get_terminal_size(sys.stdout.fileno()).columns
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() else 80


def _columns(names: list[str], sizing: list[str], width: int) -> str:
    """``names`` in columns as wide as the longest of ``sizing`` plus 4, as flux lays them out."""
    col_width = max(map(len, sizing), default=0) + 4
    out: list[str] = []
    col = last = 0
    for name in names:
        if width and col + col_width > width and col > 0:
            out.append("\n")
            col = 0
        elif last:
            out.append(" " * (col_width - last))
        out.append(name)
        last = len(name)
        col += col_width
    if col:
        out.append("\n")
    return "".join(out)


def _ls(args: argparse.Namespace) -> int:
    from pflux.errors import RPCError

    singles: list[str] = []
    dirs: list[tuple[str, dict[str, str]]] = []
    failed = False
    with _client(args) as client:
        lister = _Lister(args, client)
        for given in args.keys or [ROOT]:
            key, must_be_dir = given, False
            while len(key) > 1 and key.endswith("."):
                key, must_be_dir = key[:-1], True
            try:
                listing = lister.entries(key)
            except RPCError as exc:
                if exc.errnum != errno.ENOTDIR or must_be_dir:
                    # like flux: report, go on with the other keys, fail at the end
                    sys.stderr.write(f"{base.PROG}-kvs: ERROR: {exc}\n")
                    failed = True
                else:
                    singles.append(key)
                continue
            if args.directory:
                singles.append(key + "." if args.classify else key)
            else:
                dirs.append((key, listing))
        singles.sort()
        if singles:
            sys.stdout.write(_columns(singles, singles, lister.width))
        label = bool(singles) or args.recursive or len(dirs) > 1
        vspace = bool(singles)
        for key, listing in sorted(dirs):
            lister.show(key, listing, label, vspace)
            vspace = True
    return 1 if failed else 0


class _Lister:
    """Lists directories as ``flux kvs ls`` does, recursing with ``-R``."""

    def __init__(self, args: argparse.Namespace, client: Client) -> None:
        self.args = args
        self.client = client
        self.width = _width(args)

    def entries(self, key: str) -> dict[str, str]:
        return self.client.kvs_ls(key, namespace=_namespace(self.args))

    def show(self, key: str, listing: dict[str, str], label: bool, vspace: bool) -> None:
        out = sys.stdout.write
        if label:
            out(f"{chr(10) if vspace else ''}{key}:\n")
        classify = self.args.classify
        names = [n + "." if classify and kind == "dir" else n for n, kind in listing.items()]
        out(_columns(names, list(listing), self.width))
        if self.args.recursive:
            for name, kind in listing.items():
                if kind == "dir":
                    child = name if key == ROOT else f"{key}.{name}"
                    self.show(child, self.entries(child), True, True)


# --- eventlog get -------------------------------------------------------------------------


def _eventlog_get(args: argparse.Namespace) -> None:
    from pflux.spec.eventlog import EventlogReader, TextFormatter

    raw = args.unformatted or args.format == "json"
    formatter = TextFormatter("human" if args.human else "raw")
    reader = EventlogReader()
    write = sys.stdout.write
    shown = 0

    def show(key: str, text: str) -> int:
        nonlocal shown
        before = shown
        for event in reader.feed(text):
            if args.count and shown >= args.count:
                break
            write(event.to_line() if raw else formatter.format(event) + "\n")
            shown += 1
        sys.stdout.flush()
        return shown - before

    with _client(args) as client:
        if args.watch:
            _follow(client, args, [args.key], True, show, limit=args.count)
        elif args.waitcreate:
            _follow(client, args, [args.key], False, show, once=True)
        else:
            show(args.key, client.kvs_get(args.key, namespace=_namespace(args)))
    reader.finish()
