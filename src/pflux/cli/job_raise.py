"""``pflux job raise [-s N] [-t TYPE] ID... [--] [MESSAGE...]``: raise an exception on jobs.

As ``flux job raise``: the job ids come first, and the first word that is not
a job id (or the word after ``--``) starts the exception note, which may
instead be given with ``--message`` but not both. Severity 0 (the default) is
fatal; the default type is ``cancel``. ``pflux job cancel`` is this command
with the type fixed to ``cancel`` and the severity to 0.
"""

from __future__ import annotations

import argparse

from pflux.cli import base, jobcommon
from pflux.errors import PfluxError
from pflux.spec.fluid import JobID

NAME = "job"


def main(argv: list[str]) -> int:
    return run(argv, cancel=False)


def run(argv: list[str], *, cancel: bool) -> int:
    """``job raise``, or with ``cancel`` ``job cancel``."""
    command = "job cancel" if cancel else "job raise"
    parser = base.parser(command, "Cancel jobs." if cancel else "Raise an exception on jobs.")
    parser.usage = f"{base.PROG} {command} [OPTIONS] ID... [--] [MESSAGE...]"
    jobcommon.add_uri(parser)
    if not cancel:
        parser.add_argument(
            "-s", "--severity", type=int, default=0, metavar="N", help="0 (fatal, the default) to 7"
        )
        parser.add_argument("-t", "--type", default="cancel", help="exception type (cancel)")
    parser.add_argument("-m", "--message", metavar="NOTE", help="the exception note")
    parser.add_argument("words", nargs="+", metavar="ID", help="job ids, then the note")
    before, dashes, after = _split(argv)
    args = parser.parse_args(before)
    if cancel:
        args.severity, args.type = 0, "cancel"
    return base.run(NAME, lambda: _raise(args, after if dashes else None))


def _split(argv: list[str]) -> tuple[list[str], bool, list[str]]:
    """argv before the first ``--``, whether there was one, and what follows it."""
    if "--" not in argv:
        return argv, False, []
    at = argv.index("--")
    return argv[:at], True, argv[at + 1 :]


def parse_ids_and_note(words: list[str], after: list[str] | None) -> tuple[list[JobID], str]:
    """The leading job ids, and the rest as the note (words after ``--`` included)."""
    jobids: list[JobID] = []
    for word in words:
        try:
            jobids.append(JobID.parse(word))
        except PfluxError:
            break
    if not jobids:
        JobID.parse(words[0])  # raises, naming the word that is not a job id
    rest = words[len(jobids) :]
    if after is not None:
        rest = [*rest, "--", *after] if rest else after
    return jobids, " ".join(rest)


def _raise(args: argparse.Namespace, after: list[str] | None) -> int:
    from pflux import Client

    jobids, note = parse_ids_and_note(args.words, after)
    if args.message is not None:
        if note:
            raise PfluxError("Do not set note on command line and with --message")
        note = args.message
    with Client(args.uri) as client:
        errors = client.raise_many(jobids, args.type, args.severity, note)
    return jobcommon.report_failures(NAME, jobids, errors)
