"""``flux config get [NAME]``: the instance's configuration, as flux-config(1) prints it.

A value prints as JSON, a string without its quotes (for shell scripts). ``reload``,
``load`` and ``builtin`` are refused: pflux reads its configuration when it starts.
"""

from __future__ import annotations

import argparse
import json
import sys

from pflux.cli import base

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

TYPES = (
    "string",
    "integer",
    "real",
    "boolean",
    "object",
    "array",
    "fsd",
    "fsd-integer",
    "fsd-real",
)


def parser() -> argparse.ArgumentParser:
    p = base.parser("config", "Query the instance's configuration.")
    sub = p.add_subparsers(dest="command", required=True)
    get = sub.add_parser("get", help="print a configuration value (all of it: no NAME)")
    get.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    get.add_argument("-d", "--default", metavar="VALUE", help="print VALUE if NAME is not set")
    get.add_argument(
        "-q", "--quiet", action="store_true", help="no error message if NAME is not set"
    )
    get.add_argument("-t", "--type", choices=TYPES, help="require a value of this type")
    get.add_argument("name", nargs="?", help="a period-delimited TOML key")
    for name in ("reload", "load", "builtin"):
        refused = sub.add_parser(name, help="not supported: the configuration is read at start")
        refused.add_argument("args", nargs=argparse.REMAINDER)
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    return base.run("config", lambda: _config(args))


_NOT_SET = object()


def _lookup(config: Any, name: str | None) -> Any:
    if name is None:
        return config
    value = config
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            return _NOT_SET
        value = value[part]
    return value


def _config(args: argparse.Namespace) -> int:
    from pflux import Client
    from pflux.errors import PfluxError

    if args.command != "get":
        raise PfluxError(
            f"{args.command}: not supported: pflux reads its configuration when the"
            " instance starts (pflux start --config)"
        )
    with Client(args.uri) as client:
        config = client.config()
    value = _lookup(config, args.name)
    if value is _NOT_SET:
        if args.default is not None:
            sys.stdout.write(f"{args.default}\n")
            return 0
        if args.quiet:
            return 1
        raise PfluxError(f"{args.name} is not set")
    sys.stdout.write(_typed(args.name or "config", value, args.type) + "\n")
    return 0


def _typed(name: str, value: Any, kind: str | None) -> str:
    """``value`` as printed, checked against ``kind`` (--type)."""
    from pflux.errors import PfluxError
    from pflux.spec import duration

    checks = {
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "real": lambda v: isinstance(v, float),
        "boolean": lambda v: isinstance(v, bool),
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
    }
    if kind is not None and kind.startswith("fsd"):
        if not isinstance(value, str):
            raise PfluxError(f"{name}: value is not a string (a duration is required)")
        try:
            seconds = duration.parse(value)
        except ValueError as exc:
            raise PfluxError(f"{name}: {exc}") from None
        if kind == "fsd-integer":
            return str(int(seconds))
        if kind == "fsd-real":
            return repr(float(seconds))
        return duration.format(seconds)
    if kind is not None and not checks[kind](value):
        raise PfluxError(f"{name}: value is not of type {kind}")
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2 if isinstance(value, (dict, list)) else None)
