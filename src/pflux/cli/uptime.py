"""``pflux uptime``: one line on the instance, as flux-uptime(1) (and uptime(1)) print it.

`` 14:39:05 run 2.1m,  owner alice,  depth 0,  size 1`` (then ``,  N drained``
if ranks are drained and ``,  N offline`` if brokers are down or yet to join), and
a second line when submissions are disabled or the scheduler stopped.
"""

from __future__ import annotations

import argparse

from pflux.cli import base


def parser() -> argparse.ArgumentParser:
    p = base.parser("uptime", "Show how long the instance has been running, and its state.")
    p.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    return base.run("uptime", lambda: _uptime(args.uri))


def duration(seconds: float) -> str:
    """flux's short duration with two significant digits: ``45s``, ``2.1m``, ``1.5h``, ``3d``."""
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("m", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.2g}{unit}"
    return f"{seconds:.2g}s"


def _uptime(uri: str | None) -> None:
    import pwd
    import time

    from pflux import Client
    from pflux.spec.idset import IdSet

    with Client(uri) as client:
        attrs = client.attrs()
        queue = client.queue_status()
        status = client.resource_status()
    drained = len(status.get("drain") or {})
    offline = len(IdSet.decode(status.get("offline") or ""))
    now = time.time()
    uid = int(attrs["security.owner"])
    try:
        owner = pwd.getpwuid(uid).pw_name
    except KeyError:
        owner = str(uid)
    up = duration(max(0.0, now - float(attrs["broker.starttime"])))
    print(
        f" {time.strftime('%H:%M:%S', time.localtime(now))} run {up},  owner {owner},"
        f"  depth {attrs['instance-level']},  size {attrs['size']}"
        + (f",  {drained} drained" if drained else "")
        + (f",  {offline} offline" if offline else "")
    )
    extra = [
        text
        for text, shown in (
            ("submit disabled", not queue.enable),
            ("scheduler stopped", not queue.start),
        )
        if shown
    ]
    if extra:
        print("  " + ",  ".join(extra))
