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

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from pflux import Client


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
    p.add_argument(
        "-b",
        "--batch",
        action="store_true",
        help="begin processing responses after all requests are sent (with --count)",
    )
    p.add_argument(
        "-u",
        "--userid",
        action="store_true",
        help="include the userid and rolemask the responses carry in the output",
    )
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
    from pflux.errors import PfluxError

    _check(args)
    rank, service = _target(args)
    topic = f"{service}.ping"
    pad = "p" * args.pad
    with Client(args.uri) as client:
        attrs = client.attrs()
        ranks = _ranks(rank, int(attrs.get("size", 1)))
        route = attrs.get("rank", "0")  # the broker that answers "any": this client's
        targets: list[int | None] = list(ranks) if ranks is not None else [None]
        batched: list[list[tuple[float, Any]]] = []
        if args.batch:  # every request first, then the answers (flux ping -b)
            batched = _batch(client, service, pad, targets, args.count)
        seq = 0
        while not args.count or seq < args.count:
            answers = [
                batched[i][seq] if batched else _one(client, service, pad, seq, target)
                for i, target in enumerate(targets)
            ]
            if any(not isinstance(a, dict) or a.get("pad") != pad for _, a in answers):
                raise PfluxError(f"{rank}!{topic}: error in ping pad")
            times = [took for took, _ in answers]
            creds = _creds(answers[-1][1]) if args.userid else ""
            head = f"{topic} pad={len(pad)}{creds} seq={seq}"
            if ranks is not None and len(ranks) > 1:
                spread = statistics.pstdev(times)
                line = (
                    f"{rank}!{head}"
                    f" time=({min(times):.3f}:{statistics.mean(times):.3f}:{max(times):.3f}) ms"
                    f" stddev {spread:.3f}"
                )
            else:
                prefix = "" if rank == "any" else f"{rank}!"
                hops = route if ranks is None else str(ranks[0])
                line = f"{prefix}{head} time={times[0]:.3f} ms ({hops})"
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
            seq += 1
            if args.interval and not batched and (not args.count or seq < args.count):
                time.sleep(args.interval)


def _one(client: Client, service: str, pad: str, seq: int, target: int | None) -> tuple[float, Any]:
    """One ping, waited for: (its round trip in ms, the answer)."""
    now = time.monotonic_ns()
    answer = client.ping(service, _payload(seq, pad, now), rank=target)
    return (time.monotonic_ns() - now) / 1e6, answer


def _check(args: argparse.Namespace) -> None:
    """Refuse what flux-ping refuses, in its words."""
    from pflux.errors import UsageError

    if args.pad < 0:
        raise UsageError("pad must be >= 0")
    if args.interval < 0:
        raise UsageError("interval must be >= 0")
    if args.count < 0:
        raise UsageError("count must be >= 0")
    if args.batch and not args.count:
        raise UsageError("--batch should only be used with --count")


def _creds(answer: dict[str, Any]) -> str:
    """`` userid=U rolemask=0xR`` as an answer carries them (``-u``)."""
    return f" userid={answer.get('userid')} rolemask=0x{answer.get('rolemask', 0):x}"


def _payload(seq: int, pad: str, now: int) -> dict[str, Any]:
    """A request as flux-ping's: its sequence number, when it was sent, its padding."""
    return {
        "seq": seq,
        "time.tv_sec": now // 1_000_000_000,
        "time.tv_nsec": now % 1_000_000_000,
        "pad": pad,
    }


def _batch(
    client: Client, service: str, pad: str, targets: list[int | None], count: int
) -> list[list[tuple[float, Any]]]:
    """For each target, ``count`` pings sent all at once: (ms from its sending to the
    answers' processing, the answer) for each."""
    found = []
    for target in targets:
        sent = [time.monotonic_ns() for _ in range(count)]
        payloads = [_payload(seq, pad, now) for seq, now in enumerate(sent)]
        answers = client.ping_many(service, payloads, rank=target)
        done = time.monotonic_ns()
        found.append([((done - now) / 1e6, a) for now, a in zip(sent, answers, strict=True)])
    return found
