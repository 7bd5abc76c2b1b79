"""``pflux job taskmap [OPTION] JOBID|TASKMAP``: a job's RFC 34 task map, or a task map
given as text, printed or questioned.

As ``flux job taskmap``: a job id waits for the job's ``shell.start`` event and
takes its task map; anything else is decoded as RFC 34 JSON, a raw map
(``0-3;4-7``) or a ``PMI_process_mapping``. One option at most: ``--taskids=NODEID``
(an idset), ``--ntasks=NODEID``, ``--nodeid=TASKID``, ``--hostname=TASKID`` (from
the job's R), ``--to=raw|pmi|multiline|hosts``; none prints the RFC 34 map.
"""

from __future__ import annotations

import argparse
import errno
import json

from pflux.cli import base, jobcommon
from pflux.errors import JobIDError, PfluxError, UsageError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from pflux import Client
    from pflux.spec.fluid import JobID
    from pflux.spec.taskmap import Taskmap

NAME = "job"
FORMATS = ("raw", "pmi", "multiline", "hosts")


def main(argv: list[str]) -> int:
    parser = base.parser("job taskmap", "Print or question a job's task map.")
    parser.usage = f"{base.PROG} job taskmap [OPTIONS] JOBID|TASKMAP"
    jobcommon.add_uri(parser)
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--taskids", metavar="NODEID", help="print idset of tasks on node NODEID")
    which.add_argument("--ntasks", metavar="NODEID", help="print number of tasks on node NODEID")
    which.add_argument(
        "--nodeid", metavar="TASKID", help="print the shell rank/nodeid on which a taskid executed"
    )
    which.add_argument(
        "--hostname", metavar="TASKID", help="print the hostname on which a taskid executed"
    )
    which.add_argument(
        "--to",
        metavar="FORMAT",
        help="convert an RFC 34 taskmap to another format (raw, pmi, hosts, or multiline)",
    )
    parser.add_argument("target", metavar="JOBID|TASKMAP", help="a job id, or a task map")
    args = parser.parse_args(argv)
    return base.run(NAME, lambda: _taskmap(args))


def _number(option: str, text: str) -> int:
    if not text.isascii() or not text.isdigit():
        raise UsageError(f"taskmap: --{option}: must be an integer >= 0, got {text!r}")
    return int(text)


def _taskmap(args: argparse.Namespace) -> int:
    from pflux.spec import taskmap
    from pflux.spec.fluid import JobID

    if args.to is not None and args.to not in FORMATS:
        raise PfluxError(f"invalid value --to={args.to}")
    jobid: JobID | None
    try:
        jobid = JobID.parse(args.target)
    except JobIDError:
        jobid = None
    if jobid is None:
        if args.hostname is not None:
            raise PfluxError("taskmap: can't use --hostname without a jobid")
        if args.to == "hosts":
            raise PfluxError("taskmap: can't use --to=hosts without a jobid")
        try:
            _answer(args, taskmap.decode(args.target), [])
        except taskmap.TaskmapError as exc:
            raise PfluxError(f"error decoding taskmap: {exc}") from None
        return 0
    from pflux import Client

    with Client(args.uri) as client:
        found = _job_taskmap(client, jobid)
        hosts = _hosts(client, jobid) if args.hostname is not None or args.to == "hosts" else []
    _answer(args, found, hosts)
    return 0


def _answer(args: argparse.Namespace, found: Taskmap, hosts: list[str]) -> None:
    """Print what the options ask of the task map (TaskmapError for a bad node or task)."""
    if args.taskids is not None:
        print(found.taskids(_number("taskids", args.taskids)).encode())
    elif args.ntasks is not None:
        print(found.ntasks(_number("ntasks", args.ntasks)))
    elif args.nodeid is not None:
        print(found.nodeid(_number("nodeid", args.nodeid)))
    elif args.hostname is not None:
        print(_host(hosts, found.nodeid(_number("hostname", args.hostname))))
    elif args.to == "raw":
        print(found.encode_raw())
    elif args.to == "pmi":
        print(found.encode_pmi())
    elif args.to == "multiline":
        for task in range(found.total_ntasks):
            print(f"{task}: {found.nodeid(task)}")
    elif args.to == "hosts":
        for node in range(found.nnodes):
            print(f"{_host(hosts, node)}: {found.taskids(node).encode()}")
    else:
        print(found.encode())


def _host(hosts: list[str], node: int) -> str:
    if node >= len(hosts):
        raise PfluxError(f"failed to get hostname for node {node}")
    return hosts[node]


def _job_taskmap(client: Client, jobid: JobID) -> Taskmap:
    """The task map of the job's ``shell.start`` event, waiting for it."""
    from pflux.errors import RPCError
    from pflux.spec import taskmap

    try:
        for event in client.events(jobid, path="guest.exec.eventlog"):
            if event.name == "shell.start":
                try:
                    return taskmap.from_json((event.context or {}).get("taskmap"))
                except taskmap.TaskmapError:
                    raise PfluxError("failed to get taskmap from shell.start event") from None
    except RPCError as exc:
        if exc.errnum == errno.ENOENT:
            raise PfluxError("Unable to get job taskmap: no such job") from None
        raise PfluxError(f"waiting for shell.start event: {exc.errstr}") from None
    raise PfluxError("No taskmap found for job")


def _hosts(client: Client, jobid: JobID) -> list[str]:
    """The job's hosts, in the order of its nodes (R's ranks)."""
    from pflux.errors import ResourceError, RPCError
    from pflux.spec.resource import ResourceSet

    try:
        R = client.lookup(jobid, ["R"])["R"]  # noqa: N806 - the RFC's name
        return list(ResourceSet.from_json(json.loads(R)).nodelist)
    except (RPCError, ResourceError, KeyError, ValueError):
        raise PfluxError("failed to get hostlist for job") from None
