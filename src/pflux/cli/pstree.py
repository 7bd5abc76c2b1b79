"""``pflux pstree``: the instance's jobs as a tree by name, as flux-pstree(1).

A running job whose nested instance posted its URI (``pflux.cli.nested``) is a
parent: labelled with ``--parent-label`` (``-p``: its id first), it shows the jobs of
that instance below it, down to ``-L/--level`` levels (the root's jobs are level 0;
negative: the root alone). Like leaves are combined as ``N*[label]``; a parent with
jobs under it never is. The root is labelled as a parent: the enclosing job's
listing when this instance is nested, else ``.`` for the id and the name. It is
shown unless details (``-x``, ``-d``, ``--detail-format``) or job ids are given, or
``--skip-root`` says otherwise.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

from pflux.cli import base
from pflux.errors import PfluxError, UsageError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

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
        "-p", "--parent-ids", action="store_true", help="put job ids in the parents' labels"
    )
    p.add_argument("-n", "--no-header", action="store_true", help="no header with details")
    p.add_argument(
        "-X", "--no-combine", action="store_true", help="do not combine like jobs as N*[label]"
    )
    p.add_argument("-o", "--label", metavar="FORMAT", help="label format (default '{name}')")
    p.add_argument(
        "--parent-label", metavar="FORMAT", help="label format of parents (default: --label's)"
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


class _Node:
    """One line of the tree and the nodes below it."""

    __slots__ = ("children", "count", "label", "prefix")

    def __init__(self, prefix: str, label: str) -> None:
        self.prefix = prefix
        self.label = label
        self.count = 1
        self.children: list[_Node] = []

    def add(self, node: _Node, seen: dict[tuple[str, str], _Node] | None) -> None:
        """Add ``node`` below; with ``seen`` (combining), a leaf like an earlier one
        counts there instead."""
        if seen is None or node.children:
            self.children.append(node)
            return
        same = seen.get((node.prefix, node.label))
        if same is not None:
            same.count += 1
            return
        seen[(node.prefix, node.label)] = node
        self.children.append(node)

    def lines(self, out: list[str], style: tuple[str, ...], stack: list[str], joint: str) -> None:
        """Append this node's line and those below it (``stack``: the indents above)."""
        label = f"{self.count}*[{self.label}]" if self.count > 1 else self.label
        out.append(f"{self.prefix}{''.join(stack[:-1])}{joint}{label}")
        for child in self.children:
            last = child is self.children[-1]
            stack.append(style[3] if last else style[0])
            child.lines(out, style, stack, style[2] if last else style[1])
            stack.pop()


class _Tree:
    """What the options ask: the formats, filters and depth, for every level."""

    def __init__(self, args: argparse.Namespace) -> None:
        from pflux.cli import jobformat

        label = args.label or ("{name}:{status_abbrev}" if args.all else "{name}")
        parent = args.parent_label or args.label or "{name}"
        if args.parent_ids:
            parent = "{id.f58} " + parent
        self.label = jobformat.JobFormat(label)
        self.parent = jobformat.JobFormat(parent)
        self.details = None
        if args.extended or args.details or args.detail_format:
            fmt = args.detail_format or DETAILS.get(args.details or "default")
            if fmt is None:
                raise PfluxError(f"Unknown --details format '{args.details}'")
            self.details = jobformat.JobFormat(fmt)
        names = ("pending,running,inactive" if args.all else args.filter or "running").split(",")
        self.names = names
        self.count = max(args.count, 0)
        self.max_level = args.level
        self.combine = not args.no_combine

    def node(self, job: Any, level: int) -> _Node:
        """A job's node: a parent's has the jobs of its instance below it."""
        from pflux.spec.states import State

        uri = job.get("uri")
        parent = bool(uri) and job.state_id == State.RUN
        prefix = self.details.format(job) + " " if self.details is not None else ""
        node = _Node(prefix, (self.parent if parent else self.label).format(job))
        if parent and level + 1 <= self.max_level:
            try:
                jobs = self.jobs(uri)
            except PfluxError:
                return node  # the instance is gone, or not ours: no jobs under it
            self.fill(node, jobs, level + 1)
        return node

    def fill(self, node: _Node, jobs: list[Any], level: int) -> None:
        seen: dict[tuple[str, str], _Node] | None = {} if self.combine else None
        for job in jobs:
            node.add(self.node(job, level), seen)

    def jobs(self, uri: str | None) -> list[Any]:
        """The user's jobs in the instance at ``uri`` that the filter selects."""
        from pflux import Client
        from pflux.cli.jobfields import JobInfo
        from pflux.cli.jobs import filter_masks

        states, results = filter_masks(self.names)
        with Client(uri) as client:
            jobs = client.list_jobs(
                attrs=["all"],
                max_entries=self.count,
                userid=os.getuid(),
                states=states,
                results=results,
            )
        return [JobInfo(job.to_dict()) for job in jobs]


