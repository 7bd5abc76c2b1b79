"""The Python API's modules; users import its names from ``pflux``.

``from pflux.api import Client`` loads the blocking client, and only it: each
name here loads its module on first use, as ``pflux``'s do.
"""

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from pflux.api.client import AsyncClient, Client, JobResult, jobspec_of

# where each name is defined
_HOMES = {
    "AsyncClient": "pflux.api.client",
    "Client": "pflux.api.client",
    "JobResult": "pflux.api.client",
    "jobspec_of": "pflux.api.client",
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
