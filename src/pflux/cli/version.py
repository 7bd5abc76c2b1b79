"""``pflux version``: pflux's versions, and the instance's when inside one (flux-version(1))."""

from __future__ import annotations

import argparse

from pflux.cli import base


def parser() -> argparse.ArgumentParser:
    return base.parser("version", "Print pflux's version, and the instance's when in one.")


def main(argv: list[str]) -> int:
    parser().parse_args(argv)
    return base.run("version", _version)


def _version() -> None:
    import os
    import platform

    from pflux import __version__

    print(f"commands:    \t\t{__version__}")
    print(f"python:      \t\t{platform.python_version()}")
    uri = os.environ.get("PFLUX_URI") or os.environ.get("FLUX_URI")
    if uri:
        from pflux import Client

        with Client(uri) as client:
            attrs = client.attrs()
        print(f"broker:      \t\t{attrs.get('version', '')}")
        print(f"PFLUX_URI:   \t\t{uri}")
