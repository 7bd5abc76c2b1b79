"""The Python API's modules; users import its names from ``pflux``.

Each name here loads its module on first use, as ``pflux``'s do:
``from pflux.api import Client`` loads the blocking client, not the asyncio one.
"""

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from pflux.api.aio import AsyncClient
    from pflux.api.client import Client
    from pflux.api.jobspec import jobspec_of
    from pflux.api.submission import JobResult

# where each name is defined
_HOMES = {
    "AsyncClient": "pflux.api.aio",
    "Client": "pflux.api.client",
    "JobResult": "pflux.api.submission",
    "jobspec_of": "pflux.api.jobspec",
}

__all__ = ["AsyncClient", "Client", "JobResult", "jobspec_of"]


def __getattr__(name: str) -> object:
    """Load a name from its module on first use, and keep it here."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'pflux.api' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
