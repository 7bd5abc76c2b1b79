"""Task output: RFC 24 events for the guest ``output`` eventlog, and the output options.

job-exec builds the ``output`` eventlog from the raw data and ends of
stream its job shells relay, so the shells themselves run no formatting
code. The events follow flux-core's shell (``src/shell/output/kvs.c`` and
``libioencode``): a ``header`` (version 1, UTF-8 encodings, per-stream task
counts, empty options), then ``data`` events ``{stream, rank, data}`` (rank
as a string; ``encoding: base64`` when the bytes are not UTF-8), and for each
task and stream a final ``data`` event with ``eof: true``. A stream sent to
one file gets a ``redirect`` event ``{stream, rank, path}`` instead (a file
per task or node gets none, as in flux-core). ``log`` events carry warnings
about the output (``{rank, level, component, message}``).

As flux-core does, output kept in the KVS is capped per stream
(``output.limit``, at most 1G; by default 1G for a job of the instance's
owner, 10M for another user's): the bytes up to the limit are kept (the
line that crosses it cut there) and every later one dropped, with a warning
when it happens and, at the end, a count of the bytes past the limit
(``stdout: 6 of 11 bytes truncated`` for 11 bytes under a limit of 5); a
stream of more than 100M gets a warning that a file would serve better.
Unlike flux-core, one
``data`` event holds every complete line relayed at once, not one line each:
readers see the same bytes with far fewer events. ``output.batch-timeout``
is checked as flux-core checks it, but job-exec commits output every turn of
its loop, whatever the timeout.
"""

from __future__ import annotations

import base64
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import orjson

from pflux.errors import JobspecError, PfluxError, SizeError
from pflux.spec.fluid import ENCODINGS, JobID
from pflux.spec.size import parse_size as _parse_size

if TYPE_CHECKING:
    from pflux.spec.layout import Layout, TaskPlace

__all__ = [
    "DEFAULT_BATCH_TIMEOUT",
    "DEFAULT_LIMIT",
    "DEFAULT_LIMIT_BYTES",
    "NODE_TAGS",
    "OWNER_LIMIT",
    "TASK_TAGS",
    "KVSOutput",
    "OutputConfig",
    "StreamConfig",
    "event_line",
    "job_tags",
    "node_tags",
    "output_config",
    "output_paths",
    "parse_size",
    "render_path",
    "template_scope",
]

DEFAULT_LIMIT: Final = "10M"  # flux-core's limit for a guest's job
DEFAULT_LIMIT_BYTES: Final = 10 << 20
OWNER_LIMIT: Final = "1G"  # flux-core's limit for the instance owner's job
LIMIT_MAX: Final = 1 << 30
VOLUME_WARNING: Final = 100 << 20  # a stream this large gets flux-core's advice
DEFAULT_BATCH_TIMEOUT: Final = 0.5  # flux-core's default output.batch-timeout
LOG_WARNING: Final = 4  # syslog level, as flux-core's shell_warn

_OPTIONS: Final = "attributes.system.shell.options.output"
_MUSTACHE: Final = re.compile(r"\{\{\s*([A-Za-z0-9_.]+)\s*\}\}")


def event_line(
    name: str, context: Mapping[str, Any] | None = None, timestamp: float | None = None
) -> str:
    """One RFC 18 eventlog line stamped ``timestamp`` (now by default), newline included."""
    event: dict[str, Any] = {"timestamp": timestamp or time.time(), "name": name}
    if context is not None:
        event["context"] = context
    return orjson.dumps(event, option=orjson.OPT_APPEND_NEWLINE).decode()


@dataclass(frozen=True, slots=True)
class StreamConfig:
    """Where one stream goes: ``kvs`` or a ``file`` at ``path`` (a template)."""

    type: str = "kvs"
    path: str | None = None
    label: bool = False
    buffer: str = "line"  # "line" or "none"
    mode: str = "truncate"  # how a file is opened: "truncate" or "append"