def _pstree(args: argparse.Namespace) -> int:
    if args.ascii and args.compact:
        raise UsageError("Choose only one of --ascii, --compact")
    tree = _Tree(args)
    skip_root = tree.details is not None or bool(args.jobids)
    if args.skip_root is not None:
        skip_root = args.skip_root
    if skip_root:
        root = _Node("", ".")
    else:
        job = _root_job(args.uri)
        details = tree.details.format(job) + " " if tree.details is not None else ""
        root = _Node(details, tree.parent.format(job))
    if args.level >= 0:
        tree.fill(root, _listed(args) if args.jobids else tree.jobs(args.uri), 0)
    lines: list[str] = []
    if tree.details is not None and not args.no_header:
        lines.append(tree.details.header())
    style = CONNECTORS["compact" if args.compact else "ascii" if args.ascii else "box"]
    for node in root.children if skip_root else [root]:
        node.lines(lines, style, [], "")
    if not args.long:
        width = shutil.get_terminal_size((132, 25)).columns
        lines = [line if len(line) <= width else line[: width - 1] + "+" for line in lines]
    sys.stdout.write("".join(line + "\n" for line in lines))
    return 0


def _listed(args: argparse.Namespace) -> list[Any]:
    """The jobs named on the command line, as job-list has them."""
    from pflux import Client
    from pflux.cli.jobfields import JobInfo
    from pflux.spec.fluid import JobID

    if args.all or args.filter:
        sys.stderr.write(
            f"{base.PROG}-pstree: WARNING: filtering options ignored with jobid list\n"
        )
    with Client(args.uri) as client:
        listed = client.job_info_many([JobID.parse(t) for t in args.jobids], ["all"])
    for text, info in zip(args.jobids, listed, strict=True):
        if isinstance(info, Exception):
            raise PfluxError(f"{text}: {info}")
    return [JobInfo(info.to_dict()) for info in listed]  # type: ignore[union-attr]


def _root_job(uri: str | None) -> Any:
    """The root's listing: the enclosing job's, for a nested instance; else one made
    from the instance's attributes, whose id and name are ``.``."""
    from pflux import Client
    from pflux.cli.jobfields import JobInfo
    from pflux.spec.fluid import JobID
    from pflux.spec.states import State

    class _RootJob(JobInfo):
        """The root instance, not a job: its id is ``.`` in every encoding."""

        __slots__ = ()

        def get(self, field: str) -> Any:
            return "." if field == "id" or field.startswith("id.") else super().get(field)

    with Client(uri) as client:
        attrs = client.attrs()
    size = int(attrs.get("size", "1"))
    data: dict[str, Any] | None = None
    if "jobid" in attrs and "parent-uri" in attrs:
        try:
            with Client(attrs["parent-uri"]) as parent:
                data = parent.job_info(JobID.parse(attrs["jobid"]), ["all"]).to_dict()
        except PfluxError:
            data = None  # the enclosing instance is gone: described from here
    if data is None:
        data = {
            "id": 0,
            "userid": int(attrs.get("security.owner", os.getuid())),
            "state": int(State.RUN),
            "name": ".",
            "ntasks": size,
            "nnodes": size,
            "nodelist": attrs.get("hostname", ""),
            "annotations": {"user": {"uri": attrs.get("local-uri", "")}},
        }
        if "broker.starttime" in attrs:
            data["t_run"] = float(attrs["broker.starttime"])
    data["ranks"] = f"0-{size - 1}"
    return JobInfo(data) if data["id"] else _RootJob(data)
