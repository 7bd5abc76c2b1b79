"""``pflux job hostpids [-d DELIM] [-r IDSET] [-t DURATION] JOBID``: ``host:pid`` of
each of a running job's tasks, in task rank order, as ``flux job hostpids``.

It waits for the job's shells to start (``shell.start`` in its exec eventlog), then
asks job-exec, which keeps what each shell said of its tasks when they started.
"""

from __future__ import annotations

import argparse
import errno

from pflux.cli import base, jobcommon
from pflux.errors import PfluxError

NAME = "job"


def main(argv: list[str]) -> int:
    parser = base.parser("job hostpids", "Print host:pid of each task of a running job.")
    jobcommon.add_uri(parser)
    parser.add_argument(
        "-d", "--delimiter", metavar="STRING", default=",", help='output delimiter (default ",")'
    )
    parser.add_argument("-r", "--ranks", metavar="IDSET", help="only these task ranks")
    parser.add_argument("-t", "--timeout", metavar="DURATION", help="give up after DURATION")
    parser.add_argument("jobid", metavar="JOBID")
    args = parser.parse_args(argv)
    return base.run(NAME, lambda: _hostpids(args))


def _hostpids(args: argparse.Namespace) -> None:
    from pflux import Client
    from pflux.errors import RPCError
    from pflux.spec.fluid import JobID
    from pflux.spec.idset import IdSet
    from pflux.spec.states import State

    text: str = args.jobid
    ranks: str | None = args.ranks
    wanted = None
    if ranks is not None and ranks != "all":
        try:
            wanted = set(IdSet.decode(ranks))
        except ValueError as exc:
            raise PfluxError(f"--ranks={ranks}: {exc}") from None
    delimiter = args.delimiter
    delimiter = "\n" if delimiter == "\\n" else delimiter
    timeout = jobcommon.duration_arg(args.timeout)
    jobid = JobID.parse(text)
    with Client(args.uri) as client:
        try:
            state = client.job_info(jobid, ["state"]).state
        except RPCError as exc:
            if exc.errnum == errno.ENOENT:
                raise PfluxError(f"{text}: No such job") from None
            raise
        if state is None or not state & State.ACTIVE:
            raise PfluxError(f"hostpids: job {text} is inactive")
        try:
            for event in client.events(jobid, path="guest.exec.eventlog", timeout=timeout):
                if event.name == "shell.start":
                    break
            else:
                raise PfluxError(f"hostpids: job {text} is inactive")
            found = client.hostpids(jobid)
        except RPCError as exc:
            if exc.errnum == errno.ETIMEDOUT:
                raise PfluxError("hostpids: timeout waiting for shell.start event") from None
            if exc.errnum == errno.EPERM:
                raise PfluxError("hostpids: Permission denied") from None
            raise PfluxError(f"hostpids: {exc.errstr}") from None
    print(delimiter.join(hp for rank, hp in enumerate(found) if wanted is None or rank in wanted))