@dataclass(frozen=True, slots=True)
class OutputConfig:
    stdout: StreamConfig
    stderr: StreamConfig
    limit: int
    limit_text: str
    batch_timeout: float


def _fail(key: str, message: str) -> JobspecError:
    return JobspecError([(f"{_OPTIONS}.{key}" if key else _OPTIONS, message)])


def _stream(options: Mapping[str, Any], name: str, base: StreamConfig) -> StreamConfig:
    """One stream's settings over ``base`` (stderr starts from stdout's, as in flux-core)."""
    given = options.get(name, {})
    if not isinstance(given, Mapping):
        raise _fail(name, "must be a mapping")
    buffer_opts = given.get("buffer", {})
    if not isinstance(buffer_opts, Mapping):
        raise _fail(f"{name}.buffer", "must be a mapping")
    # a path alone means a file, as in flux-core's output/conf.c
    kind = given.get("type", "file" if "path" in given else base.type)
    path = given.get("path", base.path)
    label = given.get("label", base.label)
    buffer = buffer_opts.get("type", base.buffer)
    mode = options.get("mode", base.mode)
    if kind not in ("kvs", "file"):
        raise _fail(f"{name}.type", f'must be "kvs" or "file", not {kind!r}')
    if kind == "kvs":
        path = None
    elif not isinstance(path, str) or not path:
        raise _fail(f"{name}.path", "must name a file when the type is file")
    if not isinstance(label, bool):
        raise _fail(f"{name}.label", "must be a boolean")
    if not isinstance(buffer, str) or buffer.lower() not in ("line", "none"):
        raise _fail(f"{name}.buffer.type", f'must be "line" or "none", not {buffer!r}')
    if mode not in ("truncate", "append"):
        raise _fail("mode", f'must be "truncate" or "append", not {mode!r}')
    return StreamConfig(kind, path, label, buffer.lower(), mode)


def output_config(options: Mapping[str, Any], default_limit: str = DEFAULT_LIMIT) -> OutputConfig:
    """The ``output`` shell options (``attributes.system.shell.options.output``).

    stderr follows stdout unless set (so ``--output=FILE`` takes both), except
    that it is unbuffered by default, as in flux-core's ``output/conf.c``.
    ``default_limit`` applies when ``limit`` is not set.
    """
    if not isinstance(options, Mapping):
        raise _fail("", "must be a mapping")
    if not options:  # most jobs: the defaults, made once a limit (the config is frozen)
        config = _DEFAULT_CONFIGS.get(default_limit)
        if config is None:
            config = _DEFAULT_CONFIGS[default_limit] = _output_config({}, default_limit)
        return config
    return _output_config(options, default_limit)


_DEFAULT_CONFIGS: dict[str, OutputConfig] = {}  # default limit -> the config of no options


