"""What ``pflux top`` shows, apart from the terminal: one snapshot of an instance,
fetched with a few requests (never one per job), and the text of its two panes.

Kept free of curses so that the panes are plain strings a test can read.
"""

from __future__ import annotations

import pwd
from dataclasses import dataclass

from pflux import Client, JobListing
from pflux.cli.printable import printable
from pflux.spec.fluid import JobID
from pflux.spec.states import State

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

# the job list pane's columns, as flux top's (flux jobs' names)
_JOB_ATTRS = ("userid", "state", "ntasks", "nnodes", "t_run", "name", "annotations", "t_submit")


@dataclass
class Bar:
    """One resource's bar: how many are used and down of the total."""

    used: int = 0
    down: int = 0
    total: int = 0


@dataclass
class Counts:
    """Jobs by state; inactive ones counted once each, as they become inactive."""

    pending: int = 0
    running: int = 0
    complete: int = 0
    failed: int = 0
    #: the latest t_inactive counted: job-list is asked only for jobs inactive after it
    since: float = 0.0

    def add_inactive(self, jobs: list[JobListing]) -> None:
        for job in jobs:
            if job.success:
                self.complete += 1
            else:
                self.failed += 1
            self.since = max(self.since, job.t_inactive or 0.0)


@dataclass
class Snapshot:
    """An instance as ``top`` draws it."""

    nodes: Bar
    cores: Bar
    gpus: Bar
    counts: Counts
    size: int
    depth: int
    starttime: float
    version: str
    expiration: float
    jobs: list[JobListing]


def fetch(client: Client, counts: Counts, *, queue: str | None = None) -> Snapshot:
    """The instance now; ``counts`` carries the inactive jobs counted so far; ``queue``:
    only that queue's jobs are counted and listed."""
    from pflux.spec.resource import ResourceSet

    attrs = client.attrs()
    status = client.resource_status()
    sets = {
        name: ResourceSet.from_json(status.get(name) or {"version": 1}, allow_empty=True)
        for name in ("all", "allocated", "down")
    }
    used, down, every = sets["allocated"], sets["down"], sets["all"]
    nodes = Bar(used.nnodes, down.nnodes, every.nnodes)
    cores = Bar(used.ncores(), down.ncores(), every.ncores())
    gpus = Bar(used.ngpus(), down.ngpus(), every.ngpus())
    queues = () if queue is None else (queue,)
    active = client.list_jobs(states=int(State.ACTIVE), attrs=_JOB_ATTRS, queues=queues)
    counts.pending = sum(1 for job in active if job.state is not None and job.state & State.PENDING)
    running = [job for job in active if job.state is not None and job.state & State.RUNNING]
    counts.running = len(running)
    inactive = client.list_jobs(
        states=int(State.INACTIVE),
        attrs=("t_inactive", "success"),
        since=counts.since,
        queues=queues,
    )
    counts.add_inactive(inactive)
    running.sort(key=lambda job: job.t_submit or 0.0, reverse=True)  # newest first
    return Snapshot(
        nodes,
        cores,
        gpus,
        counts=counts,
        size=int(attrs.get("size", "1")),
        depth=int(attrs.get("instance-level", "0")),
        starttime=float(attrs.get("broker.starttime", "0")),
        version=attrs.get("version", ""),
        expiration=float(every.expiration),
        jobs=running,
    )


def nested_uri(job: JobListing) -> str | None:
    """The URI a nested instance's job posted (its ``user.uri`` memo), if any."""
    user: Any = (job.annotations or {}).get("user")
    uri = user.get("uri") if isinstance(user, dict) else None
    return uri if isinstance(uri, str) and uri else None


def duration(seconds: float) -> str:
    """RFC 23's duration with two significant digits, as flux top prints times."""
    seconds = abs(seconds)
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("m", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.2g}{unit}"
    return f"{seconds:.2g}s"


def bar(name: str, res: Bar, width: int) -> str:
    """``cores [||||      ] 4/8``: used from the left, down from the right."""
    prefix, suffix = f"{name:>5} [", f" {res.used}/{res.total}]"
    slots = max(width - len(prefix) - len(suffix), 1)
    used = round(slots * res.used / res.total) if res.total else 0
    down = round(slots * res.down / res.total) if res.total else 0
    fill = "|" * used + " " * max(slots - used - down, 0) + "#" * down
    return prefix + fill[:slots] + suffix


def summary(snap: Snapshot, title: str, now: float, *, details: bool = True) -> list[str]:
    """The summary pane's lines."""
    c = snap.counts
    left = snap.expiration - now if snap.expiration else 0.0
    timeleft = f"{duration(left)}⌚" if left > 0 else "∞"  # the instance's time left
    jobs = [f"{c.pending:6d} pending", f"{c.running:6d} running"]
    if details:
        jobs += [f"{c.complete:6d} complete", f"{c.failed:6d} failed"]
    else:
        jobs.append(f"{c.complete + c.failed:6d} inactive")
    info = f"size: {snap.size}"
    if snap.depth:
        info += f"  depth: {snap.depth}"
    info += f"  uptime: {duration(now - snap.starttime)}  {snap.version}"
    lines = [f"{title}  {timeleft}".strip()]
    lines += [
        bar(name, res, 40) + "  " + text
        for name, res, text in zip(
            ("nodes", "cores", "gpus"),
            (snap.nodes, snap.cores, snap.gpus),
            jobs[:3],
            strict=True,
        )
    ]
    lines += [" " * 42 + text for text in jobs[3:]]
    lines.append(info)
    return lines


HEADER = f"{'JOBID':>13} {'USER':>8} {'ST':>2} {'NTASKS':>6} {'NNODES':>6} {'RUNTIME':>7} NAME"


def job_line(job: JobListing, now: float) -> str:
    """One running job's row, in flux top's columns."""
    runtime = duration(now - job.t_run) if job.t_run else ""
    return (
        f"{JobID(job.id).f58:>13.13} {_user(job.userid):>8.8} "
        f"{job.state.short if job.state else '':>2} {job.ntasks or 0:6d} "
        f"{job.nnodes or 0:6d} {runtime:>7.7} {printable(job.name or '')}"
    )


_USERS: dict[int, str] = {}


def _user(uid: int | None) -> str:
    if uid is None:
        return ""
    if uid not in _USERS:
        try:
            _USERS[uid] = pwd.getpwuid(uid).pw_name
        except KeyError:
            _USERS[uid] = str(uid)
    return _USERS[uid]
