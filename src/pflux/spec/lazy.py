"""A package's names loaded from their modules on first use (PEP 562's module
``__getattr__``), so that importing the package costs a command nothing for the
names it never asks for."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable


def lazy_names(
    package: str, homes: dict[str, str], public: Iterable[str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose name ``n`` lives in
    the module ``homes[n]``: loaded when first asked for, then kept in the package."""
    namespace = sys.modules[package].__dict__
    listed = frozenset(public)

    def getattr_(name: str) -> object:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        __import__(home)  # importlib's import_module, without loading importlib
        value = getattr(sys.modules[home], name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *listed})

    return getattr_, dir_
