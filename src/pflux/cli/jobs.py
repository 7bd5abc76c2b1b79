"""``pflux jobs``: list jobs, as ``flux jobs`` does.

By default the user's pending and running jobs, in job-list's order (pending
by priority, then running and inactive jobs newest first), in flux's default
format. The options are flux's: ``-a``/``-A``/``-u`` choose whose jobs and
which, ``-f`` filters on states and results, ``-c`` caps the count, ``-o``
picks a named format or gives one in flux's format language (see
``pflux.cli.jobformat``), ``--json`` prints job objects, and job ids list just
those jobs. ``--stats`` prints job-list's counts (``job-list.job-stats``) above
the listing, ``--stats-only`` prints them alone and exits 0 only while jobs are
active.
"""

from __future__ import annotations

import os
import sys

from pflux.cli import base, options
from pflux.errors import PfluxError
from pflux.spec.resultcodes import USERID_ANY

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, Final

    from pflux import Client, JobListing
    from pflux.cli.jobfields import JobInfo
    from pflux.cli.jobformat import JobFormat

DEFAULT_COUNT: Final = 1000


def main(argv: list[str]) -> int:
    """Entry point of ``pflux jobs``."""
    args = _parser().parse_args(argv)
    return base.run("jobs", lambda: _jobs(args))


def _parser() -> options.OptionParser:
    p = base.options("jobs", "List jobs: by default your pending and running ones.")
    p.add_argument("-a", action="store_true", help="list jobs in all states, inactive too")
    p.add_argument("-A", action="store_true", help="list the jobs of all users")
    p.add_argument(
        "-c",
        "--count",
        type=int,
        default=DEFAULT_COUNT,
        metavar="N",
        help=f"list at most N jobs; 0 for all (default {DEFAULT_COUNT})",
    )
    p.add_argument(
        "-f",
        "--filter",
        action="append",
        default=[],
        metavar="STATE|RESULT",
        help="list jobs in these states or with these results, e.g. pending,failed",
    )
    p.add_argument(
        "--since",
        metavar="WHEN",
        help="only jobs active since WHEN (-DURATION ago, a date, or a timestamp); implies -a",
    )
    p.add_argument("-n", "--no-header", action="store_true", help="print no header line")
    p.add_argument("--suppress-header", action="store_true", help=options.SUPPRESS)
    p.add_argument(
        "-u", "--user", metavar="USER", help='list the jobs of USER (name or id, or "all")'
    )
    p.add_argument("--name", metavar="NAME", help="list only jobs named NAME")
    p.add_argument(
        "-i",
        "--include",
        metavar="HOSTS|RANKS",
        help="list only jobs allocated to these HOSTS or RANKS (a hostlist or an idset)",
    )
    p.add_argument(
        "-q",
        "--queue",
        action="append",
        default=[],
        metavar="QUEUE,...",
        help="list only jobs in these queues",
    )
    p.add_argument(
        "-o",
        "--format",
        default="default",
        metavar="FORMAT",
        help="a named format (see --format=help) or a format string",
    )
    p.add_argument("--sort", default="", metavar="KEY,...", help="sort on these fields")
    p.add_argument(
        "-w",
        "--width",
        type=int,
        nargs="?",
        const=0,
        default=-1,
        metavar="N",
        help="truncate lines at N columns (0 or none: the terminal's width)",
    )
    p.add_argument("--json", action="store_true", help="print the jobs as JSON")
    p.add_argument(
        "--color",
        nargs="?",
        const="always",
        choices=("always", "never", "auto"),
        metavar="WHEN",
        help="colorize output by result: always (the default WHEN), never or auto; "
        "unset: auto, or never when NO_COLOR is set",
    )
    p.add_argument("--stats", action="store_true", help="print job statistics before header")
    p.add_argument("-R", "--recursive", action="store_true", help="list jobs recursively")
    p.add_argument(
        "-L",
        "--level",
        type=int,
        default=9999,
        metavar="N",
        help="with --recursive, only descend N levels",
    )
    p.add_argument(
        "--recurse-all",
        action="store_true",
        help="with --recursive, descend into every user's instances, not only yours",
    )
    p.add_argument(
        "--stats-only",
        action="store_true",
        help="print job statistics only and exit; exit with 1 when no jobs are active, "
        "as in 'while pflux jobs --stats-only; do sleep 1; done'",
    )
    p.add_argument("--uri", help="the instance to ask (default: PFLUX_URI)")
    p.add_argument("--from-stdin", action="store_true", help=options.SUPPRESS)
    p.add_argument("jobids", nargs="*", metavar="JOBID", help="list only these jobs")
    return p


