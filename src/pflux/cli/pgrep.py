"""``pflux pgrep`` / ``pflux pkill``: jobs whose name matches a pattern, as flux-pgrep(1).

An expression is a regular expression searched in job names (``name:`` forces
one that looks like a range), or a range of ids ``ID1..ID2``; given both,
both must match.  Only the user's active jobs are searched unless ``-a``,
``-A``, ``-u`` or ``-f`` say otherwise.  ``pgrep`` prints the matches in a
``pflux jobs`` format (by default the ids alone); ``pkill`` cancels them,
and with ``--wait`` waits for them to end.  No match: exit status 1; an
expression that cannot be read: 2.
"""

from __future__ import annotations

import argparse
import re
import sys

from pflux.cli import base
from pflux.errors import JobIDError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from pflux.cli.jobfields import JobInfo

# pgrep's named formats: its own default, and pflux jobs' as "full" and by their names
DEFAULT_FORMAT = "{id.f58}"
FORMAT_HELP = """
Named pflux pgrep formats (-o NAME):

  default      the job ids alone
  full         pflux jobs' default format
  long         pflux jobs' long format
  deps         urgency, priority, state and outstanding dependencies
"""


def parser(kill: bool = False) -> argparse.ArgumentParser:
    """The options of ``pgrep`` (``kill``: those of ``pkill``)."""
    name = "pkill" if kill else "pgrep"
    what = "Cancel" if kill else "List"
    p = base.parser(name, f"{what} jobs whose name matches a pattern, or in a range of ids.")
    if not kill:
        p.add_argument("-a", action="store_true", help="jobs in all states, inactive too")
    p.add_argument("-A", action="store_true", help="the jobs of all users")
    p.add_argument("-u", "--user", metavar="USER", help='the jobs of USER (name or id, or "all")')
    p.add_argument(
        "-f",
        "--filter",
        action="append",
        default=[],
        metavar="STATE|RESULT",
        help="jobs in these states or with these results (default: pending,running)",
    )
    p.add_argument(
        "-q", "--queue", action="append", default=[], metavar="QUEUE,...", help="in these queues"
    )
    p.add_argument(
        "-c", "--count", type=int, default=99999, metavar="N", help="at most the first N matches"
    )
    p.add_argument(
        "--max-entries",
        type=int,
        default=1000,
        metavar="N",
        help="search at most N jobs (default 1000)",
    )
    if kill:
        p.add_argument("-w", "--wait", action="store_true", help="wait for the jobs to end")
    else:
        p.add_argument("-n", "--no-header", action="store_true", help="print no header line")
        p.add_argument(
            "-o",
            "--format",
            default="default",
            metavar="FORMAT",
            help="default (ids), full, long, deps, or a pflux jobs format string",
        )
    p.add_argument("--uri", help="the instance to ask (default: PFLUX_URI)")
    p.add_argument("expression", nargs="+", metavar="EXPRESSION", help="name pattern or id range")
    return p


def main(argv: list[str]) -> int:
    """Entry point of ``pflux pgrep``."""
    return run(argv, kill=False)


def run(argv: list[str], *, kill: bool) -> int:
    """``pgrep`` or ``pkill`` with ``argv``."""
    args = parser(kill).parse_args(argv)
    name = "pkill" if kill else "pgrep"
    return base.run(name, lambda: _pgrep(args, name, kill))


class Matcher:
    """A name pattern and/or a range of ids, as flux-pgrep reads them."""

    def __init__(self, expressions: list[str]) -> None:
        from pflux.spec.fluid import JobID

        self.regex: re.Pattern[str] | None = None
        self.ids: tuple[int, int] | None = None
        for text in expressions:
            if ":" not in text and ".." in text:
                first, _, last = text.partition("..")
                try:
                    self.ids = (JobID.parse(first), JobID.parse(last))
                    continue
                except JobIDError:
                    pass  # not two ids: a pattern
            if self.regex is not None:
                raise ValueError("Only one pattern can be provided")
            self.regex = re.compile(text.removeprefix("name:"))

    def __call__(self, job: JobInfo) -> bool:
        if self.regex is not None and not self.regex.search(str(job.raw("name"))):
            return False
        if self.ids is not None:
            jobid = int(job.data["id"])
            return self.ids[0] <= jobid <= self.ids[1]
        return True


def _pgrep(args: argparse.Namespace, name: str, kill: bool) -> int:
    from pflux.cli import jobformat

    formatter = None
    if not kill:
        if args.format == "help":
            sys.stdout.write(FORMAT_HELP)
            return 0
        fmt = DEFAULT_FORMAT
        if args.format != "default":  # full is pflux jobs' default; others as pflux jobs
            fmt = jobformat.resolve_format("default" if args.format == "full" else args.format)
        formatter = jobformat.JobFormat(fmt)
    try:
        matches = Matcher(args.expression)
    except (ValueError, re.error) as exc:
        sys.stderr.write(f"{base.PROG}-{name}: ERROR: expression error: {exc}\n")
        return 2
    from pflux import Client

    with Client(args.uri) as client:
        jobs = [job for job in _fetch(client, args, kill, formatter) if matches(job)]
        jobs = jobs[: max(args.count, 0)]
        if not jobs:
            return 1
        if kill:
            return _kill(client, jobs, args.wait)
    assert formatter is not None
    shown = formatter.filtered(jobs, no_header=args.no_header)
    no_header = args.no_header or args.format == "default"
    lines = [] if no_header else [shown.header()]
    lines += [shown.format(job) for job in jobs]
    sys.stdout.write("".join(line + "\n" for line in lines))
    return 0


def _fetch(client: Any, args: argparse.Namespace, kill: bool, formatter: Any) -> list[JobInfo]:
    from pflux.cli.jobfields import JobInfo, attrs_for
    from pflux.cli.jobs import filter_masks, user_id
    from pflux.spec.resultcodes import USERID_ANY

    names = [n for value in args.filter for n in value.split(",") if n]
    if not kill and args.a:
        names += ["pending", "running", "inactive"]
    states, results = filter_masks(names or ["pending", "running"])
    fields = formatter.fields if formatter is not None else []
    attrs = list(dict.fromkeys([*attrs_for(fields), "name"]))
    listed = client.list_jobs(
        attrs=attrs,
        max_entries=max(args.max_entries, 0),
        userid=USERID_ANY if args.A else user_id(args.user),
        states=states,
        results=results,
        queues=[q for value in args.queue for q in value.split(",") if q],
    )
    return [JobInfo(job.to_dict()) for job in listed]


def _kill(client: Any, jobs: list[JobInfo], wait: bool) -> int:
    from pflux.cli import jobcommon
    from pflux.spec.fluid import JobID

    jobids = [JobID(job.data["id"]) for job in jobs]
    errors = client.raise_many(jobids, "cancel", 0, "")
    canceled = [jobid for jobid, error in zip(jobids, errors, strict=True) if error is None]
    for jobid, error in zip(jobids, errors, strict=True):
        if error is not None:
            jobcommon.error("pkill", f"{jobcommon.f58(jobid)}: cancel: {error.errstr}")
    if wait:
        for jobid in canceled:
            client.wait(jobid)
    jobcommon.note("pkill", f"Canceled {jobcommon.plural(len(canceled), 'job')}")
    return 0 if len(canceled) == len(jobids) else 1
