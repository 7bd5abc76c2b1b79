"""pflux: a job manager implementing the Flux framework's job-management RFCs.

This is the public API; every other module is internal. Names load on first
use (``pflux.Client`` imports the client then), so ``import pflux`` stays cheap
for the command line, which imports ``pflux`` packages on every command.

    import pflux

    with pflux.Client() as client:
        job = client.submit_job(pflux.Jobspec.from_command(["hostname"], num_tasks=2))
        print(job.result().success)

Beside the client API it names what pflux's own commands use and may not import
from anywhere else (``tests/unit/test_import_rules.py``): logs followed on one
connection (``LogFollow``), commands run on ranks (``Remote``), an instance's
address (``socket_path``, ``uri_for``) and the flux shim's paths (``shim_env``).
"""

from pflux import _corefinder
from pflux.spec.lazy import lazy_names

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from pflux.api.aio import AsyncClient
    from pflux.api.client import Client
    from pflux.api.jobhandle import AsyncJobHandle, JobHandle
    from pflux.api.jobspec import Jobspec
    from pflux.api.logfollow import LogFollow
    from pflux.api.options import BuilderOptions
    from pflux.api.remote import Remote
    from pflux.api.replies import AllocCounts, JobListing, QueueStatus
    from pflux.api.submission import JobResult
    from pflux.errors import (
        ConfigError,
        DependencyError,
        DurationError,
        EventlogError,
        HostlistError,
        IdsetError,
        JobIDError,
        JobspecError,
        NoInstanceError,
        PfluxError,
        ProtocolError,
        ResourceError,
        RPCError,
        RPCTimeout,
        SizeError,
        SpecError,
        UsageError,
    )
    from pflux.fluxshim import shim_env
    from pflux.protocol.uri import socket_path, uri_for
    from pflux.spec.eventlog import Event
    from pflux.spec.fluid import JobID
    from pflux.spec.states import State

__version__ = "0.10.0"

_corefinder.install()

_ERRORS = "pflux.errors"
_URI = "pflux.protocol.uri"
# where each public name is defined
_HOMES = {
    "AllocCounts": "pflux.api.replies",
    "AsyncClient": "pflux.api.aio",
    "AsyncJobHandle": "pflux.api.jobhandle",
    "BuilderOptions": "pflux.api.options",
    "Client": "pflux.api.client",
    "ConfigError": _ERRORS,
    "DependencyError": _ERRORS,
    "DurationError": _ERRORS,
    "Event": "pflux.spec.eventlog",
    "EventlogError": _ERRORS,
    "HostlistError": _ERRORS,
    "IdsetError": _ERRORS,
    "JobHandle": "pflux.api.jobhandle",
    "JobID": "pflux.spec.fluid",
    "JobIDError": _ERRORS,
    "JobListing": "pflux.api.replies",
    "JobResult": "pflux.api.submission",
    "Jobspec": "pflux.api.jobspec",
    "JobspecError": _ERRORS,
    "LogFollow": "pflux.api.logfollow",
    "NoInstanceError": _ERRORS,
    "PfluxError": _ERRORS,
    "ProtocolError": _ERRORS,
    "QueueStatus": "pflux.api.replies",
    "RPCError": _ERRORS,
    "RPCTimeout": _ERRORS,
    "Remote": "pflux.api.remote",
    "ResourceError": _ERRORS,
    "SizeError": _ERRORS,
    "SpecError": _ERRORS,
    "State": "pflux.spec.states",
    "UsageError": _ERRORS,
    "shim_env": "pflux.fluxshim",
    "socket_path": _URI,
    "uri_for": _URI,
}

__all__ = [
    "AllocCounts",
    "AsyncClient",
    "AsyncJobHandle",
    "BuilderOptions",
    "Client",
    "ConfigError",
    "DependencyError",
    "DurationError",
    "Event",
    "EventlogError",
    "HostlistError",
    "IdsetError",
    "JobHandle",
    "JobID",
    "JobIDError",
    "JobListing",
    "JobResult",
    "Jobspec",
    "JobspecError",
    "LogFollow",
    "NoInstanceError",
    "PfluxError",
    "ProtocolError",
    "QueueStatus",
    "RPCError",
    "RPCTimeout",
    "Remote",
    "ResourceError",
    "SizeError",
    "SpecError",
    "State",
    "UsageError",
    "__version__",
    "shim_env",
    "socket_path",
    "uri_for",
]


__getattr__, __dir__ = lazy_names(__name__, _HOMES, __all__)
