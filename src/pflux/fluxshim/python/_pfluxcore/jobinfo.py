"""A job as ``flux jobs`` shows it: each field's heading, the job-list attributes each
field needs, and the fields worked out from those attributes.

pflux's ``jobs`` (``pflux.cli.jobfields``) and the flux package's ``JobInfo`` and
``JobInfoFormat`` (``flux.job.info``) read their headings and attributes here and
work out run times, return codes, contextual information and inactive reasons
with these functions, over values each reads from the job its own way.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing (several ms)
if TYPE_CHECKING:
    from typing import Any, Iterable

_IDS = ("id", "id.dec", "id.hex", "id.f58", "id.f58plain", "id.emoji", "id.kvs", "id.words")
_TIMES = ("t_submit", "t_depend", "t_priority", "t_sched", "t_run", "t_cleanup", "t_inactive")
#: the job-list attributes shown as they are, each with its heading
_PLAIN = {
    "userid": "UID",
    "urgency": "URG",
    "priority": "PRI",
    "state": "STATE",
    "name": "NAME",
    "cwd": "CWD",
    "queue": "QUEUE",
    "project": "PROJECT",
    "bank": "BANK",
    "ntasks": "NTASKS",
    "ncores": "NCORES",
    "duration": "DURATION",
    "nnodes": "NNODES",
    "ranks": "RANKS",
    "nodelist": "NODELIST",
    "success": "SUCCESS",
    "result": "RESULT",
    "waitstatus": "WSTATUS",
    "annotations": "ANNOTATIONS",
    "dependencies": "DEPENDENCIES",
    **{name: name.upper() for name in _TIMES},
}
_COUNTS = ("ncores", "ngpus", "nnodes")
_RESOURCE_STATES = {"up": "UP", "down": "DOWN", "allocated": "USED", "free": "FREE"}
#: a nested instance's fields, each with its heading
INSTANCE_HEADINGS = {
    "instance.stats": "STATS",
    "instance.stats.total": "NJOBS",
    "instance.utilization": "CORE%",
    "instance.gpu_utilization": "GPU%",
    "instance.progress": "PROG",
    **{
        f"instance.resources.all.{count}": heading
        for count, heading in zip(_COUNTS, ("CORES", "GPUS", "NODES"))
    },
    **{
        f"instance.resources.{state}.{count}": heading
        for state, heading in _RESOURCE_STATES.items()
        for count in _COUNTS
    },
}
#: every field's heading (flux-core's)
HEADINGS = {
    **dict.fromkeys((*_IDS, "id.dothex"), "JOBID"),
    **_PLAIN,
    "username": "USER",
    "state_single": "S",
    "state_emoji": "STATE",
    "expiration": "EXPIRATION",
    "t_remaining": "T_REMAINING",
    "result_abbrev": "RS",
    "result_emoji": "RESULT",
    "runtime": "RUNTIME",
    "status": "STATUS",
    "status_abbrev": "ST",
    "status_emoji": "STATUS",
    "returncode": "RC",
    "exception.occurred": "EXCEPTION-OCCURRED",
    "exception.severity": "EXCEPTION-SEVERITY",
    "exception.type": "EXCEPTION-TYPE",
    "exception.note": "EXCEPTION-NOTE",
    "contextual_info": "INFO",
    "contextual_time": "TIME",
    "inactive_reason": "INACTIVE-REASON",
    # RFC 27's annotations
    "annotations.sched.t_estimate": "T_ESTIMATE",
    "annotations.sched.reason_pending": "REASON",
    "annotations.sched.resource_summary": "RESOURCES",
    "sched": "SCHED",
    "sched.t_estimate": "T_ESTIMATE",
    "sched.reason_pending": "REASON",
    "sched.resource_summary": "RESOURCES",
    "user": "USER",
    "uri": "URI",
    "uri.local": "URI",
    **INSTANCE_HEADINGS,
}

#: the times and durations a job lacks until it reaches them, read as 0
ZERO_DEFAULTS = dict.fromkeys((*_TIMES[1:], "duration", "expiration"), 0.0)

#: annotation paths: the prefixes of fields that read down the job's annotations
ANNOTATION_PREFIXES = ("annotations.", "sched.", "user.")


def heading(field: str) -> str | None:
    """The heading of ``field``: the table's, else an annotation path's or a nested
    instance's in capitals; None for any other field."""
    known = HEADINGS.get(field)
    if known is not None:
        return known
    if field.startswith("annotations."):
        return field[len("annotations.") :].upper()
    if field.startswith(ANNOTATION_PREFIXES):
        return field.upper()
    if field.startswith("instance."):
        text = field[len("instance.") :].upper()
        return text[len("RESOURCES.") :] if text.startswith("RESOURCES.") else text
    return None


_EXCEPTION = ("exception_occurred", "exception_severity", "exception_type", "exception_note")
_STATE_RESULT = ("state", "result")
#: the job-list attributes each field needs (flux-core's ``job_fields_to_attrs``; the
#: id is always sent)
FIELD_ATTRS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys((*_IDS, "id.dothex"), ()),
    **{name: (name,) for name in _PLAIN},
    "username": ("userid",),
    "state_single": ("state",),
    "state_emoji": ("state",),
    "returncode": ("waitstatus", "result"),
    **{f"exception.{name[len('exception_') :]}": (name,) for name in _EXCEPTION},
    "result_abbrev": ("result",),
    "result_emoji": ("result",),
    "runtime": ("t_run", "t_cleanup"),
    "status": _STATE_RESULT,
    "status_abbrev": _STATE_RESULT,
    "status_emoji": _STATE_RESULT,
    "expiration": ("expiration", *_STATE_RESULT),
    "t_remaining": ("expiration", *_STATE_RESULT),
    "contextual_info": ("state", "dependencies", "annotations", "nodelist", "priority", "urgency"),
    "contextual_time": ("state", "t_run", "t_cleanup", "duration"),
    "inactive_reason": (*_STATE_RESULT, "waitstatus", *_EXCEPTION),
    **dict.fromkeys(("sched", "user", "uri", "uri.local"), ("annotations",)),
}


