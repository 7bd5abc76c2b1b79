"""Where the flux shim lives, and the environment that puts it on the path.

The shim is a ``flux`` command (``bin/flux``: pflux's CLI under flux's name), a
``pflux`` command (``bin/pflux``) and an importable ``flux`` package
(``python/flux``, pure Python, for the tools' own interpreters). None is
installed at the top level, where it would shadow a real flux-core or PyPI's
unrelated ``flux``: an instance puts ``BIN`` first on PATH and ``PYTHON`` first
on PYTHONPATH for its initial program and every job's tasks (as flux-core's
``flux start`` puts its own); ``pflux env`` prints the same. ``BIN`` holds those
two commands alone, and pflux's own environment's bin directory stays off PATH,
so the user's ``python3``, ``pip`` and every other command resolve inside an
instance as they did outside it. ``PYTHON_ENV`` names the interpreter both
commands run pflux with. ``[shim] enable = false`` (or ``pflux start
--no-flux-shim``) leaves the paths as they are.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, MutableMapping
from typing import Any, NamedTuple

from pflux.errors import ConfigError

__all__ = ["BIN", "CONFIG_KEYS", "PYTHON", "PYTHON_ENV", "ShimEnv", "enabled", "shim_env"]

_HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.join(_HERE, "bin")
PYTHON = os.path.join(_HERE, "python")

#: the interpreter that runs pflux, for ``bin/flux``
PYTHON_ENV = "PFLUX_PYTHON"

#: the configuration table that turns the shim off, as ``Service.config_keys`` declares one
CONFIG_KEYS: Mapping[str, tuple[str, ...]] = {"shim": ("enable",)}

#: PATH where a job's environment has none (as flux's command assumes)
DEFAULT_PATH = "/bin:/usr/bin"


def enabled(config: Mapping[str, Any]) -> bool:
    """``[shim] enable`` of an instance's configuration (default true)."""
    section = config.get("shim", {})
    if not isinstance(section, dict):
        raise ConfigError("shim", None, f"must be a table, got {section!r}")
    value = section.get("enable", True)
    if type(value) is not bool:
        raise ConfigError("shim", "enable", f"must be true or false, got {value!r}")
    return value


class ShimEnv(NamedTuple):
    """The directories to put first on PATH and PYTHONPATH, and pflux's interpreter."""

    path: tuple[str, ...]
    pythonpath: tuple[str, ...]
    python: str

    def apply(self, env: MutableMapping[str, str]) -> None:
        """Put the shim on ``env``'s paths (first, once: what was there stays after it)."""
        env["PATH"] = _prepend(env.get("PATH") or DEFAULT_PATH, self.path)
        env["PYTHONPATH"] = _prepend(env.get("PYTHONPATH", ""), self.pythonpath)
        env[PYTHON_ENV] = self.python

    def variables(self, env: Mapping[str, str]) -> dict[str, str]:
        """The variables ``apply`` sets, as they would be in ``env``."""
        changed = dict(env)
        self.apply(changed)
        return {name: changed[name] for name in ("PATH", "PYTHONPATH", PYTHON_ENV)}


def shim_env() -> ShimEnv:
    """The shim's directories, and the interpreter running this pflux."""
    return ShimEnv((BIN,), (PYTHON,), sys.executable)


def _prepend(value: str, first: tuple[str, ...]) -> str:
    rest = [item for item in value.split(":") if item not in first] if value else []
    return ":".join((*first, *rest))
