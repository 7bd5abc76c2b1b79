"""``pflux keygen [--name=NAME] [--meta=KEY=VAL,...] [PATH]``: an instance's CURVE certificate.

As flux-keygen(1): a new key pair, with metadata naming who made it, where and
when (``name`` defaults to this host's name; an earlier value of a key wins over
a later one, ``--name`` over ``--meta name=``), written to PATH with mode 0600.
Without PATH it warns that nothing is saved. Unlike flux keygen it never
overwrites a file: a certificate in use would be lost.
"""

from __future__ import annotations

import argparse

from pflux.cli import base


def parser() -> argparse.ArgumentParser:
    p = base.parser("keygen", "Generate a CURVE certificate for an instance's overlay network.")
    p.add_argument("-n", "--name", metavar="NAME", help="set certificate name (default: hostname)")
    p.add_argument(
        "--meta",
        metavar="KEYVALS",
        action="append",
        default=[],
        help="add comma-separated key=value metadata (may be repeated)",
    )
    p.add_argument("path", nargs="?", metavar="PATH", help="the file to write (mode 0600)")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    return base.run("keygen", lambda: _keygen(args.name, args.meta, args.path))


def metadata(name: str | None, metas: list[str], facts: dict[str, str]) -> dict[str, str]:
    """The certificate's metadata: ``--name``, then ``--meta`` entries, then ``facts``;
    a key keeps the first value it is given."""
    meta: dict[str, str] = {}
    if name is not None:
        meta["name"] = name
    for arg in metas:
        for item in arg.split(","):
            key, _, value = item.partition("=")
            meta.setdefault(key, value)
    for key, value in facts.items():
        meta.setdefault(key, value)
    return meta


def _facts() -> dict[str, str]:
    import os
    import socket
    import time

    import zmq

    from pflux import __version__

    host = socket.gethostname()
    return {
        "name": host,
        "keygen.hostname": host,
        "keygen.time": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "keygen.userid": str(os.getuid()),
        "keygen.pflux-version": __version__,
        "keygen.zmq-version": zmq.zmq_version(),
    }


def _keygen(name: str | None, metas: list[str], path: str | None) -> None:
    import sys
    from pathlib import Path

    from pflux.broker.cert import meta_problem, new_cert, write_cert
    from pflux.errors import UsageError

    if path is None:
        print(
            f"{base.PROG}-keygen: WARNING: add PATH argument to save generated certificate",
            file=sys.stderr,
        )
    meta = metadata(name, metas, _facts())
    for key, value in meta.items():
        problem = meta_problem(key, value)
        if problem:
            option = "--name" if key == "name" and name is not None else "--meta"
            raise UsageError(f"{option}: {problem}")
    cert = new_cert()
    if path is not None:
        write_cert(Path(path), cert, meta)
