"""pflux's ``flux`` package: flux-core's Python API for the tools written for Flux.

Pure Python (3.8 or newer, standard library only) speaking pflux's wire protocol;
put on ``PYTHONPATH`` inside a pflux instance. Submodules load when first used,
so ``import flux`` costs almost nothing: ``flux.Flux()`` loads the handle,
``flux.job`` the job functions.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from typing import Any

    from flux.core.handle import Flux as FluxHandle

__all__ = ["Flux", "constants", "core", "job", "kvs", "resource", "rpc", "uri"]

_SUBMODULES = frozenset(
    (
        "abc",
        "constants",
        "constraint",
        "core",
        "eventlog",
        "future",
        "job",
        "kvs",
        "message",
        "progress",
        "resource",
        "rpc",
        "uri",
        "util",
    )
)
_SUBMODULES |= {"hostlist", "idset", "queue"}


def Flux(*args: Any, **kwargs: Any) -> FluxHandle:  # noqa: N802 - flux-core's name
    """A handle to the instance (``flux.core.handle.Flux``)."""
    from flux.core.handle import Flux as _Flux

    return _Flux(*args, **kwargs)


def __getattr__(name: str) -> Any:
    """``flux.job`` and the other submodules without importing them first, as flux-core's
    ``import flux`` makes them reachable."""
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f"flux.{name}")
    raise AttributeError(f"module 'flux' has no attribute {name!r}")
