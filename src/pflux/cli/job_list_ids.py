"""``pflux job list-ids [-W STATE] ID...``: each job's job-list attributes as JSON, one
a line, once job-list knows the job (``-W``: once it is in or past STATE)."""

from __future__ import annotations

import argparse

from pflux.cli import base, jobcommon
from pflux.cli.job_list import NAME, for_a_terminal, print_jobs
from pflux.cli.job_raiseall import STATES
from pflux.errors import PfluxError
from pflux.spec.states import State


def main(argv: list[str]) -> int:
    parser = base.parser("job list-ids", "List jobs by id as JSON, one a line.")
    jobcommon.add_uri(parser)
    parser.add_argument(
        "-W", "--wait-state", default="depend", metavar="STATE", help="once in or past STATE"
    )
    parser.add_argument("ids", nargs="+", metavar="ID")
    args = parser.parse_args(argv)
    if for_a_terminal():
        return 1
    return base.run(NAME, lambda: _list_ids(args))


def _list_ids(args: argparse.Namespace) -> int:
    from pflux import Client
    from pflux.errors import RPCError

    state = STATES.get(args.wait_state.lower())
    if state is None or state in (State.PENDING, State.RUNNING, State.ACTIVE):
        raise PfluxError("invalid job state specified")
    jobids = jobcommon.job_ids(args.ids)
    with Client(args.uri) as client:
        for jobid in jobids:
            try:
                job = client.job_info(jobid, state=0 if state == State.NEW else int(state))
            except RPCError as exc:
                raise PfluxError(f"flux job-list.list-id: {exc.errstr}") from None
            print_jobs([dict(job.answered)])
    return 0
