"""``pflux job raiseall [-s N] [-u USER] [-S STATES] [-f] TYPE [NOTE...]``.

As ``flux job raiseall``: an exception of TYPE on every job of the user (``-u``:
another user, or ``all``, the instance owner only) in STATES (default: every
active state), of severity N (default 7, not fatal; 0 is fatal), with the words
after TYPE as its note. Without ``-f`` nothing is raised: it says how many jobs
match. One ``job-manager.raiseall`` request.
"""

from __future__ import annotations

import argparse
import os

from pflux.cli import base, jobcommon
from pflux.errors import PfluxError, UsageError
from pflux.spec.states import State

NAME = "job"

# flux_job_strtostate's names and short names, the three unions' among them
STATES = {
    "new": State.NEW,
    "depend": State.DEPEND,
    "priority": State.PRIORITY,
    "sched": State.SCHED,
    "run": State.RUN,
    "cleanup": State.CLEANUP,
    "inactive": State.INACTIVE,
    "pending": State.PENDING,
    "running": State.RUNNING,
    "active": State.ACTIVE,
    "n": State.NEW,
    "d": State.DEPEND,
    "p": State.PRIORITY,
    "s": State.SCHED,
    "r": State.RUN,
    "c": State.CLEANUP,
    "i": State.INACTIVE,
    "pd": State.PENDING,
    "ru": State.RUNNING,
    "a": State.ACTIVE,
}


def main(argv: list[str]) -> int:
    parser = base.parser("job raiseall", "Raise an exception on multiple jobs.")
    parser.usage = f"{base.PROG} job raiseall [OPTIONS] TYPE [MESSAGE...]"
    jobcommon.add_uri(parser)
    parser.add_argument(
        "-s", "--severity", default="7", metavar="N", help="severity 0-7 (0 is fatal, default 7)"
    )
    parser.add_argument(
        "-u", "--user", metavar="USER", help="target user or 'all' (instance owner only)"
    )
    parser.add_argument(
        "-S",
        "--states",
        action="append",
        metavar="STATES",
        help="target job states (default: ACTIVE)",
    )
    parser.add_argument("-f", "--force", action="store_true", help="confirm the command")
    parser.add_argument("type", metavar="TYPE", help="the exception type")
    parser.add_argument("note", nargs="*", metavar="MESSAGE", help="the exception note")
    args = parser.parse_args(argv)
    return base.run(NAME, lambda: _raiseall(args))


def _severity(text: str) -> int:
    if not text.isascii() or not text.isdigit() or int(text) > 7:
        raise UsageError(f"raiseall: --severity: must be 0-7, got {text!r}")
    return int(text)


def user_id(text: str) -> int:
    """``all`` (-1), a user name or a uid, as flux-job's ``--user``."""
    try:
        return jobcommon.user_id(text)
    except PfluxError:
        raise PfluxError(f"unknown user {text}") from None


def states_mask(options: list[str]) -> State:
    """The states named (comma-separated, any case) as one mask, as flux-job parses them."""
    mask = State(0)
    for name in ",".join(options).split(","):
        state = STATES.get(name.strip().lower())
        if state is None:
            raise PfluxError(f"error parsing --states: {name} is unknown")
        mask |= state
    if not mask:
        raise PfluxError("no states specified")
    return mask


def _raiseall(args: argparse.Namespace) -> int:
    from pflux import Client
    from pflux.errors import RPCError

    severity = _severity(args.severity)
    states = State.ACTIVE
    if args.states:
        states = states_mask(args.states)
        if states & State.INACTIVE:
            raise PfluxError("Exceptions cannot be raised on inactive jobs")
    userid = os.getuid() if args.user is None else user_id(args.user)
    with Client(args.uri) as client:
        try:
            count = client.raise_all(
                args.type,
                severity,
                " ".join(args.note),
                userid=userid,
                states=int(states),
                dry_run=not args.force,
            )
        except RPCError as exc:
            raise PfluxError(f"raiseall: {exc.errstr}") from None
    if count and not args.force:
        jobcommon.note(NAME, f"Command matched {count} jobs (-f to confirm)")
    elif count:
        # job-manager.raiseall raises on every job it counts: there are no partial errors
        jobcommon.note(NAME, f"Raised exception on {count} jobs (0 errors)")
    else:
        jobcommon.note(NAME, "Command matched 0 jobs")
    return 0