def _jobs(args: options.Args) -> int:
    from pflux.cli import jobformat

    if args.format == "help":
        sys.stdout.write(jobformat.format_help())
        return 0
    if args.format.startswith("get-config="):
        sys.stdout.write(jobformat.format_config(args.format.partition("=")[2]))
        return 0
    if args.json and (args.stats or args.stats_only):
        raise PfluxError("--json incompatible with --stats or --stats-only")
    formatter = jobformat.JobFormat(jobformat.resolve_format(args.format))
    if args.stats or args.stats_only:
        active = _print_stats(args)
        if args.stats_only:
            return 0 if active else 1
    if args.sort:
        formatter.set_sort_keys(args.sort)
    no_header = args.no_header or args.suppress_header or args.json
    jobs, truncated = _fetch(args, formatter.fields)
    if args.jobids and not jobs:
        return 1
    if args.recurse_all:
        args.recursive = True
    if args.json:
        _print_json(jobs, args)
    else:
        _print_listing(jobs, formatter, args, no_header=no_header)
    if truncated and not no_header:
        _warn(f"output truncated at {args.count} jobs.")
        sys.stderr.write("Raise -c/--count to list more, or filter to list fewer.\n")
    return 0


def _print_listing(
    jobs: list[JobInfo], formatter: JobFormat, args: options.Args, *, no_header: bool
) -> None:
    """The table, then with ``-R`` the nested instances' jobs below it."""
    colored = _color_enabled(args.color)
    _print_table(jobs, formatter, no_header=no_header, width=args.width, colored=colored)
    if args.recursive:
        from pflux.cli import jobsrecursive

        def show(children: list[JobInfo]) -> None:
            _print_table(children, formatter, no_header=True, width=args.width, colored=colored)

        fields = formatter.fields
        jobsrecursive.print_below(args, jobs, lambda inner: _fetch(inner, fields)[0], show)


# --- statistics ---------------------------------------------------------------------------


def _print_stats(args: options.Args) -> bool:
    """Print flux's statistics line (of the ``--queue`` queues' jobs, summed, if given);
    return whether any job is active."""
    from pflux import Client

    with Client(args.uri) as client:
        answer = client.job_stats()
    queues = [name for option in args.queue for name in option.split(",") if name]
    if queues:
        by_name = {entry["name"]: entry for entry in answer["queues"]}
        missing = [name for name in queues if name not in by_name]
        if missing:
            message = f"no stats available for queue {missing[0]}"
            raise PfluxError(f"error retrieving job stats: {message}")
        counts = [by_name[name] for name in queues]
    else:
        counts = [answer]

    def total(key: str) -> int:
        return sum(int(entry[key]) for entry in counts)

    def state(*names: str) -> int:
        return sum(int(entry["job_states"][name]) for entry in counts for name in names)

    failed = total("failed") + total("timeout") + total("canceled")
    print(
        f"{state('run', 'cleanup')} running, {total('successful')} completed, "
        f"{failed} failed, {state('depend', 'priority', 'sched')} pending, "
        f"{total('inactive_purged')} inactive purged",
        flush=True,
    )
    return state("total") > state("inactive")


# --- fetching -----------------------------------------------------------------------------


def _fetch(args: options.Args, fields: list[str]) -> tuple[list[JobInfo], bool]:
    """The jobs to show, and whether ``--count`` cut the list short."""
    from pflux.cli.jobfields import JobInfo, attrs_for

    if args.from_stdin:
        return [JobInfo(job) for job in _jobs_from_stdin()], False
    attrs = ["all"] if args.json else attrs_for(fields)
    if not args.json and _color_enabled(args.color):
        attrs = sorted({*attrs, *attrs_for(["result", "annotations"])})
    if args.recursive and "all" not in attrs:
        attrs = sorted({*attrs, *attrs_for(["annotations", "status", "userid"])})
    filtered = _filters_given(args)
    if args.jobids:
        if filtered:
            _warn("Filtering options ignored with jobid list")
        return [JobInfo(job.to_dict()) for job in _by_id(args, attrs)], False
    include = _include(args.include) if args.include is not None else None
    if include is not None and args.user is None and not args.A:
        args.user = "all"  # --include looks at every user's jobs, unless -u says whose
    filters = _list_filters(args)
    count = args.count
    with _connect(args) as client:
        if include is None:
            most = count + 1 if count > 0 else 0
            jobs = client.list_jobs(attrs=attrs, max_entries=most, **filters)
        else:  # every job listed, then those on the targets kept
            asked = attrs if "all" in attrs else sorted({*attrs, include[0]})
            jobs = [job for job in client.list_jobs(attrs=asked, **filters) if _on(job, include)]
    truncated = 0 < count < len(jobs)
    if truncated:
        jobs = jobs[:count]
    return [JobInfo(job.to_dict()) for job in jobs], truncated


