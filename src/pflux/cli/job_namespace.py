"""``pflux job namespace [ID...]``: the KVS namespace of each job's guest data.

As ``flux job namespace``: ``job-`` and the id in decimal, one line per id given,
or per line of stdin when none is; a bad id is ``error parsing jobid: "ID"``.
Nothing is asked of the instance.
"""

from __future__ import annotations

import sys

from pflux.cli import base
from pflux.errors import JobIDError, PfluxError

NAME = "job"


def main(argv: list[str]) -> int:
    parser = base.parser("job namespace", "Print the KVS namespace of each job.")
    parser.add_argument(
        "ids", nargs="*", metavar="ID", help="job ids; with none, read from stdin, one per line"
    )
    args = parser.parse_args(argv)
    return base.run(NAME, lambda: _namespaces(args.ids))


def _namespaces(ids: list[str]) -> int:
    from pflux.spec.fluid import JobID

    texts = ids or (line.strip() for line in sys.stdin)
    for text in texts:
        try:
            jobid = JobID.parse(text)
        except JobIDError:
            raise PfluxError(f'error parsing jobid: "{text}"') from None
        print(f"job-{int(jobid)}", flush=True)
    return 0
