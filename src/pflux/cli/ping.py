"""``flux ping TARGET``: the round trip to a service, as flux-ping(1) measures and prints it.

TARGET is a service (``kvs``: ``kvs.ping``), ``RANK!SERVICE``, or a rank alone
(that broker: ``broker.ping``); every service answers ping with what it is sent.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from pflux.cli import base


def parser() -> argparse.ArgumentParser:
    p = base.parser("ping", "Measure the round-trip latency to a service.")
    p.add_argument(
        "-r", "--rank", help="find the target on broker rank(s) RANK (an idset, all, any)"
    )
    p.add_argument(
        "-p", "--pad", type=int, default=0, metavar="N", help="pad the payload with N bytes"
    )
    p.add_argument(
        "-i", "--interval", type=float, default=1.0, metavar="N", help="seconds between requests"
    )
    p.add_argument("-c", "--count", type=int, default=0, metavar="N", help="send N requests")
    p.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    p.add_argument("target", help="a service name, RANK!SERVICE, or a rank")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    return base.run("ping", lambda: _ping(args))


def _target(args: argparse.Namespace) -> tuple[str, str]:
    """(rank text, service) as flux-ping reads TARGET and --rank."""
    from pflux.spec.idset import IdSet

    target, rank = args.target, args.rank
    if rank is None:
        if "!" in target:
            rank, _, target = target.partition("!")
        elif target in ("all", "any", "upstream"):
            rank, target = target, "broker"
        else:
            try:
                IdSet.decode(target)
            except ValueError:
                rank = "any"
            else:
                rank, target = target, "broker"
    return rank, target


def _ranks(rank: str, size: int) -> list[int] | None:
    """The ranks to ping (None: whichever provides the service)."""
    from pflux.errors import UsageError
    from pflux.spec.idset import IdSet

    if rank == "any":
        return None
    if rank == "all":
        return list(range(size))
    if rank == "upstream":
        raise UsageError("--rank upstream: a client's broker has no upstream here (rank 0)")
    try:
        return list(IdSet.decode(rank))
    except ValueError as exc:
        raise UsageError(f"--rank: {exc}") from None


def _ping(args: argparse.Namespace) -> None:
    from pflux import Client
    from pflux.errors import PfluxError, UsageError

    if args.pad < 0:
        raise UsageError("pad must be >= 0")
    if args.interval < 0:
        raise UsageError("interval must be >= 0")
    if args.count < 0:
        raise UsageError("count must be >= 0")
    rank, service = _target(args)
    topic = f"{service}.ping"
    pad = "p" * args.pad
    with Client(args.uri) as client:
        attrs = client.attrs()
        ranks = _ranks(rank, int(attrs.get("size", 1)))
        route = attrs.get("rank", "0")  # the broker that answers "any": this client's
        seq = 0
        while not args.count or seq < args.count:
            times = []
            targets: list[int | None] = list(ranks) if ranks is not None else [None]
            for target in targets:
                now = time.monotonic_ns()
                payload = {
                    "seq": seq,
                    "time.tv_sec": now // 1_000_000_000,
                    "time.tv_nsec": now % 1_000_000_000,
                    "pad": pad,
                }
                answer = client.ping(service, payload, rank=target)
                times.append((time.monotonic_ns() - now) / 1e6)
                if not isinstance(answer, dict) or answer.get("pad") != pad:
                    raise PfluxError(f"{rank}!{topic}: error in ping pad")
            if ranks is not None and len(ranks) > 1:
                spread = statistics.pstdev(times)
                line = (
                    f"{rank}!{topic} pad={len(pad)} seq={seq}"
                    f" time=({min(times):.3f}:{statistics.mean(times):.3f}:{max(times):.3f}) ms"
                    f" stddev {spread:.3f}"
                )
            else:
                prefix = "" if rank == "any" else f"{rank}!"
                hops = route if ranks is None else str(ranks[0])
                line = f"{prefix}{topic} pad={len(pad)} seq={seq} time={times[0]:.3f} ms ({hops})"
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
            seq += 1
            if args.interval and (not args.count or seq < args.count):
                time.sleep(args.interval)
