"""``pflux getattr NAME``, ``pflux setattr NAME VALUE`` and ``pflux lsattr [-v]``:
the instance's attributes (flux's).

Most attributes are fixed when the instance starts; ``setattr`` changes those the
broker's ``attr.set`` allows (the log's) and prints the broker's refusal otherwise.
"""

from __future__ import annotations

import argparse

from pflux.cli import base


def getattr_parser() -> argparse.ArgumentParser:
    p = base.parser("getattr", "Print the value of an instance attribute.")
    p.add_argument("name", metavar="NAME")
    p.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    return p


def setattr_parser() -> argparse.ArgumentParser:
    p = base.parser("setattr", "Set an instance attribute.")
    p.add_argument("name", metavar="NAME")
    p.add_argument("value", metavar="VALUE")
    p.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    return p


def lsattr_parser() -> argparse.ArgumentParser:
    p = base.parser("lsattr", "List the instance's attributes.")
    p.add_argument("-v", "--values", action="store_true", help="list values with attributes")
    p.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    return p


def _attrs(uri: str | None) -> dict[str, str]:
    from pflux import Client

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


def setattr_main(argv: list[str]) -> int:
    args = setattr_parser().parse_args(argv)

    def body() -> None:
        from pflux import Client

        with Client(args.uri) as client:
            client.set_attr(args.name, args.value)

    return base.run("setattr", body)


def lsattr_main(argv: list[str]) -> int:
    args = lsattr_parser().parse_args(argv)

    def body() -> None:
        for name, value in sorted(_attrs(args.uri).items()):
            print(f"{name:<40}{value}" if args.values else name)

    return base.run("lsattr", body)
