"""Throughput of FLUID encoding, decoding and generation, and of RFC 18 event lines.

Run by hand or by ``make bench``; never part of the test suite. Each figure is
the median of several timed passes over ``--n`` items, per second, on one core,
in this process's CPU time (steadier than wall-clock time on a shared machine;
``--wall`` for wall-clock). The target for FLUID encode and decode is 500,000/s.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from pflux.spec.eventlog import Event, EventlogReader, format_text, parse
from pflux.spec.fluid import FluidGenerator, JobID

ENCODINGS = ("f58", "dec", "hex", "dothex", "kvs", "words")


# this process's CPU time by default; --wall switches to wall-clock time
CLOCK = [time.process_time]


def rate(work: Callable[[], object], n: int, repeats: int) -> float:
    """Items per second: n over the median time of ``repeats`` calls of ``work``."""
    clock = CLOCK[0]
    work()  # warm-up pass, not timed
    times = []
    for _ in range(repeats):
        start = clock()
        work()
        times.append(clock() - start)
    return n / statistics.median(times)


def sample_ids(n: int) -> list[JobID]:
    """Ids as a year-old instance issues them: timestamps up to 2**35 ms, busy milliseconds."""
    rng = random.Random(19)
    return [JobID(rng.randrange(2**35) << 24 | rng.randrange(1024)) for _ in range(n)]


def sample_events(n: int) -> list[Event]:
    """A job's usual events, repeated: small contexts, as job-manager writes them."""
    base = 1738774194.185372
    kinds: Sequence[tuple[str, dict[str, Any] | None]] = [
        ("submit", {"userid": 1000, "urgency": 16, "flags": 0, "version": 1}),
        ("validate", None),
        ("depend", None),
        ("priority", {"priority": 16}),
        ("alloc", {"annotations": {"sched": {"resource_summary": "rank0/core0"}}}),
        ("start", None),
        ("finish", {"status": 0}),
        ("release", {"ranks": "all", "final": True}),
        ("free", None),
        ("clean", None),
    ]
    events = []
    for i in range(n):
        name, context = kinds[i % len(kinds)]
        events.append(Event(base + i * 0.001, name, context))
    return events


def report(label: str, per_second: float, unit: str) -> None:
    print(f"{label:<34} {per_second:>12,.0f} {unit}/s")


def bench_fluid(n: int, repeats: int) -> None:
    ids = sample_ids(n)
    parse_id = JobID.parse

    def encode_all(fmt: str) -> Callable[[], object]:
        return lambda: [j.encode(fmt) for j in ids]

    def decode_all(texts: list[str]) -> Callable[[], object]:
        return lambda: [parse_id(s) for s in texts]

    for fmt in ENCODINGS:
        texts = [j.encode(fmt) for j in ids]
        report(f"encode {fmt} (.encode)", rate(encode_all(fmt), n, repeats), "ids")
        report(f"decode {fmt}", rate(decode_all(texts), n, repeats), "ids")
    report("encode f58 (str())", rate(lambda: [str(j) for j in ids], n, repeats), "ids")
    report("encode f58 (.f58)", rate(lambda: [j.f58 for j in ids], n, repeats), "ids")
    mixed = [j.encode(ENCODINGS[i % len(ENCODINGS)]) for i, j in enumerate(ids)]
    report("decode mix of all encodings", rate(decode_all(mixed), n, repeats), "ids")
    fast = ("f58", "dec", "hex", "dothex", "kvs")
    mixed_no_words = [j.encode(fast[i % len(fast)]) for i, j in enumerate(ids)]
    report("decode mix without words", rate(decode_all(mixed_no_words), n, repeats), "ids")
    gen = FluidGenerator(0)
    report("generator next()", rate(lambda: [gen.next() for _ in range(n)], n, repeats), "ids")
    report("generator next_many(n)", rate(lambda: gen.next_many(n), n, repeats), "ids")


def bench_eventlog(n: int, repeats: int) -> None:
    events = sample_events(n)
    lines = [e.to_line() for e in events]
    text = "".join(lines)
    data = text.encode()
    from_line = Event.from_line
    report("event to_line", rate(lambda: [e.to_line() for e in events], n, repeats), "events")
    report("event from_line", rate(lambda: [from_line(s) for s in lines], n, repeats), "events")
    report("eventlog parse (str)", rate(lambda: parse(text), n, repeats), "events")
    report("eventlog parse (bytes)", rate(lambda: parse(data), n, repeats), "events")

    def follow() -> None:
        reader = EventlogReader()
        for i in range(0, len(data), 4096):
            reader.feed(data[i : i + 4096])

    report("EventlogReader, 4 KiB chunks", rate(follow, n, repeats), "events")
    report("format_text raw", rate(lambda: [format_text(e) for e in events], n, repeats), "events")
    report(
        "format_text iso",
        rate(lambda: [format_text(e, time_format="iso") for e in events], n, repeats),
        "events",
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=100_000, help="items per timed pass")
    ap.add_argument("--repeats", type=int, default=5, help="timed passes per figure")
    ap.add_argument("--wall", action="store_true", help="time with wall-clock, not CPU time")
    args = ap.parse_args()
    if args.wall:
        CLOCK[0] = time.perf_counter
    clock = "wall-clock" if args.wall else "CPU"
    print(f"n={args.n}, median of {args.repeats} passes, {clock} time")
    bench_fluid(args.n, args.repeats)
    bench_eventlog(args.n, args.repeats)


if __name__ == "__main__":
    main()
