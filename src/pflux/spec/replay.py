"""Rebuilding a job from its eventlog (RFC 21), and applying a jobspec-update's keys.

Replay is the same ``apply`` the live job manager uses, so the state it yields is
the state the job was in. A damaged eventlog loses as little as possible: a line
that does not parse, or an event illegal where it stands, is reported and
skipped, and the rest is replayed; a job whose log does not start with ``submit``
cannot be rebuilt. What is reported goes to the caller's ``report`` (its log):
this module does no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from _pfluxcore import update

from pflux.errors import EventlogError
from pflux.spec.eventlog import Event, parse
from pflux.spec.record import JobRecord
from pflux.spec.states import InvalidTransition, apply

Record = TypeVar("Record", bound=JobRecord)
Report = Callable[[str], object]


def _quiet(message: str) -> None:
    """Report nothing."""


def replay(jobid: int, text: str, report: Report = _quiet) -> JobRecord | None:
    """The job an eventlog describes, or None if it cannot be rebuilt."""
    return rebuild(JobRecord(jobid), events_of(jobid, text, report), report)


def events_of(jobid: int, text: str, report: Report = _quiet) -> list[Event]:
    """The events of an eventlog; a damaged one loses only its bad lines."""
    try:
        return parse(text)
    except EventlogError:
        return _salvage(jobid, text, report)


def rebuild(job: Record, events: list[Event], report: Report = _quiet) -> Record | None:
    """``job`` (new) with these events applied in turn, or None if it cannot be rebuilt."""
    for event in events:
        try:
            apply(job, event)
        except InvalidTransition as exc:
            if not job.history:
                report(f"job {job.id} cannot be rebuilt: {exc}")
                return None
            report(f"restart: skipping an event: {exc}")
    if not job.history:
        report(f"job {job.id} has an empty eventlog; not rebuilt")
        return None
    return job


def _salvage(jobid: int, text: str, report: Report) -> list[Event]:
    events = []
    for lineno, line in enumerate(text.splitlines(), 1):
        try:
            events.append(Event.from_line(line))
        except EventlogError as exc:
            report(f"job {jobid}: eventlog line {lineno} skipped: {exc}")
    return events


def apply_jobspec_updates(jobspec: dict[str, Any], updates: dict[str, Any]) -> None:
    """Set each period-delimited key of a jobspec-update in the jobspec (RFC 21); a memo's
    keys nest the same way."""
    update.apply(jobspec, updates)
