"""``flux overlay status|lookup|parentof``: the brokers' tree as rank 0 sees it
(flux-overlay(1)'s subtree states and tree drawing).

A subtree is ``full`` (its root up and every subtree below full), ``partial``
(some below partial or offline), ``degraded`` (some below degraded or lost),
``lost`` (its root was up and is gone) or ``offline`` (its root never joined).
The tree is the k-ary one of ``tbon.fanout``.
"""

from __future__ import annotations

import argparse
import sys
import time

from pflux.cli import base

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from pflux import Client


def parser() -> argparse.ArgumentParser:
    p = base.parser("overlay", "Show the overlay network's status.")
    sub = p.add_subparsers(dest="command", required=True)
    status = sub.add_parser("status", help="each subtree's state")
    status.add_argument("-r", "--rank", type=int, default=0, help="the subtree's root (0)")
    status.add_argument(
        "-v", "--verbose", action="store_true", help="how long each has been in its state"
    )
    status.add_argument("--summary", action="store_true", help="the root subtree's state only")
    status.add_argument("--down", action="store_true", help="only subtrees not full")
    status.add_argument("--no-pretty", action="store_true", help="no tree drawing")
    status.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    lookup = sub.add_parser("lookup", help="ranks to hosts, or hosts to ranks")
    lookup.add_argument("target", help="an idset of ranks or a hostlist")
    lookup.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    parentof = sub.add_parser("parentof", help="a rank's parent")
    parentof.add_argument("rank", type=int)
    parentof.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    return base.run("overlay", lambda: _overlay(args))


class Tree:
    """The k-ary tree of ``size`` ranks and each rank's state."""

    def __init__(self, ranks: list[dict[str, Any]], fanout: int, hosts: list[str]) -> None:
        self.ranks = ranks
        self.fanout = max(1, fanout)
        self.hosts = hosts

    @property
    def size(self) -> int:
        return len(self.ranks)

    def children(self, rank: int) -> list[int]:
        first = rank * self.fanout + 1
        return list(range(first, min(first + self.fanout, self.size)))

    def parent(self, rank: int) -> int | None:
        return None if rank == 0 else (rank - 1) // self.fanout

    def status(self, rank: int) -> str:
        own = self.ranks[rank]["state"]
        if own != "up":
            return str(own)
        below = {self.status(child) for child in self.children(rank)}
        if below & {"degraded", "lost"}:
            return "degraded"
        if below & {"partial", "offline"}:
            return "partial"
        return "full"

    def host(self, rank: int) -> str:
        return self.hosts[rank] if rank < len(self.hosts) else "?"


def _tree(client: Client) -> Tree:
    from pflux.spec import hostlist

    attrs = client.attrs()
    hosts = hostlist.decode(attrs.get("hostlist", "")) if attrs.get("hostlist") else []
    return Tree(client.overlay_status(), int(attrs.get("tbon.fanout", 2)), list(hosts))


def _overlay(args: argparse.Namespace) -> None:
    from pflux import Client
    from pflux.errors import UsageError

    with Client(args.uri) as client:
        tree = _tree(client)
    if args.command == "parentof":
        if not 0 <= args.rank < tree.size:
            raise UsageError(f"rank {args.rank} is not in this instance (size {tree.size})")
        parent = tree.parent(args.rank)
        if parent is None:
            raise UsageError("rank 0 has no parent")
        sys.stdout.write(f"{parent}\n")
    elif args.command == "lookup":
        sys.stdout.write(_lookup(tree, args.target) + "\n")
    else:
        if not 0 <= args.rank < tree.size:
            raise UsageError(f"--rank: {args.rank} is not in this instance (size {tree.size})")
        _print(tree, args, args.rank, "", "")


def _lookup(tree: Tree, target: str) -> str:
    from pflux.errors import PfluxError
    from pflux.spec import hostlist
    from pflux.spec.idset import IdSet

    try:
        ranks = list(IdSet.decode(target))
    except ValueError:
        pass
    else:
        bad = [r for r in ranks if r >= tree.size]
        if bad:
            raise PfluxError(f"{target}: rank {bad[0]} is not in this instance")
        return hostlist.encode([tree.host(r) for r in ranks])
    found = []
    for host in hostlist.decode(target):
        matches = [r for r in range(tree.size) if tree.host(r) == host]
        if not matches:
            raise PfluxError(f"{target}: {host} is not a host of this instance")
        found.extend(matches)
    return IdSet.from_ids(found).encode()


def _print(tree: Tree, args: argparse.Namespace, rank: int, lead: str, indent: str) -> None:
    from pflux.spec import duration

    line = f"{rank} {tree.host(rank)}: {tree.status(rank)}"
    if args.verbose:
        since = time.time() - float(tree.ranks[rank]["since"])
        line += f" for {duration.format(max(0.0, since))}"
    sys.stdout.write(("" if args.no_pretty else lead) + line + "\n")
    if args.summary:
        return
    children = [c for c in tree.children(rank) if not args.down or tree.status(c) != "full"]
    for i, child in enumerate(children):
        last = i == len(children) - 1
        _print(
            tree,
            args,
            child,
            indent + ("└─ " if last else "├─ "),
            indent + ("   " if last else "│  "),
        )