def _output_config(options: Mapping[str, Any], default_limit: str) -> OutputConfig:
    stdout = _stream(options, "stdout", StreamConfig())
    inherited = StreamConfig(stdout.type, stdout.path, stdout.label, "none", stdout.mode)
    stderr = _stream(options, "stderr", inherited)
    limit_value = options.get("limit", default_limit)
    limit = parse_size(limit_value, "limit")
    if not 0 < limit <= LIMIT_MAX:
        raise _fail("limit", f"must be more than 0 and at most 1G, not {limit_value!r}")
    timeout = options.get("batch-timeout", DEFAULT_BATCH_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout >= 0:
        raise _fail("batch-timeout", f"must be a number of seconds >= 0, not {timeout!r}")
    return OutputConfig(stdout, stderr, limit, str(limit_value), float(timeout))


def parse_size(value: object, key: str = "limit") -> int:
    """Bytes in an integer or a size like ``10M`` (``pflux.spec.size``), or a
    JobspecError naming the option ``key``."""
    try:
        return _parse_size(value)
    except SizeError as exc:
        raise _fail(key, str(exc)) from None


# flux-core's mustache tags (flux-submit(1) MUSTACHE TEMPLATES) by what they vary with
NODE_TAGS: Final = frozenset(
    ("node.id", "node.name", "node.broker_rank", "node.cores", "node.gpus", "node.ncores")
)
TASK_TAGS: Final = frozenset(("taskid", "task.id", "task.rank", "task.index", "task.localid"))


def template_scope(template: str) -> str:
    """What one file of a path template serves: ``task``, ``node`` or the whole ``job``.

    A tag of a task (``{{taskid}}``) means a file per task, one of a node
    (``{{node.name}}``) a file per node, as in flux-core's shell.
    """
    tags = {match[1] for match in _MUSTACHE.finditer(template)}
    if tags & TASK_TAGS:
        return "task"
    return "node" if tags & NODE_TAGS else "job"


def job_tags(jobid: JobID, name: str, ntasks: int, nnodes: int) -> dict[str, str]:
    """The job-wide tags: ``{{id}}``/``{{jobid}}`` (f58) and ``.ENCODING``, ``{{name}}``,
    ``{{nnodes}}``, ``{{size}}``/``{{ntasks}}``."""
    tags = {"name": name, "nnodes": str(nnodes), "size": str(ntasks), "ntasks": str(ntasks)}
    for head in ("id", "jobid"):
        tags[head] = jobid.encode("f58")
        for encoding in ENCODINGS:
            tags[f"{head}.{encoding}"] = jobid.encode(encoding)
    return tags


def render_path(template: str, tags: Mapping[str, str]) -> str:
    """Fill the ``{{tag}}``s of ``template`` found in ``tags``; others are left as they are
    (flux-core leaves an unknown tag in the result)."""

    def fill(match: re.Match[str]) -> str:
        return tags.get(match[1], match[0])

    return _MUSTACHE.sub(fill, template)


def output_paths(
    template: str, stream: str, *, jobid: JobID, name: str, places: Layout, hostname: str
) -> tuple[str, ...]:
    """The file each task's ``--output``/``--error`` goes to, in task order.

    As in flux-core's shell, a template with task tags (``{{taskid}}``) means
    a file per task and one with node tags (``{{node.id}}``) a file per node;
    job tags alone, one file for the job. Tasks that come to the same path
    share one file. ``{{tmpdir}}`` is refused (PfluxError naming the option):
    the directory is made by the shell and removed with the job.
    """
    if "{{tmpdir}}" in template.replace(" ", ""):
        raise PfluxError(f"output.{stream}.path {template!r}: {{{{tmpdir}}}} is not supported")
    tasks = places.tasks
    tags = job_tags(jobid, name, len(tasks), places.nnodes)
    scope = template_scope(template)
    if scope == "job":
        return (render_path(template, tags),) * len(tasks)
    nodes: dict[int, dict[str, str]] = {}
    paths = []
    for task in tasks:
        node = nodes.get(task.node)
        if node is None:
            node = nodes[task.node] = {**tags, **node_tags(task, places, hostname)}
        if scope == "node":
            paths.append(render_path(template, node))
            continue
        rank, local = str(task.rank), str(task.local_id)
        mine = {"taskid": rank, "task.id": rank, "task.rank": rank}
        mine["task.index"] = mine["task.localid"] = local
        paths.append(render_path(template, {**node, **mine}))
    return tuple(paths)


def node_tags(task: TaskPlace, places: Layout, hostname: str) -> dict[str, str]:
    """The ``{{node.*}}`` tags of the node ``task`` runs on (every node is this host)."""
    from pflux.spec.idset import IdSet

    here = [t for t in places.tasks if t.node == task.node]
    cores = IdSet(c for t in here for c in t.cores)
    gpus = IdSet(g for t in here for g in t.gpus)
    return {
        "node.id": str(task.node),
        "node.name": hostname,
        "node.broker_rank": str(task.broker_rank),
        "node.cores": cores.encode(),
        "node.gpus": gpus.encode(),
        "node.ncores": str(len(cores)),
    }


class KVSOutput:
    """Builds the ``output`` eventlog text, counting each stream against the limit."""

    __slots__ = ("_bytes", "_kept", "_limit", "_limit_text", "_lines")

    def __init__(self, limit: int, limit_text: str) -> None:
        self._limit = limit
        self._limit_text = limit_text
        self._bytes = {"stdout": 0, "stderr": 0}  # written by the tasks
        self._kept = {"stdout": 0, "stderr": 0}  # kept in the eventlog
        self._lines: list[bytes] = []

    def set_limit(self, limit: int, limit_text: str) -> None:
        """Cap each stream at ``limit`` bytes (``limit_text`` is how warnings name it)."""
        self._limit = limit
        self._limit_text = limit_text

    def _add(self, name: str, context: Mapping[str, Any]) -> None:
        line = orjson.dumps(
            {"timestamp": time.time(), "name": name, "context": context},
            option=orjson.OPT_APPEND_NEWLINE,
        )
        self._lines.append(line)

    def header(self, ntasks: int) -> None:
        self._add(
            "header",
            {
                "version": 1,
                "encoding": {"stdout": "UTF-8", "stderr": "UTF-8"},
                "count": {"stdout": ntasks, "stderr": ntasks},
                "options": {},
            },
        )

    def data(self, stream: str, rank: int, data: bytes) -> None:
        """Task ``rank`` wrote ``data`` on ``stream``; kept up to the limit, to the byte."""
        before = self._bytes[stream]
        self._bytes[stream] = before + len(data)
        if before != self._kept[stream]:
            return  # already truncating
        room = self._limit - before
        if len(data) > room:
            self.log(f"{stream} will be truncated, {self._limit_text} limit exceeded")
            data = data[:room]
            if not data:
                return
        self._kept[stream] += len(data)
        try:
            text = data.decode()
        except UnicodeDecodeError:
            encoded = base64.b64encode(data).decode()
            self._add(
                "data", {"stream": stream, "rank": str(rank), "encoding": "base64", "data": encoded}
            )
        else:
            self._add("data", {"stream": stream, "rank": str(rank), "data": text})

    def eof(self, stream: str, rank: int) -> None:
        self._add("data", {"stream": stream, "rank": str(rank), "eof": True})

    def redirect(self, stream: str, ranks: str, path: str) -> None:
        self._add("redirect", {"stream": stream, "rank": ranks, "path": path})

    def log(
        self, message: str, level: int = LOG_WARNING, component: str | None = "output.kvs"
    ) -> None:
        context: dict[str, Any] = {"rank": 0, "level": level, "message": message}
        if component is not None:
            context["component"] = component
        self._add("log", context)

    def close(self) -> None:
        """Report what the limit cut off, and advise on a large stream, as flux-core does."""
        for stream in ("stderr", "stdout"):
            total = self._bytes[stream]
            if total > self._kept[stream]:
                self.log(f"{stream}: {total - self._kept[stream]} of {total} bytes truncated")
        for stream in ("stderr", "stdout"):
            total = self._bytes[stream]
            if VOLUME_WARNING < total <= LIMIT_MAX:
                self.log(
                    f"high {stream} volume ({total / (1 << 20):.0f}M), consider redirecting"
                    " to a file next time (e.g. use --output=FILE)"
                )

    def counts(self) -> tuple[list[int], list[int]]:
        """Bytes written and kept, per stream (stdout, stderr), to carry over a restart."""
        streams = ("stdout", "stderr")
        return [self._bytes[s] for s in streams], [self._kept[s] for s in streams]

    def restore(self, written: list[int], kept: list[int]) -> None:
        """Go on counting from ``counts()`` of an earlier job-exec."""
        for i, stream in enumerate(("stdout", "stderr")):
            self._bytes[stream] = written[i]
            self._kept[stream] = kept[i]

    def take(self) -> bytes:
        """The events added since the last take, as eventlog text (UTF-8)."""
        text = b"".join(self._lines)
        self._lines.clear()
        return text

    def __bool__(self) -> bool:
        return bool(self._lines)
