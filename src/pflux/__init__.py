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
address (``socket_path``, ``uri_for``), the flux shim's paths (``shim_env``) and
``pflux keygen``'s certificate (``new_cert``, ``meta_problem``, ``write_cert``).
"""

from pflux import _corefinder

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from pflux.api import AsyncClient, Client, JobResult
    from pflux.broker.cert import meta_problem, new_cert, write_cert
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
    from pflux.jobhandle import AsyncJobHandle, JobHandle
    from pflux.jobspec import BuilderOptions, Jobspec
    from pflux.logfollow import LogFollow
    from pflux.protocol.uri import socket_path, uri_for
    from pflux.remote import Remote
    from pflux.replies import AllocCounts, JobListing, QueueStatus
    from pflux.spec.eventlog import Event
    from pflux.spec.fluid import JobID
    from pflux.spec.states import State

__version__ = "0.10.0"

_corefinder.install()

_ERRORS = "pflux.errors"
_CERT = "pflux.broker.cert"
_URI = "pflux.protocol.uri"
# where each public name is defined
_HOMES = {
    "AllocCounts": "pflux.replies",
    "AsyncClient": "pflux.api",
    "AsyncJobHandle": "pflux.jobhandle",
    "BuilderOptions": "pflux.jobspec",
    "Client": "pflux.api",
    "ConfigError": _ERRORS,
    "DependencyError": _ERRORS,
    "DurationError": _ERRORS,
    "Event": "pflux.spec.eventlog",
    "EventlogError": _ERRORS,
    "HostlistError": _ERRORS,
    "IdsetError": _ERRORS,
    "JobHandle": "pflux.jobhandle",
    "JobID": "pflux.spec.fluid",
    "JobIDError": _ERRORS,
    "JobListing": "pflux.replies",
    "JobResult": "pflux.api",
    "Jobspec": "pflux.jobspec",
    "JobspecError": _ERRORS,
    "LogFollow": "pflux.logfollow",
    "NoInstanceError": _ERRORS,
    "PfluxError": _ERRORS,
    "ProtocolError": _ERRORS,
    "QueueStatus": "pflux.replies",
    "RPCError": _ERRORS,
    "RPCTimeout": _ERRORS,
    "Remote": "pflux.remote",
    "ResourceError": _ERRORS,
    "SizeError": _ERRORS,
    "SpecError": _ERRORS,
    "State": "pflux.spec.states",
    "UsageError": _ERRORS,
    "meta_problem": _CERT,
    "new_cert": _CERT,
    "shim_env": "pflux.fluxshim",
    "socket_path": _URI,
    "uri_for": _URI,
    "write_cert": _CERT,
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
    "meta_problem",
    "new_cert",
    "shim_env",
    "socket_path",
    "uri_for",
    "write_cert",
]


def __getattr__(name: str) -> object:
    """Load a public name from its module on first use, and keep it here."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'pflux' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
