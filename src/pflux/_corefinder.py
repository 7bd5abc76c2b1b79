"""Finds ``_pfluxcore``, the logic pflux shares with its flux package, beside that package.

``_pfluxcore`` lives in the shim's ``python`` directory, the one directory a
job's PYTHONPATH gains, so that the flux package can import it. pflux finds it
there by that one name: the directory itself never goes on pflux's
``sys.path``, where its ``flux`` would shadow a real flux-core.
"""

from __future__ import annotations

import os
import sys
from importlib.machinery import ModuleSpec, PathFinder

CORE = "_pfluxcore"
SHIM_PYTHON = os.path.join(os.path.dirname(__file__), "fluxshim", "python")


class CoreFinder:
    """A meta path finder for ``_pfluxcore`` alone (its modules are found through it)."""

    @staticmethod
    def find_spec(name: str, path: object = None, target: object = None) -> ModuleSpec | None:
        """The core's spec, from the shim's directory; None for any other name."""
        return PathFinder.find_spec(name, [SHIM_PYTHON]) if name == CORE else None


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once), so pflux loads its own copy."""
    if CoreFinder not in sys.meta_path:
        sys.meta_path.insert(0, CoreFinder)
