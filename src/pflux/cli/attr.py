"""``pflux getattr NAME`` and ``pflux lsattr [-v]``: the instance's attributes (flux's).

Attributes are read-only here: an instance's are fixed when it starts.
"""

from __future__ import annotations

import argparse

from pflux.cli import base


def getattr_parser() -> argparse.ArgumentParser:
    p = base.parser("getattr", "Print the value of an instance attribute.")
    p.add_argument("name", metavar="NAME")
    p.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    return p


def lsattr_parser() -> argparse.ArgumentParser:
    p = base.parser("lsattr", "List the instance's attributes.")
    p.add_argument("-v", "--values", action="store_true", help="list values with attributes")
    p.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    return p


def _attrs(uri: str | None) -> dict[str, str]:
    from pflux.api import Client

    with Client(uri) as client:
        return client.attrs()


def getattr_main(argv: list[str]) -> int:
    args = getattr_parser().parse_args(argv)

    def body() -> None:
        from pflux.errors import PfluxError

        attrs = _attrs(args.uri)
        if args.name not in attrs:
            raise PfluxError(f"{args.name}: No such file or directory")
        print(attrs[args.name])

    return base.run("getattr", body)


def lsattr_main(argv: list[str]) -> int:
    args = lsattr_parser().parse_args(argv)

    def body() -> None:
        for name, value in sorted(_attrs(args.uri).items()):
            print(f"{name:<40}{value}" if args.values else name)

    return base.run("lsattr", body)
