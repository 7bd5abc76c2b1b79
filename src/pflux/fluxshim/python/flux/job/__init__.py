"""flux-core's ``flux.job``: submitting, watching, waiting for, signalling and listing jobs.

Each name loads its module on first use (``flux.job.submit`` loads
``flux.job.submit``'s module only), so importing ``flux.job`` is cheap.

A function named as its module (``JobID``, ``submit``, ``kill``, ``wait``) is
what the package's attribute holds, as in flux-core, even once the module has
been imported by name (which sets the attribute to the module).
"""

from __future__ import annotations

import sys
import types

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from typing import Any

# name -> the module that defines it
_EXPORTS = {
    "Jobspec": "Jobspec",
    "JobspecV1": "Jobspec",
    "validate_jobspec": "Jobspec",
    "JobID": "JobID",
    "id_parse": "JobID",
    "id_encode": "JobID",
    "kill_async": "kill",
    "kill": "kill",
    "cancel_async": "kill",
    "cancel": "kill",
    "job_raise_async": "kill",
    "job_raise": "kill",
    "submit_async": "submit",
    "submit": "submit",
    "submit_get_id": "submit",
    "SubmitFuture": "submit",
    "timeleft": "timeleft",
    "JobInfo": "info",
    "JobInfoFormat": "info",
    "job_info_lookup": "kvslookup",
    "JobKVSLookup": "kvslookup",
    "job_kvs_lookup": "kvslookup",
    "job_output": "output",
    "output_event_watch_async": "output",
    "output_event_watch": "output",
    "output_watch_async": "output",
    "output_watch": "output",
    "output_watch_lines_async": "output",
    "output_watch_lines": "output",
    "job_kvs": "kvs",
    "job_kvs_guest": "kvs",
    "job_fields_to_attrs": "info",
    "job_list": "list",
    "job_list_inactive": "list",
    "job_list_id": "list",
    "JobList": "list",
    "get_job": "list",
    "wait_async": "wait",
    "wait": "wait",
    "wait_get_status": "wait",
    "result_async": "wait",
    "result": "wait",
    "JobWaitResult": "wait",
    "event_watch_async": "event",
    "event_watch": "event",
    "event_wait": "event",
    "JobEventWatchFuture": "event",
    "JobException": "event",
    "MAIN_EVENTS": "event",
    "EventLogEvent": "event",
    "JournalConsumer": "journal",
    "JournalEvent": "journal",
    "BatchConfig": "_utils",
    "FluxExecutor": "executor",
    "FluxExecutorFuture": "executor",
    "JobWatcher": "watcher",
}
_SUBMODULES = frozenset(
    (
        "JobID",
        "Jobspec",
        "event",
        "executor",
        "info",
        "journal",
        "kill",
        "kvs",
        "kvslookup",
        "list",
        "output",
        "stats",
        "submit",
        "timeleft",
        "wait",
        "watcher",
    )
)

__all__ = [
    "MAIN_EVENTS",
    "BatchConfig",
    "EventLogEvent",
    "FluxExecutor",
    "FluxExecutorFuture",
    "JobEventWatchFuture",
    "JobException",
    "JobID",
    "JobInfo",
    "JobInfoFormat",
    "JobKVSLookup",
    "JobList",
    "JobWaitResult",
    "JobWatcher",
    "Jobspec",
    "JobspecV1",
    "JournalConsumer",
    "JournalEvent",
    "SubmitFuture",
    "cancel",
    "cancel_async",
    "event_wait",
    "event_watch",
    "event_watch_async",
    "get_job",
    "id_encode",
    "id_parse",
    "job_fields_to_attrs",
    "job_info_lookup",
    "job_kvs",
    "job_kvs_guest",
    "job_kvs_lookup",
    "job_list",
    "job_list_id",
    "job_list_inactive",
    "job_output",
    "job_raise",
    "job_raise_async",
    "kill",
    "kill_async",
    "output_event_watch",
    "output_event_watch_async",
    "output_watch",
    "output_watch_async",
    "output_watch_lines",
    "output_watch_lines_async",
    "result",
    "result_async",
    "submit",
    "submit_async",
    "submit_get_id",
    "timeleft",
    "validate_jobspec",
    "wait",
    "wait_async",
    "wait_get_status",
]


def __getattr__(name: str) -> Any:
    """Load the module that defines ``name`` and return it (or the submodule ``name``)."""
    import importlib

    module = _EXPORTS.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f"flux.job.{module}"), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"flux.job.{name}")
    else:
        raise AttributeError(f"module 'flux.job' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


class _Package(types.ModuleType):
    """The package, whose attribute named as a submodule is that submodule's function."""

    def __setattr__(self, name: str, value: object) -> None:
        if isinstance(value, types.ModuleType) and _EXPORTS.get(name) == name:
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
