"""Task input: the ``input`` shell options and the RFC 24 events of the guest ``input`` eventlog.

As in flux-core, a job's tasks read their stdin from a pipe the job shell
feeds from the guest ``input`` eventlog (``input.stdin.type`` ``service``,
the default), or each task opens the ``input.stdin.path`` file
(``input.stdin.type`` ``file``, what ``--input=FILE`` sets). ``pflux job
attach`` (and ``pflux run``) send their stdin with ``job-exec.stdin``;
job-exec appends it to ``input`` (a ``header``, then ``data`` events
``{stream: "stdin", rank, data}`` with ``rank`` an idset or ``all``, and one
with ``eof: true`` to close the stream) and passes it to the job's shell,
which writes it to the tasks named. Input kept in the KVS is limited to
``input.limit`` bytes (10M by default, at most 32M, as flux-core): a job
sent more gets a fatal exception saying so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pflux.errors import JobspecError
from pflux.exec.output import parse_size
from pflux.spec.ioencode import data_context

__all__ = [
    "DEFAULT_INPUT_LIMIT",
    "INPUT_LIMIT_MAX",
    "InputConfig",
    "data_context",
    "header_context",
    "input_config",
    "limit_note",
]

DEFAULT_INPUT_LIMIT: Final = 10 << 20
INPUT_LIMIT_MAX: Final = 32 << 20
_OPTIONS: Final = "attributes.system.shell.options.input"


@dataclass(frozen=True, slots=True)
class InputConfig:
    """Where the tasks' stdin comes from: the ``input`` eventlog, or a file (``path``)."""

    path: str | None = None
    limit: int = DEFAULT_INPUT_LIMIT


_DEFAULT = InputConfig()


def _fail(key: str, message: str) -> JobspecError:
    return JobspecError([(f"{_OPTIONS}.{key}" if key else _OPTIONS, message)])


def input_config(options: object) -> InputConfig:
    """The ``input`` shell options (``attributes.system.shell.options.input``)."""
    if not isinstance(options, Mapping):
        raise _fail("", "must be a mapping")
    if not options:
        return _DEFAULT  # most jobs (the config is frozen)
    stdin = options.get("stdin", {})
    if not isinstance(stdin, Mapping):
        raise _fail("stdin", "must be a mapping")
    kind = stdin.get("type", "service")
    if kind not in ("service", "file"):
        raise _fail("stdin.type", f'must be "service" or "file", not {kind!r}')
    path = stdin.get("path")
    if kind == "file" and (not isinstance(path, str) or not path):
        raise _fail("stdin.path", "must name a file when the type is file")
    value = options.get("limit", DEFAULT_INPUT_LIMIT)
    limit = parse_size(value, "limit") if "limit" in options else DEFAULT_INPUT_LIMIT
    if not 0 < limit <= INPUT_LIMIT_MAX:
        raise _fail("limit", f"must be more than 0 and at most 32M, not {value!r}")
    return InputConfig(path if kind == "file" else None, limit)


def limit_note(limit: int) -> str:
    """flux-core's note for input past ``input.limit``."""
    size = f"{limit}B"
    for shift, unit in ((30, "G"), (20, "M"), (10, "K")):
        if limit % (1 << shift) == 0:
            size = f"{limit >> shift}{unit}"
            break
    return (
        f"stdin exceeds {size} limit. Try file input (pflux submit --input=FILE)"
        " or redirect input to your command to avoid the KVS for large amounts of input"
    )


def header_context() -> dict[str, Any]:
    """The ``input`` eventlog's header, as flux-core's shell writes it."""
    return {"version": 1, "encoding": {"stdin": "UTF-8"}, "count": {"stdin": 1}, "options": {}}
