"""``pflux jobs -R``: the jobs of the nested instances the listed jobs run, listed below
each, as ``flux jobs --recursive`` does.

A running job that posted its instance's ``uri`` (a ``batch`` or ``alloc`` job), of
the caller's unless ``--recurse-all``, is listed into: a line ``\\nPATH:`` (the job
ids from the top, ``/``-separated), with ``--stats`` that instance's counts, then its
jobs under the same options, and so on down to ``-L/--level``. With ``--json``
each such job gets a ``jobs`` array. An instance that cannot be reached is skipped,
as flux skips it. The instances are read one after another.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from pflux.cli import options

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from pflux.cli.jobfields import JobInfo

Fetch = Callable[[options.Args], list["JobInfo"]]


def instances(args: options.Args, jobs: list[JobInfo]) -> list[JobInfo]:
    """The listed jobs to descend into."""
    me = os.getuid()
    return [
        job
        for job in jobs
        if job.get("uri")
        and job.get("status_abbrev") == "R"
        and (args.recurse_all or job.get("userid") == me)
    ]


def _child(args: options.Args, job: JobInfo, fetch: Fetch) -> list[JobInfo] | None:
    """The jobs of the instance ``job`` runs, listed with ``args``; None if unreachable."""
    from pflux.errors import PfluxError

    inner = options.Args(**{**vars(args), "uri": str(job.get("uri")), "jobids": []})
    try:
        return fetch(inner)
    except (PfluxError, OSError):
        return None


def _stats_line(uri: str) -> str | None:
    from pflux import Client
    from pflux.errors import PfluxError

    try:
        with Client(uri) as client:
            answer = client.job_stats()
    except (PfluxError, OSError):
        return None
    states = answer["job_states"]
    failed = answer["failed"] + answer["timeout"] + answer["canceled"]
    return (
        f"{states['run'] + states['cleanup']} running, {answer['successful']} completed, "
        f"{failed} failed, {states['depend'] + states['priority'] + states['sched']} pending"
    )


def print_below(
    args: options.Args,
    jobs: list[JobInfo],
    fetch: Fetch,
    show: Callable[[list[JobInfo]], None],
    *,
    path: str = "",
    level: int = 0,
) -> None:
    """Print, below the jobs just shown, each instance's jobs (``show`` prints a list)."""
    if level == args.level:
        return
    for job in instances(args, jobs):
        children = _child(args, job, fetch)
        if children is None:
            continue
        here = f"{path}/{job.get('id.f58')}" if path else str(job.get("id.f58"))
        print(f"\n{here}:")
        if args.stats:
            line = _stats_line(str(job.get("uri")))
            if line is not None:
                print(line)
        show(children)
        print_below(args, children, fetch, show, path=here, level=level + 1)


def json_tree(
    args: options.Args, jobs: list[JobInfo], fetch: Fetch, level: int = 0
) -> list[dict[str, Any]]:
    """The jobs as ``--json`` gives them, each instance's with its ``jobs``."""
    result = []
    descend = set() if level == args.level else {id(job) for job in instances(args, jobs)}
    for job in jobs:
        entry = job.to_dict()
        if id(job) in descend:
            children = _child(args, job, fetch)
            if children is not None:
                entry["jobs"] = json_tree(args, children, fetch, level + 1)
        result.append(entry)
    return result