def _include(text: str) -> tuple[str, set[Any]]:
    """``-i``'s targets: ("ranks", ids) for an idset, else ("nodelist", hosts)."""
    from pflux.errors import HostlistError, IdsetError
    from pflux.spec import hostlist, idset

    try:
        return "ranks", set(idset.decode(text))
    except IdsetError:
        pass
    try:
        return "nodelist", set(hostlist.decode(text))
    except HostlistError:
        raise PfluxError(f"-i/--include: invalid targets: {text}") from None


def _on(job: JobListing, include: tuple[str, set[Any]]) -> bool:
    """Whether the job was allocated any of ``include``'s ranks or hosts."""
    from pflux.spec import hostlist, idset

    key, targets = include
    text = getattr(job, key)
    if not text:
        return False
    held = idset.decode(text) if key == "ranks" else hostlist.decode(text)
    return not targets.isdisjoint(held)


def _filters_given(args: options.Args) -> bool:
    return bool(
        args.a
        or args.A
        or args.filter
        or args.user
        or args.name
        or args.include
        or args.queue
        or args.since
        or args.count != DEFAULT_COUNT
    )


def _list_filters(args: options.Args) -> dict[str, Any]:
    """``Client.list_jobs``'s filters for the filtering options."""
    names = [name for value in args.filter for name in value.split(",") if name]
    since = 0.0
    if args.since:
        since = parse_since(args.since)
        if not names:
            args.a = True  # --since implies -a unless filters are given
    if args.a:
        if names:
            _warn("Both -a and --filter specified, ignoring -a")
        else:
            names = ["pending", "running", "inactive"]
    states, results = filter_masks(names or ["pending", "running"])
    return {
        "userid": USERID_ANY if args.A else user_id(args.user),
        "states": states,
        "results": results,
        "since": since,
        "name": args.name or None,
        "queues": [q for value in args.queue for q in value.split(",") if q],
    }


def filter_masks(names: list[str]) -> tuple[int, int]:
    """(states, results) masks for ``-f`` names such as ``pending`` or ``FAILED``."""
    from pflux.spec import statebits
    from pflux.spec.resultcodes import CODES

    states = {name.lower(): bit for bit, name in statebits.NAMES.items() if bit != statebits.NEW}
    states.update(pending=statebits.PENDING, running=statebits.RUNNING, active=statebits.ACTIVE)
    results = {name.lower(): code for name, code in CODES.items()}
    state_mask = result_mask = 0
    for name in names:
        key = name.strip().lower()
        if key in states:
            state_mask |= states[key]
        elif key in results:
            result_mask |= results[key]
        else:
            raise PfluxError(f"Invalid filter specified: {name}")
    return state_mask, result_mask


def user_id(user: str | None) -> int:
    """The userid ``-u`` names: a user name, a number, or ``all``; default: the caller."""
    if user is None:
        return os.getuid()
    if user == "all":
        return USERID_ANY
    import pwd

    try:
        return pwd.getpwnam(user).pw_uid
    except KeyError:
        pass
    try:
        return int(user)
    except ValueError:
        raise PfluxError(f"Invalid user {user} specified") from None


def parse_since(text: str, now: float | None = None) -> float:
    """``--since``: ``-DURATION`` ago (RFC 23), a timestamp, or an ISO 8601 date and time."""
    import time

    now = time.time() if now is None else now
    when: float
    if text.startswith("-"):
        from pflux.spec import duration

        when = now - duration.parse(text[1:])
    elif text == "now":
        when = now
    else:
        try:
            when = float(text)
        except ValueError:
            from datetime import datetime

            try:
                when = datetime.fromisoformat(text).timestamp()
            except ValueError:
                raise PfluxError(
                    f"--since={text}: expected -DURATION, a timestamp or an ISO 8601 date"
                ) from None
    if when > now:
        raise PfluxError(f"--since={text} appears to be in the future")
    return when


