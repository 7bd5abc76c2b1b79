"""``pflux update [-n] [-v] [--wait] ID KEY=VALUE...``: update an active job, as ``flux update``.

KEY is a period-delimited jobspec path; one that does not start with
``attributes.``, ``resources.`` or ``tasks.`` is taken under
``attributes.system.``, and ``name`` means ``attributes.system.job.name``.
A VALUE is read as JSON if it parses, else as a string. ``duration`` takes a
Flux Standard Duration (``90``, ``1.5h``, ``infinity``), or ``+FSD`` / ``-FSD``
to lengthen or shorten the job's current duration. Every update is applied or
none: the job manager checks them as one (see ``pflux.manager.update``); a
running job's duration moves its expiration (instance owner only).

``-n`` prints the updates as JSON instead of sending them, ``-v`` says what
was updated, ``--wait`` waits for the ``jobspec-update`` event.
"""

from __future__ import annotations

import argparse
import json
import math
import time

from pflux.cli import base, jobcommon
from pflux.errors import PfluxError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from pflux import Client
    from pflux.spec.fluid import JobID

NAME = "update"
DURATION = "attributes.system.duration"
ALIASES = {"name": "attributes.system.job.name"}
_TOP = ("attributes.", "resources.", "tasks.")


def main(argv: list[str]) -> int:
    parser = base.parser(NAME, "Update the jobspec of an active job.")
    parser.usage = f"{base.PROG} update [OPTIONS] JOBID KEY=VALUE [KEY=VALUE...]"
    jobcommon.add_uri(parser)
    parser.add_argument(
        "-n", "--dry-run", action="store_true", help="print the updates as JSON, send nothing"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="say what was updated")
    parser.add_argument(
        "--wait", action="store_true", help="wait for the jobspec-update event in the eventlog"
    )
    parser.add_argument("jobid", metavar="JOBID", help="job id (any encoding)")
    parser.add_argument("updates", nargs="+", metavar="KEY=VALUE", help="jobspec updates")
    args = parser.parse_args(argv)
    return base.run(NAME, lambda: _update(args))


def _update(args: argparse.Namespace) -> int:
    from pflux import Client
    from pflux.errors import RPCError
    from pflux.spec.fluid import JobID

    jobid = JobID.parse(args.jobid)
    t0 = time.time()
    with Client(args.uri) as client:
        updates = Updates(client, jobid)
        for text in args.updates:
            key, eq, value = text.partition("=")
            if not eq or not key:
                raise PfluxError(f"{text}: an update must be KEY=VALUE")
            updates.add(key, value)
        if args.dry_run:
            print(json.dumps(updates.updates))
            return 0
        try:
            client.update(jobid, updates.updates)
            if args.wait:
                _wait(client, jobid, updates.updates, t0)
        except RPCError as exc:
            raise PfluxError(jobcommon.job_message(jobid, exc.errstr)) from None
    if args.verbose:
        for key, value in updates.updates.items():
            jobcommon.note(NAME, f"updated {key} to {value}")
    return 0


class Updates:
    """The updates of one command line, with flux's key aliases and value rules."""

    def __init__(self, client: Client, jobid: JobID) -> None:
        self.client = client
        self.jobid = jobid
        self.updates: dict[str, Any] = {}
        self._jobspec: dict[str, Any] | None = None

    def add(self, key: str, value: str) -> None:
        key = ALIASES.get(key, key)
        if not key.startswith(_TOP):
            key = f"attributes.system.{key}"
        parsed: Any
        if key == DURATION:
            parsed = self._duration(value)
        else:
            try:
                parsed = json.loads(value)
            except json.JSONDecodeError:
                parsed = value
        self.updates[key] = parsed

    def _duration(self, value: str) -> float:
        """Seconds (0: unlimited); ``+``/``-`` change the job's current duration."""
        from pflux.spec import duration

        if not value.startswith(("+", "-")):
            seconds = _fsd(value)
            return 0.0 if math.isinf(seconds) else seconds
        current = self._current_duration()
        if current == 0:
            raise PfluxError(f"duration for {self.jobid} is unlimited, can't update by {value}")
        change = _fsd(value[1:])
        if value.startswith("+"):
            result = current + change
            return 0.0 if math.isinf(result) else result
        result = current - change
        if not result > 0:
            raise PfluxError(
                f"current duration for {self.jobid} ({duration.format(current)})"
                f" cannot be reduced by {value[1:]}"
            )
        return result

    def _current_duration(self) -> float:
        """The job's duration now: its jobspec with every jobspec-update applied."""
        if self._jobspec is None:
            import orjson

            from pflux.spec.eventlog import parse
            from pflux.spec.replay import apply_jobspec_updates

            stored = self.client.lookup(self.jobid, ["jobspec", "eventlog"])
            jobspec: dict[str, Any] = orjson.loads(stored["jobspec"])
            for event in parse(stored["eventlog"]):
                if event.name == "jobspec-update":
                    apply_jobspec_updates(jobspec, event.context or {})
            self._jobspec = jobspec
        value = self._jobspec.get("attributes", {}).get("system", {}).get("duration", 0)
        return float(value) if isinstance(value, int | float) else 0.0


def _fsd(text: str) -> float:
    from pflux.spec import duration

    return duration.parse(text)


def _wait(client: Client, jobid: JobID, updates: dict[str, Any], t0: float) -> None:
    """Until a jobspec-update with these updates, posted since ``t0``, is in the eventlog."""
    for event in client.events(jobid):
        context = event.context or {}
        if (
            event.name == "jobspec-update"
            and event.timestamp > t0
            and all(context.get(key) == value for key, value in updates.items())
        ):
            return
    raise PfluxError(f"{jobid}: ended before the update was posted")
