"""``pflux shutdown``: stop the instance (pending jobs stay in its state directory)."""

from __future__ import annotations

from pflux.cli import base


def main(argv: list[str]) -> int:
    parser = base.parser("shutdown", "Stop the instance.")
    parser.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    args = parser.parse_args(argv)

    def body() -> None:
        from pflux.client.handle import Handle

        with Handle(args.uri) as handle:
            handle.call("broker.shutdown", {})

    return base.run("shutdown", body)
