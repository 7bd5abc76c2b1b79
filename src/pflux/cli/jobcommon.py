"""What the job and queue commands share (flux's ``src/cmd/job/common.c``, in spirit).

Job ids are parsed in the command body rather than by argparse, so that a bad id
is an error (exit 1, as flux) and not a usage error (exit 2). Commands that act
on many jobs send every request before reading any response, so cancelling a
thousand jobs costs one round trip, not a thousand.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable

from pflux.cli import base
from pflux.errors import PfluxError
from pflux.spec.fluid import JobID, ascii_f58_preferred

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from pflux.errors import RPCError


def add_uri(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")


def job_ids(texts: Iterable[str]) -> list[JobID]:
    """Each text as a job id in any RFC 19 encoding; the first bad one is an error."""
    return [JobID.parse(text) for text in texts]


def f58(jobid: JobID) -> str:
    """The id as flux prints it: f58, with an ASCII ``f`` where ``ƒ`` cannot be shown."""
    return jobid.f58plain if ascii_f58_preferred() else jobid.f58


def job_message(jobid: JobID, text: str) -> str:
    """``text``, prefixed with the job id unless it already names the job."""
    return text if jobid.f58 in text or jobid.f58plain in text else f"{f58(jobid)}: {text}"


def error(name: str, message: str) -> None:
    """Report one failure and carry on, in the form ``base.run`` uses for the last one."""
    print(f"{base.PROG}-{name}: ERROR: {message}", file=sys.stderr)


def note(name: str, message: str) -> None:
    """An informational line on stderr, as flux's ``log_msg`` prints one."""
    print(f"{base.PROG}-{name}: {message}", file=sys.stderr)


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def report_failures(name: str, jobids: list[JobID], errors: list[RPCError | None]) -> int:
    """Report each job's refusal (from ``Client.raise_many`` / ``kill_many``); 1 if any."""
    failed = 0
    for jobid, exc in zip(jobids, errors, strict=True):
        if exc is not None:
            error(name, job_message(jobid, exc.errstr))
            failed = 1
    return failed


def duration_arg(text: str | None) -> float | None:
    """Seconds in a Flux Standard Duration option; None when absent or infinite."""
    if text is None:
        return None
    import math

    from pflux.spec import duration

    seconds = duration.parse(text)
    return None if math.isinf(seconds) else seconds


def signal_number(text: str, command: str) -> int:
    """A signal given as a number, a name (``SIGUSR1``) or a name without ``SIG``; a bad
    one is an error in flux's words (``kill: Invalid signal X``)."""
    import signal

    if text.lstrip("-").isdigit():
        signum = int(text)
    else:
        name = text if text.startswith("SIG") else f"SIG{text}"
        try:
            signum = int(signal.Signals[name])
        except KeyError:
            signum = 0
    if signum <= 0:
        raise PfluxError(f"{command}: Invalid signal {text}")
    return signum


def user_id(text: str) -> int:
    """A user name, a numeric uid, or ``all`` (-1: every user's jobs)."""
    if text == "all":
        return -1
    import pwd

    try:
        return pwd.getpwnam(text).pw_uid
    except KeyError:
        if text.isdigit():
            return int(text)
    raise PfluxError(f"Invalid user {text} specified")
