"""``pflux watch [OPTIONS] [JOBID...]``: copy jobs' output to this terminal until they end.

As ``flux watch``: the jobs named, or the caller's jobs ``-a/--active``
(pending and running), ``-A/--all`` (inactive too), ``-f/--filter`` selects,
active ``--since`` a time (``-DURATION`` ago, a timestamp or a date), at most
``-c/--count`` (default 1000, 0 for all). Each job's stdout and stderr go to
this process's (``-l/--label-io``: each line prefixed by its task rank), inactive
jobs' included; the exit status is the largest of the jobs' (0 when no job
matches). ``--progress`` (with ``--jps``) shows a bar; ``-v`` each job's end.
Followed as ``submit --watch`` follows its jobs (``pflux.cli.watcher``).
"""

from __future__ import annotations

import argparse
import os
import sys

from pflux.cli import base, jobcommon
from pflux.errors import PfluxError, UsageError

NAME = "watch"
DEFAULT_COUNT = 1000


def main(argv: list[str]) -> int:
    parser = base.parser(NAME, "Watch one or more jobs.")
    jobcommon.add_uri(parser)
    parser.add_argument(
        "-a", "--active", action="store_true", help="watch all active jobs for current user"
    )
    parser.add_argument(
        "-A", "--all", action="store_true", help="watch all jobs for current user, inactive too"
    )
    parser.add_argument(
        "-c",
        "--count",
        default=str(DEFAULT_COUNT),
        metavar="N",
        help=f"limit to N jobs (default {DEFAULT_COUNT}, 0 for no limit)",
    )
    parser.add_argument(
        "-f",
        "--filter",
        action="append",
        default=[],
        metavar="STATE|RESULT",
        help="watch jobs with specific job state or result",
    )
    parser.add_argument("--since", metavar="WHEN", help="jobs active since WHEN (implies -A)")
    parser.add_argument("--progress", action="store_true", help="show a progress bar")
    parser.add_argument("--jps", action="store_true", help="with --progress, show jobs/s")
    parser.add_argument(
        "-l", "--label-io", action="store_true", help="label lines of output with task rank"
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="say more")
    parser.add_argument("jobids", nargs="*", metavar="JOBID", help="watch these jobs")
    args = parser.parse_args(argv)
    return base.run(NAME, lambda: _watch(args))


def _count(text: str) -> int:
    if not text.isascii() or not text.isdigit():
        raise UsageError(f"--count: must be an integer >= 0, got {text!r}")
    return int(text)


def _filters(args: argparse.Namespace) -> tuple[list[str], float]:
    """The ``-f`` names the options select, and ``--since``'s time (0: none)."""
    from pflux.cli.jobs import parse_since

    names = [name for value in args.filter for name in value.split(",") if name]
    since = 0.0
    if args.since is not None:
        try:
            since = parse_since(args.since)
        except PfluxError as exc:  # flux-watch's option errors exit 2
            raise UsageError(str(exc)) from None
        if not names:
            args.all = True
    if args.active:
        names += ["pending", "running"]
    if args.all:
        names += ["pending", "running", "inactive"]
    return names, since


def _watch(args: argparse.Namespace) -> int:
    from pflux import Client
    from pflux.cli.jobs import filter_masks

    count = _count(args.count)
    if args.jps and not args.progress:
        raise UsageError("--jps: only with --progress")
    names, since = _filters(args)
    given = names or args.count != str(DEFAULT_COUNT)
    if args.jobids and given:
        jobcommon.note(NAME, "WARNING: Filtering options ignored with jobid list")
    if not names and not args.jobids:
        raise PfluxError(
            "At least one job selection option is required\n"
            f"Try '{base.PROG} watch --help' for more information."
        )
    with Client(args.uri) as client:
        if args.jobids:
            jobids = jobcommon.job_ids(args.jobids)
        else:
            states, results = filter_masks(names)
            jobs = client.list_jobs(
                states=states,
                results=results,
                userid=os.getuid(),
                since=since,
                max_entries=count,
                attrs=(),
            )
            jobids = [job.id for job in jobs]
        if not jobids:
            jobcommon.note(NAME, "No matching jobs")
            return 0
        if args.verbose:
            jobcommon.note(NAME, f"Watching {len(jobids)} jobs")
        progress = args.progress
        if progress and not sys.stdout.isatty():
            jobcommon.note(NAME, "WARNING: stdout is not a tty. Ignoring --progress option")
            progress = False
        from pflux.cli.watcher import Watcher

        watcher = Watcher(
            watch=True,
            progress=progress,
            total=len(jobids),
            prog=NAME,
            verbose=args.verbose,
            label_io=args.label_io,
        )
        return watcher.run(client, jobids)
