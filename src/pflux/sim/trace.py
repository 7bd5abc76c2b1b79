"""A trace of jobs to replay: JSON lines, or CSV with a header line.

One job a line (a JSON object; in CSV, a row under a header naming the
columns), with these fields:

- ``submit`` (required): when the job is submitted, in seconds after the
  simulation starts;
- ``duration`` (required, more than 0): how long it runs, in seconds or as
  an FSD string (``90s``, ``1.5h``);
- ``timelimit``: the time limit the scheduler plans with, the same way
  (default: ``duration``; 0 for none);
- ``nodes``, ``ntasks``, ``cores_per_task``, ``gpus_per_task``: its
  resources, as ``pflux submit -N -n -c -g`` give them (default: one task of
  one core);
- ``name``; ``urgency`` (0-31, default 16).

Each job becomes the jobspec ``pflux submit`` builds for those options, in
test mode: ``attributes.system.duration`` is the time limit and
``attributes.system.exec.test.run_duration`` the duration, so the same trace
also runs for real, in real time, through job-exec's test mode.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from pflux.errors import DurationError, JobspecError, PfluxError
from pflux.spec import duration as fsd
from pflux.spec.builder import from_command

__all__ = ["TraceJob", "jobspec_for", "load", "parse"]

_FIELDS = (
    "submit",
    "duration",
    "timelimit",
    "nodes",
    "ntasks",
    "cores_per_task",
    "gpus_per_task",
    "name",
    "urgency",
)
_COUNTS = {"nodes": 1, "ntasks": 1, "cores_per_task": 1, "gpus_per_task": 0}


@dataclass(frozen=True, slots=True)
class TraceJob:
    """One job of a trace: its place among the trace's jobs, submit offset, jobspec, urgency."""

    index: int
    submit: float
    jobspec: dict[str, Any]
    urgency: int = 16


def load(path: str | Path) -> list[TraceJob]:
    """The jobs of the trace file ``path``, in submit order; PfluxError names a bad line."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise PfluxError(f"trace {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise PfluxError(f"trace {path}: not UTF-8 text") from None
    return parse(text.splitlines(), str(path), csv_format=path.suffix.lower() == ".csv")


def parse(
    lines: Iterable[str], source: str = "trace", *, csv_format: bool = False
) -> list[TraceJob]:
    """The jobs of a trace's lines, in submit order (ties in line order)."""
    rows = _csv_rows(lines) if csv_format else _json_rows(lines, source)
    jobs: list[TraceJob] = []
    for lineno, row in rows:
        try:
            jobs.append(_job(len(jobs), row, csv_format))
        except PfluxError as exc:
            raise PfluxError(f"{source}:{lineno}: {exc}") from None
    jobs.sort(key=lambda job: (job.submit, job.index))
    return jobs


def _json_rows(lines: Iterable[str], source: str) -> Iterator[tuple[int, dict[str, Any]]]:
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise PfluxError(f"{source}:{lineno}: not JSON: {exc}") from None
        if not isinstance(row, dict):
            raise PfluxError(f"{source}:{lineno}: must be a JSON object")
        yield lineno, row


def _csv_rows(lines: Iterable[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    reader = csv.DictReader(lines, skipinitialspace=True)
    for row in reader:
        yield reader.line_num, {k: v for k, v in row.items() if v not in ("", None)}


def _job(index: int, row: dict[str, Any], text: bool) -> TraceJob:
    unknown = sorted(set(row) - set(_FIELDS), key=str)
    if unknown:
        raise PfluxError(f"{unknown[0]}: not a trace field (known: {', '.join(_FIELDS)})")
    for key in ("submit", "duration"):
        if key not in row:
            raise PfluxError(f"{key}: missing")
    submit = _seconds(row["submit"], "submit", text)
    run = _seconds(row["duration"], "duration", text)
    if run <= 0:
        raise PfluxError(f"duration: must be more than 0, got {row['duration']!r}")
    limit = _seconds(row["timelimit"], "timelimit", text) if "timelimit" in row else run
    counts = {key: _count(row.get(key), key, text, least) for key, least in _COUNTS.items()}
    urgency = _count(row.get("urgency"), "urgency", text, 0)
    if urgency is not None and urgency > 31:
        raise PfluxError(f"urgency: must be 0-31, got {urgency}")
    name = row.get("name")
    if name is not None and not isinstance(name, str):
        raise PfluxError(f"name: must be a string, got {name!r}")
    jobspec = jobspec_for(run, limit, name=name, **counts)
    return TraceJob(index, submit, jobspec, 16 if urgency is None else urgency)


def jobspec_for(
    run: float,
    limit: float,
    *,
    nodes: int | None = None,
    ntasks: int | None = None,
    cores_per_task: int | None = None,
    gpus_per_task: int | None = None,
    name: str | None = None,
) -> dict[str, Any]:
    """The test-mode jobspec of a job running ``run`` seconds with time limit ``limit``."""
    try:
        jobspec = from_command(
            ["true"],
            num_tasks=ntasks if ntasks is not None else nodes or 1,
            cores_per_task=cores_per_task or 1,
            gpus_per_task=gpus_per_task,
            num_nodes=nodes,
            duration=limit,
            name=name,
        )
    except JobspecError as exc:
        raise PfluxError(str(exc)) from None
    # repr round-trips: the run time read back is this very float
    jobspec["attributes"]["system"]["exec"] = {"test": {"run_duration": f"{run!r}s"}}
    return jobspec


def _seconds(value: Any, key: str, text: bool) -> float:
    if isinstance(value, str):
        try:
            seconds = fsd.parse(value.strip())
        except DurationError as exc:
            raise PfluxError(f"{key}: {exc}") from None
    elif isinstance(value, int | float) and not isinstance(value, bool) and not text:
        seconds = float(value)
    else:
        raise PfluxError(f"{key}: must be a number of seconds or a duration, got {value!r}")
    if not 0 <= seconds < math.inf:
        raise PfluxError(f"{key}: must be a finite number >= 0, got {value!r}")
    return seconds


def _count(value: Any, key: str, text: bool, least: int) -> int | None:
    if value is None:
        return None
    if text and isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        value = int(value)
    if type(value) is not int or value < least:
        raise PfluxError(f"{key}: must be an integer >= {least}, got {value!r}")
    return value
