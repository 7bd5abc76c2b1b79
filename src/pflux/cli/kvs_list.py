"""``kvs ls``, ``dir`` and ``readlink``: the KVS read as flux-core's ``flux-kvs`` reads it.

``ls`` prints names in columns that fit the terminal (``-1`` one per line,
``-F`` marks directories with ``.`` and links with ``@``, ``-R`` recurses, ``-d``
lists a directory itself); ``dir`` prints each ``key = value`` below a
directory, cut to the terminal's width (``-w 0``: not cut), directories as
``key.`` (``-R`` descends into them, ``-d`` leaves the values out), links as
``key -> target``; ``readlink`` prints links' targets (``NAMESPACE::KEY`` for
one into another namespace).
"""

from __future__ import annotations

import argparse
import errno
import os
import sys

from pflux.cli import base
from pflux.cli.kvs_common import ROOT, client, lookup_failure, namespace, normalize
from pflux.errors import RPCError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from pflux import Client

ELLIPSIS = "..."


def width(args: argparse.Namespace) -> int:
    """flux's rule: -1, else -w, else the terminal's width, else $COLUMNS, else 80."""
    if getattr(args, "one", False):
        return 1
    if args.width is not None:
        return int(args.width)
    if sys.stdout.isatty():
        return os.get_terminal_size(sys.stdout.fileno()).columns
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() else 80


def columns(names: list[str], sizing: list[str], win_width: int) -> str:
    """``names`` in columns as wide as the longest of ``sizing`` plus 4, as flux lays them out."""
    col_width = max(map(len, sizing), default=0) + 4
    out: list[str] = []
    col = last = 0
    for name in names:
        if win_width and col + col_width > win_width and col > 0:
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


# --- ls ------------------------------------------------------------------------------------------


def ls(args: argparse.Namespace) -> int:
    singles: list[str] = []
    dirs: list[tuple[str, dict[str, str]]] = []
    failed = False
    with client(args) as kvs:
        lister = _Lister(args, kvs)
        for given in args.keys or [ROOT]:
            key, must_be_dir = given, False
            while len(key) > 1 and key.endswith("."):
                key, must_be_dir = key[:-1], True
            key = normalize(key)
            try:
                listing = lister.entries(key)
            except RPCError as exc:
                if exc.errnum != errno.ENOTDIR or must_be_dir:
                    # like flux: report, go on with the other keys, fail at the end
                    _report(key, exc)
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
            sys.stdout.write(columns(singles, singles, lister.width))
        label = bool(singles) or args.recursive or len(dirs) > 1
        vspace = bool(singles)
        for key, listing in sorted(dirs):
            lister.show(key, listing, label, vspace)
            vspace = True
    return 1 if failed else 0


def _report(key: str, exc: RPCError) -> None:
    """One key that cannot be listed: flux's ``KEY: strerror``, or pflux's error line."""
    if base.PROG == "flux":
        sys.stderr.write(f"{key}: {os.strerror(exc.errnum)}\n")
    else:
        sys.stderr.write(f"{base.PROG}-kvs: ERROR: {exc}\n")


class _Lister:
    """Lists directories as ``flux kvs ls`` does, recursing with ``-R``."""

    def __init__(self, args: argparse.Namespace, kvs: Client) -> None:
        self.args = args
        self.kvs = kvs
        self.width = width(args)

    def entries(self, key: str) -> dict[str, str]:
        return self.kvs.kvs_ls(key, namespace=namespace(self.args))

    def show(self, key: str, listing: dict[str, str], label: bool, vspace: bool) -> None:
        out = sys.stdout.write
        if label:
            out(f"{chr(10) if vspace else ''}{key}:\n")
        mark = {"dir": ".", "link": "@"} if self.args.classify else {}
        names = [name + mark.get(kind, "") for name, kind in listing.items()]
        out(columns(names, list(listing), self.width))
        if self.args.recursive:
            for name, kind in listing.items():
                if kind == "dir":
                    child = name if key == ROOT else f"{key}.{name}"
                    self.show(child, self.entries(child), True, True)


# --- dir -----------------------------------------------------------------------------------------


def kv_line(key: str, value: str, maxcol: int) -> str:
    """``key = value`` as flux's ``dir`` prints it: cut to ``maxcol`` columns (0, or 3 or
    fewer: not cut) with ``...`` at the first line break or character that is not
    printable ASCII, or where it was cut."""
    line = f"{key} = {value}"
    if not maxcol or maxcol <= 3:
        return line
    cut = len(line) > maxcol - 3
    line = line[: maxcol - 3]
    newline = line.find("\n")
    if newline >= 0:
        cut = cut or newline + 1 < len(line)
        line = line[:newline]
    for i, char in enumerate(line):
        if not " " <= char <= "~":
            return line[:i] + ELLIPSIS
    return line + ELLIPSIS if cut else line


def dir_(args: argparse.Namespace) -> None:
    key = normalize(args.key)
    maxcol = width(args)
    with client(args) as kvs:
        ns = namespace(args)
        try:
            listing = kvs.kvs_ls(key, namespace=ns)
        except RPCError as exc:
            raise lookup_failure(key, exc) from None
        _Dumper(kvs, ns, args, maxcol).dump(key, listing)


class _Dumper:
    """Prints a directory as ``flux kvs dir`` does, descending with ``-R``."""

    def __init__(self, kvs: Client, ns: str | None, args: argparse.Namespace, maxcol: int):
        self.kvs = kvs
        self.ns = ns
        self.args = args
        self.maxcol = maxcol

    def dump(self, key: str, listing: dict[str, str]) -> None:
        kvs, ns, args, maxcol = self.kvs, self.ns, self.args, self.maxcol
        out = sys.stdout.write
        for name, kind in listing.items():
            child = name if key == ROOT else f"{key}.{name}"
            if kind == "link":
                out(f"{child} -> {_link_text(kvs.kvs_readlink(child, namespace=ns))}\n")
            elif kind == "dir":
                below = kvs.kvs_ls(child, namespace=ns) if args.recursive else {}
                if below:
                    self.dump(child, below)
                else:
                    out(f"{child}.\n")
            elif args.directory:
                out(f"{child}\n")
            else:
                try:
                    value = kvs.kvs_get(child, namespace=ns)
                except RPCError as exc:
                    raise lookup_failure(child, exc) from None
                out(kv_line(child, value, maxcol) + "\n")


# --- readlink ------------------------------------------------------------------------------------


def _link_text(link: dict[str, str]) -> str:
    """A link's target as flux prints it: ``NAMESPACE::KEY``, or ``KEY`` in its own."""
    return f"{link['namespace']}::{link['target']}" if "namespace" in link else link["target"]


def readlink(args: argparse.Namespace) -> None:
    with client(args) as kvs:
        for given in args.keys:
            key = normalize(given)
            try:
                link = kvs.kvs_readlink(key, namespace=namespace(args))
            except RPCError as exc:
                raise lookup_failure(key, exc) from None
            if args.namespace_only and "namespace" in link:
                sys.stdout.write(f"{link['namespace']}\n")
            elif args.key_only:
                sys.stdout.write(f"{link['target']}\n")
            else:
                sys.stdout.write(f"{_link_text(link)}\n")
