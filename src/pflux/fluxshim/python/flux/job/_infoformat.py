"""``flux.job.info.JobInfoFormat``: a ``flux jobs`` format over ``JobInfo`` objects.

Kept apart from ``flux.job.info`` so that ``JobInfo`` does not load ``flux.util``.
"""

from __future__ import annotations

from string import Formatter

from flux.util import OutputFormat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Mapping

_ID = dict.fromkeys(
    ("id", "id.dec", "id.hex", "id.f58", "id.f58plain", "id.emoji", "id.kvs", "id.words"),
    "JOBID",
)
_RESOURCES = {
    f"instance.resources.{state}.{kind}": heading
    for state, heading in (
        ("up", "UP"),
        ("down", "DOWN"),
        ("allocated", "USED"),
        ("free", "FREE"),
    )
    for kind in ("ncores", "ngpus", "nnodes")
}
_RESOURCES.update(
    {
        "instance.resources.all.ncores": "CORES",
        "instance.resources.all.ngpus": "GPUS",
        "instance.resources.all.nnodes": "NODES",
    }
)

HEADINGS: dict[str, str] = {
    **_ID,
    "id.dothex": "JOBID",
    "userid": "UID",
    "username": "USER",
    "urgency": "URG",
    "priority": "PRI",
    "state": "STATE",
    "state_single": "S",
    "state_emoji": "STATE",
    "name": "NAME",
    "cwd": "CWD",
    "queue": "QUEUE",
    "project": "PROJECT",
    "bank": "BANK",
    "ntasks": "NTASKS",
    "ncores": "NCORES",
    "duration": "DURATION",
    "nnodes": "NNODES",
    "expiration": "EXPIRATION",
    "t_remaining": "T_REMAINING",
    "ranks": "RANKS",
    "nodelist": "NODELIST",
    "success": "SUCCESS",
    "result": "RESULT",
    "result_abbrev": "RS",
    "result_emoji": "RESULT",
    "t_submit": "T_SUBMIT",
    "t_depend": "T_DEPEND",
    "t_run": "T_RUN",
    "t_cleanup": "T_CLEANUP",
    "t_inactive": "T_INACTIVE",
    "runtime": "RUNTIME",
    "status": "STATUS",
    "status_abbrev": "ST",
    "status_emoji": "STATUS",
    "waitstatus": "WSTATUS",
    "returncode": "RC",
    "exception.occurred": "EXCEPTION-OCCURRED",
    "exception.severity": "EXCEPTION-SEVERITY",
    "exception.type": "EXCEPTION-TYPE",
    "exception.note": "EXCEPTION-NOTE",
    "annotations": "ANNOTATIONS",
    "dependencies": "DEPENDENCIES",
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
    "instance.stats.total": "NJOBS",
    "instance.utilization": "CORE%",
    "instance.gpu_utilization": "GPU%",
    "instance.progress": "PROG",
    **_RESOURCES,
}


def _heading(field: str) -> str | None:
    """The heading of a field the table does not name: an annotation's, a nested
    instance's; None for any other (which the format refuses)."""
    if field.startswith("annotations."):
        return field[len("annotations.") :].upper()
    if field.startswith(("sched.", "user.")):
        return field.upper()
    if field.startswith("instance."):
        heading = field[len("instance.") :].upper()
        return heading[len("RESOURCES.") :] if heading.startswith("RESOURCES.") else heading
    return None


class JobInfoFormat(OutputFormat):
    """A format of ``JobInfo`` fields (``{id.f58:>12} {name}``) with ``flux jobs``'
    headings; an unknown field is a ValueError naming it."""

    headings = HEADINGS

    def __init__(
        self, fmt: str, headings: Mapping[str, str] | None = None, prepend: str | None = None
    ) -> None:
        table = dict(self.headings if headings is None else headings)
        for _, field, _, _ in Formatter().parse(fmt):
            if field and field not in table:
                heading = _heading(field)
                if heading is not None:
                    table[field] = heading
        super().__init__(fmt, headings=table, prepend=prepend)