def attrs(fields: Iterable[str]) -> set[str]:
    """The job-list attributes to ask for to show ``fields``; KeyError names a field
    none is known for."""
    found: set[str] = set()
    for field in fields:
        if field.startswith(ANNOTATION_PREFIXES):
            found.add("annotations")
        elif field.startswith("instance."):
            found.update(("annotations", *_STATE_RESULT))
        else:
            found.update(FIELD_ATTRS[field])
    return found


# the symbols ``flux jobs`` prints for each state (by its letter) and result (by its
# abbreviation), with the text printed where stdout cannot encode a result's
STATE_EMOJI = dict(
    zip("NDPSRCI", "\U0001f381\U0001f6d1\U0001f6a6\U0001f4c5\U0001f3c3\U0001f5d1\U0001f480")
)
RESULT_EMOJI = {
    "CD": ("\U0001f600", ":-)"),
    "F": ("\U0001f4a9", ":'-("),
    "CA": ("\U0001f4a5", "%-|"),
    "TO": ("\u231b", "(-_-)"),
    "": ("\u3000", ""),
}


def printable(emoji: str, alternative: str) -> str:
    """``emoji`` if stdout can encode it, else ``alternative``."""
    import sys

    try:
        emoji.encode(getattr(sys.stdout, "encoding", None) or "ascii")
    except (UnicodeEncodeError, LookupError):
        return alternative
    return emoji


def runtime(t_run: float, t_cleanup: float) -> float:
    """How long the job ran (or has run so far); 0 before it runs."""
    if t_run > 0 and t_cleanup > 0:
        return t_cleanup - t_run
    if t_run > 0:
        import time

        return time.time() - t_run
    return 0.0


def remaining(expiration: float) -> float:
    """Seconds a running job has left before ``expiration``."""
    import time

    return max(0.0, expiration - time.time())


def returncode(waitstatus: Any, result_id: Any, canceled: int, failed: int) -> Any:
    """The highest task exit code, -N for signal N, -128 for a job canceled (result
    ``canceled``) before it ran, 1 for one that failed (``failed``) before it ran;
    "" while it runs."""
    if type(waitstatus) is not int:
        if result_id == canceled:
            return -128
        return 1 if result_id == failed else ""
    if os.WIFSIGNALED(waitstatus):
        return -os.WTERMSIG(waitstatus)
    if os.WIFEXITED(waitstatus):
        return os.WEXITSTATUS(waitstatus)
    return ""


def dependency(description: str) -> str:
    """``begin-time=T`` as ``begin@HH:MM`` (with the date unless today, ``:SS`` unless
    on a minute), as ``flux jobs`` shows it; any other dependency as it is."""
    if not description.startswith("begin-time="):
        return description
    import time
    from datetime import datetime

    try:
        when = datetime.fromtimestamp(float(description.partition("=")[2]))
    except (ValueError, OverflowError, OSError):
        return description
    today = when.date() == datetime.fromtimestamp(time.time()).date()
    text = f"begin@{when:%H:%M}" if today else f"begin@{when:%b%d-%H:%M}"
    return f"{text}:{when:%S}" if when.second else text


def contextual_info(
    state: str,
    dependencies: object,
    estimate: Any,
    urgency: Any,
    priority: Any,
    nodelist: Any,
    reason: str = "",
) -> Any:
    """What matters for a job in ``state`` (flux-core's ``contextual_info``).

    PRIORITY: ``priority-wait``; DEPEND: ``depends:`` and the outstanding
    dependencies; SCHED: the scheduler's estimate as ``eta:``, else ``held``
    (urgency 0) or ``priority-hold`` (priority 0), else ``reason``; otherwise the
    nodes the job was given.
    """
    if state == "PRIORITY":
        return "priority-wait"
    if state == "DEPEND":
        return f"depends:{dependencies}"
    if state != "SCHED":
        return nodelist
    if isinstance(estimate, (int, float)) and not isinstance(estimate, bool):
        import time

        from .duration import short

        eta = estimate - time.time()
        return f"eta:{'now' if eta < 0 else short(eta)}"
    if urgency == 0:
        return "held"
    if priority == 0:
        return "priority-hold"
    return reason


#: what an exit code above 125 means
EXIT_TEXT = {
    126: "Command invoked cannot execute",
    127: "command not found",
    128: "Invalid argument to exit",
}


def inactive_reason(
    result: str, occurred: Any, etype: Any, severity: Any, note: Any, code: Any
) -> str:
    """Why a job with ``result`` (its name), its exception (``occurred``, ``etype``,
    ``severity``, ``note``) and return ``code`` ended, in flux-core's words."""
    if result == "CANCELED":
        return f"Canceled: {note}" if occurred and etype == "cancel" and note else "Canceled"
    if result == "TIMEOUT":
        return "Timeout"
    if result != "FAILED":
        return f"Exit {code}"
    if occurred and etype != "exec" and severity == 0:
        return f"Exception: type={etype}" + (f" note={note}" if note else "")
    if isinstance(code, int):
        if code > 128:
            return _signal_text(code - 128)
        if code in EXIT_TEXT:
            return EXIT_TEXT[code]
    return f"Exit {code}"


def _signal_text(signum: int) -> str:
    import signal

    try:
        return signal.strsignal(signum) or f"Signaled {signum}"
    except ValueError:
        return f"Signaled {signum}"