def _by_id(args: options.Args, attrs: list[str]) -> list[JobListing]:
    """``list-id`` for each job id given, all in flight at once; unknown ids are reported."""
    import errno

    from pflux.errors import RPCError
    from pflux.spec.fluid import JobID

    ids = [JobID.parse(text) for text in args.jobids]
    jobs = []
    with _connect(args) as client:
        for text, info in zip(args.jobids, client.job_info_many(ids, attrs), strict=True):
            if isinstance(info, RPCError):
                reason = "unknown" if info.errnum == errno.ENOENT else f"rpc: {info.errstr}"
                sys.stderr.write(f"JobID {text} {reason}\n")
            else:
                jobs.append(info)
    return jobs


def _connect(args: options.Args) -> Client:
    from pflux import Client

    return Client(args.uri)


def _jobs_from_stdin() -> list[dict[str, Any]]:
    """Job objects, one JSON object a line (a testing aid, as in flux)."""
    import orjson

    jobs = []
    for lineno, line in enumerate(sys.stdin, 1):
        if not line.strip():
            continue
        try:
            job = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise PfluxError(f"JSON input error: line {lineno}: {exc}") from None
        if not isinstance(job, dict) or type(job.get("id")) is not int:
            raise PfluxError(f"JSON input error: line {lineno}: not a job object with an id")
        jobs.append(job)
    return jobs


# --- printing -----------------------------------------------------------------------------


def _print_table(
    jobs: list[JobInfo], formatter: JobFormat, *, no_header: bool, width: int, colored: bool
) -> None:
    from _pfluxcore.outputformat import terminal_width

    shown = formatter.filtered(jobs, no_header=no_header)
    shown.sort(jobs)
    limit = terminal_width(width)
    lines = [] if no_header else [shown.header() + "\n"]
    for job in jobs:
        line = shown.format(job)
        if line and not line.isspace():
            if limit > 0 and len(line) > limit:
                line = line[: limit - 1] + "+"
            color = _color(job) if colored else ""
            lines.append(f"{color}{line}\n{_COLOR_RESET if color else ''}")
    if limit > 0 and not no_header and len(lines[0]) - 1 > limit:
        lines[0] = lines[0][: limit - 1] + "+\n"
    _write("".join(lines))


# flux jobs' colors: by result once inactive, blue for a running nested instance
_RESULT_COLORS: Final = {
    "COMPLETED": "\033[01;32m",
    "FAILED": "\033[01;31m",
    "CANCELED": "\033[37m",
    "TIMEOUT": "\033[01;31m",
}
_INSTANCE_COLOR: Final = "\033[01;34m"
_COLOR_RESET: Final = "\033[0;0m"


def _color_enabled(when: str | None) -> bool:
    """``--color``'s WHEN; unset: auto, unless NO_COLOR is set (not empty)."""
    if when is None:
        when = "never" if os.environ.get("NO_COLOR") else "auto"
    if when == "auto":
        return sys.stdout.isatty()
    return when == "always"


def _color(job: JobInfo) -> str:
    result = job.get("result")
    if result:
        return _RESULT_COLORS.get(result, "")
    return _INSTANCE_COLOR if job.get("uri") else ""


def _print_json(jobs: list[JobInfo], args: options.Args) -> None:
    import json

    if args.recursive:
        from pflux.cli import jobsrecursive

        result = jobsrecursive.json_tree(args, jobs, lambda inner: _fetch(inner, [])[0])
    else:
        result = [job.to_dict() for job in jobs]
    if args.jobids and len(args.jobids) == 1:
        if result:
            _write(json.dumps(result[0]) + "\n")
    else:
        _write(json.dumps({"jobs": result}) + "\n")


def _write(text: str) -> None:
    try:
        sys.stdout.write(text)
    except UnicodeEncodeError:
        encoding = getattr(sys.stdout, "encoding", None) or "ascii"
        sys.stdout.write(text.encode(encoding, errors="replace").decode(encoding))
    sys.stdout.flush()


def _warn(message: str) -> None:
    sys.stderr.write(f"{base.PROG}-jobs: WARNING: {message}\n")
