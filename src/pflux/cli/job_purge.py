"""``pflux job purge [--age-limit=FSD] [--num-limit=N] [--force] [--batch=N] [ID...]``.

As ``flux job purge`` (the instance owner only): the oldest inactive jobs that
have been inactive longer than ``--age-limit`` or are beyond the newest
``--num-limit`` are removed for good (KVS, listings, job manager), ``--batch``
per request until none is left; or, with job ids, those inactive jobs. Without
``--force`` nothing is removed: it says how many would be. With ids, every id
is checked before any is purged, so an active or unknown one, which is named,
leaves every job in place.
"""

from __future__ import annotations

import argparse

from pflux.cli import base, jobcommon
from pflux.errors import DurationError, PfluxError, UsageError

NAME = "job"
BATCH_DEFAULT = 50  # flux-core's
BATCH_MAX = 100  # the job manager's most per request


def main(argv: list[str]) -> int:
    parser = base.parser("job purge", "Remove inactive jobs for good (the instance owner only).")
    jobcommon.add_uri(parser)
    parser.add_argument(
        "--age-limit", metavar="FSD", help="purge jobs that became inactive longer ago than FSD"
    )
    parser.add_argument(
        "--num-limit", metavar="COUNT", help="purge the oldest inactive jobs until COUNT are left"
    )
    parser.add_argument("-f", "--force", action="store_true", help="perform the irreversible purge")
    parser.add_argument(
        "--batch",
        metavar="COUNT",
        help=f"limit the number of jobs per request (default {BATCH_DEFAULT}, at most {BATCH_MAX})",
    )
    parser.add_argument("jobids", metavar="ID", nargs="*", help="inactive job ids to purge")
    args = parser.parse_args(argv)
    return base.run(NAME, lambda: _purge(args))


def _count(option: str, text: str, least: int, most: int | None = None) -> int:
    if not text.isascii() or not text.isdigit() or int(text) < least:
        rule = f"{least}-{most}" if most is not None else f"an integer >= {least}"
        raise UsageError(f"purge: {option}: must be {rule}, got {text!r}")
    value = int(text)
    if most is not None and value > most:
        raise UsageError(f"purge: {option}: must be {least}-{most}, got {text!r}")
    return value


def _purge(args: argparse.Namespace) -> int:
    if args.jobids:
        given = [name for name in ("age_limit", "num_limit", "batch") if getattr(args, name)]
        if given:
            options = ", ".join("--" + name.replace("_", "-") for name in given)
            raise UsageError(f"purge: {options}: cannot be used with job ids")
        return _purge_ids(args)
    age = None
    if args.age_limit is not None:
        from pflux.spec import duration

        try:
            age = duration.parse(args.age_limit)
        except DurationError as exc:
            raise UsageError(f"purge: --age-limit: {exc}") from None
    num = None if args.num_limit is None else _count("--num-limit", args.num_limit, 0)
    batch = BATCH_DEFAULT if args.batch is None else _count("--batch", args.batch, 1, BATCH_MAX)
    from pflux import Client
    from pflux.errors import RPCError

    total = 0
    with Client(args.uri) as client:
        try:
            while True:
                count, inactive = client.purge(
                    age_limit=age, num_limit=num, batch=batch, force=args.force
                )
                total += count
                if not args.force or count < batch:
                    break
        except RPCError as exc:
            raise PfluxError(f"purge: {exc.errstr}") from None
    _finish(args.force, total, inactive)
    return 0


def _purge_ids(args: argparse.Namespace) -> int:
    from pflux import Client
    from pflux.errors import RPCError
    from pflux.spec.fluid import JobID

    jobids = [JobID.parse(text) for text in args.jobids]
    total = inactive = 0
    with Client(args.uri) as client:
        for force in (False, True) if args.force else (False,):
            total = 0
            for jobid in jobids:
                try:
                    count, inactive = client.purge_id(jobid, force=force)
                except RPCError as exc:
                    message = jobcommon.job_message(jobid, exc.errstr)
                    raise PfluxError(f"purge: {message}") from None
                total += count
    _finish(args.force, total, inactive)
    return 0


def _finish(force: bool, total: int, inactive: int) -> None:
    if force:
        print(f"purged {total} inactive jobs, {inactive} remaining")
    else:
        print(f"use --force to purge {total} of {inactive} inactive jobs")
