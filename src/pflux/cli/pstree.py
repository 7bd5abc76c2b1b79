"""``pflux pstree``: the instance's jobs as a tree by name, as flux-pstree(1).

pflux runs no nested instances, so the tree has one level: the instance
(always labelled ``.``) and its jobs, where like leaves are combined as
``N*[label]``.
``-p/--parent-ids`` and ``--parent-label`` would only label the root, and
are refused rather than accepted for nothing; ``-L/--level`` stops at the
root when negative.  The root is shown unless details (``-x``, ``-d``,
``--detail-format``) or job ids are given, or ``--skip-root`` says otherwise.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from typing import Any

from pflux.cli import base
from pflux.errors import PfluxError, UsageError

DETAILS = {
    "default": (
        "{id.f58:>12} {username:<8.8} {status_abbrev:>2.2} {ntasks:>6h}"
        " {nnodes:>6h} {runtime!F:>8h}"
    ),
}
CONNECTORS = {  # pipe, tee, elbow, blank
    "box": ("│   ", "├── ", "└── ", "    "),
    "ascii": ("|   ", "|-- ", "`-- ", "    "),
    "compact": ("│ ", "├─", "└─", "  "),
}


def _yes_no(text: str) -> bool:
    if text not in ("yes", "no"):
        raise argparse.ArgumentTypeError("--skip-root requires either 'yes' or 'no'")
    return text == "yes"


def parser() -> argparse.ArgumentParser:
    p = base.parser("pstree", "Show the instance's jobs as a tree by name.")
    p.add_argument("-a", "--all", action="store_true", help="jobs in all states, inactive too")
    p.add_argument(
        "-c", "--count", type=int, default=1000, metavar="N", help="at most N jobs (default 1000)"
    )
    p.add_argument(
        "-f",
        "--filter",
        default=None,
        metavar="STATE|RESULT",
        help="jobs in these states or with these results (default: running)",
    )
    p.add_argument(
        "-x", "--extended", action="store_true", help="print each job's details before the tree"
    )
    p.add_argument(
        "-l", "--long", action="store_true", help="do not cut lines at the terminal's width"
    )
    p.add_argument(
        "-L", "--level", type=int, default=999, metavar="N", help="descend N levels (<0: root only)"
    )
    p.add_argument(
        "-p", "--parent-ids", action="store_true", help="refused: pflux has no nested instances"
    )
    p.add_argument("-n", "--no-header", action="store_true", help="no header with details")
    p.add_argument(
        "-X", "--no-combine", action="store_true", help="do not combine like jobs as N*[label]"
    )
    p.add_argument("-o", "--label", metavar="FORMAT", help="label format (default '{name}')")
    p.add_argument(
        "--parent-label", metavar="FORMAT", help="refused: pflux has no nested instances"
    )
    p.add_argument(
        "--detail-format", metavar="FORMAT", help="a details format (implies --extended)"
    )
    p.add_argument(
        "-d", "--details", metavar="NAME", help=f"a named details format ({', '.join(DETAILS)})"
    )
    p.add_argument("-C", "--compact", action="store_true", help="compact tree connectors")
    p.add_argument("--ascii", action="store_true", help="ASCII tree connectors")
    p.add_argument(
        "--skip-root", type=_yes_no, metavar="yes|no", help="leave out (or show) the root"
    )
    p.add_argument("--uri", help="the instance to ask (default: PFLUX_URI)")
    p.add_argument("jobids", nargs="*", metavar="JOBID", help="only these jobs")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    return base.run("pstree", lambda: _pstree(args))


def _pstree(args: argparse.Namespace) -> int:
    from pflux.cli import jobformat

    if args.parent_ids or args.parent_label:
        option = "--parent-ids" if args.parent_ids else "--parent-label"
        raise UsageError(f"{option}: pflux runs no nested instances, so no job is a parent")
    if args.ascii and args.compact:
        raise UsageError("Choose only one of --ascii, --compact")
    label = jobformat.JobFormat(args.label or ("{name}:{status_abbrev}" if args.all else "{name}"))
    details = None
    if args.extended or args.details or args.detail_format:
        fmt = args.detail_format or DETAILS.get(args.details or "default")
        if fmt is None:
            raise PfluxError(f"Unknown --details format '{args.details}'")
        details = jobformat.JobFormat(fmt)
    skip_root = details is not None or bool(args.jobids)
    if args.skip_root is not None:
        skip_root = args.skip_root
    if details is not None and not skip_root:
        raise UsageError("--skip-root=no: the root has no job details to show here")
    jobs = _fetch(args) if args.level >= 0 else []
    leaves = _leaves(jobs, label, details, combine=not args.no_combine)
    lines = []
    if details is not None and not args.no_header:
        lines.append(details.header())
    style = CONNECTORS["compact" if args.compact else "ascii" if args.ascii else "box"]
    if not skip_root:
        lines.append(".")
    for i, (prefix, text, count) in enumerate(leaves):
        shown = f"{count}*[{text}]" if count > 1 else text
        connector = "" if skip_root else style[2] if i == len(leaves) - 1 else style[1]
        lines.append(f"{prefix}{connector}{shown}")
    if not args.long:
        width = shutil.get_terminal_size((132, 25)).columns
        lines = [line if len(line) <= width else line[: width - 1] + "+" for line in lines]
    sys.stdout.write("".join(line + "\n" for line in lines))
    return 0


def _leaves(jobs: list[Any], label: Any, details: Any, *, combine: bool) -> list[list[Any]]:
    """``[details, label, count]`` per leaf: like jobs combined unless ``combine`` is False."""
    leaves: list[list[Any]] = []
    seen: dict[tuple[str, str], list[Any]] = {}
    for job in jobs:
        prefix = details.format(job) + " " if details is not None else ""
        text = label.format(job)
        same = seen.get((prefix, text))
        if same is not None and combine:
            same[2] += 1
            continue
        leaf = [prefix, text, 1]
        leaves.append(leaf)
        seen[(prefix, text)] = leaf
    return leaves


def _fetch(args: argparse.Namespace) -> list[Any]:
    from pflux.api import Client
    from pflux.cli.jobfields import JobInfo
    from pflux.cli.jobs import filter_masks
    from pflux.spec.fluid import JobID

    with Client(args.uri) as client:
        if args.jobids:
            if args.all or args.filter:
                sys.stderr.write(
                    f"{base.PROG}-pstree: WARNING: filtering options ignored with jobid list\n"
                )
            listed = client.job_info_many([JobID.parse(t) for t in args.jobids], ["all"])
            for text, info in zip(args.jobids, listed, strict=True):
                if isinstance(info, Exception):
                    raise PfluxError(f"{text}: {info}")
            return [JobInfo(info.to_dict()) for info in listed]  # type: ignore[union-attr]
        names = ("pending,running,inactive" if args.all else args.filter or "running").split(",")
        states, results = filter_masks(names)
        jobs = client.list_jobs(
            attrs=["all"],
            max_entries=max(args.count, 0),
            userid=os.getuid(),
            states=states,
            results=results,
        )
    return [JobInfo(job.to_dict()) for job in jobs]
