"""Finds ``_pfluxcore``, the logic pflux shares with its flux package, beside that package.

``_pfluxcore`` lives in the shim's ``python`` directory, the one directory a
job's PYTHONPATH gains, so that the flux package can import it. pflux finds it
there by that one name: the directory itself never goes on pflux's
``sys.path``, where its ``flux`` would shadow a real flux-core.
"""

from __future__ import annotations

import os
import sys

# importlib.machinery's PathFinder, from where it defines it: the importlib package
# (with warnings) would cost a short command more than all of this module
from _frozen_importlib_external import PathFinder

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec

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
