"""``pflux job submit [-u N] [-f FLAGS] [FILE]``: submit a ready jobspec, as ``flux job submit``.

The jobspec is YAML or JSON (JSON if it starts with ``{``), from FILE or, with
none or ``-``, from standard input; job-ingest validates it. The new job's id
is printed in f58. Flags are ``debug`` and ``waitable`` (comma-separated, or
the option repeated); flux's ``signed`` and ``novalidate`` do not exist in
pflux, which signs J itself and always validates.
"""

from __future__ import annotations

import argparse
import sys

from pflux.cli import base, jobcommon
from pflux.errors import PfluxError

NAME = "job"
FLAGS = ("debug", "waitable")


def main(argv: list[str]) -> int:
    parser = base.parser("job submit", "Submit a jobspec file (YAML or JSON).")
    jobcommon.add_uri(parser)
    parser.add_argument(
        "-u",
        "--urgency",
        default="16",
        metavar="N",
        help="urgency 0-31, or hold (0), default (16), expedite (31)",
    )
    parser.add_argument(
        "-f",
        "--flags",
        action="append",
        default=[],
        metavar="FLAGS",
        help=f"submit flags, comma-separated: {', '.join(FLAGS)}",
    )
    parser.add_argument("file", nargs="?", default="-", metavar="FILE", help="jobspec; - is stdin")
    args = parser.parse_args(argv)
    return base.run(NAME, lambda: _submit(args))


def _submit(args: argparse.Namespace) -> int:
    from pflux import Client
    from pflux.cli.job_urgency import parse_urgency
    from pflux.spec.jobspec import decode

    flags = {flag for option in args.flags for flag in option.split(",") if flag}
    for flag in sorted(flags):
        if flag not in FLAGS:
            raise PfluxError(f"unknown flag: {flag}")
    urgency = parse_urgency(args.urgency)
    data = _read(args.file)
    if not data.strip():
        raise PfluxError("required jobspec is empty")
    jobspec = decode(data)
    if not isinstance(jobspec, dict):
        raise PfluxError(f"{args.file}: a jobspec must be a mapping")
    with Client(args.uri) as client:
        jobid = client.submit(
            jobspec, urgency=urgency, waitable="waitable" in flags, debug="debug" in flags
        )
    print(jobcommon.f58(jobid))
    return 0


def _read(filename: str) -> bytes:
    try:
        if filename == "-":
            return sys.stdin.buffer.read()
        with open(filename, "rb") as file:
            return file.read()
    except OSError as exc:
        raise PfluxError(f"{filename}: {exc.strerror or exc}") from None
