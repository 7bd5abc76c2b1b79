"""Whether a guest shell's description is what the user's signed jobspec asks for.

The instance plans a job's shell (``pflux.exec.plan``); the helper runs it as
the user only if the plan could have come from the jobspec J carries: the
command is the jobspec's; every variable of the jobspec's environment has its
value, and every other is one the instance adds (``INSTANCE_VARIABLES``, the
jobspec's ``env-expand`` names, and the flux shim's, with the values this
installation gives them); the working directory, the input file, the output
files (the jobspec's path templates, with anything but ``/`` in place of a
``{{tag}}``) and the files written into ``FLUX_JOB_TMPDIR`` are the jobspec's.
What is left (the tasks' CPUs and ranks, PMI's map, ptys, exit options) is
the instance's to decide and cannot make the user run anything else.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from pflux.errors import PfluxError
from pflux.fluxshim import PYTHON_ENV, ShimEnv
from pflux.protocol.shellwire import Description
from pflux.spec.files import decode_files

__all__ = ["INSTANCE_VARIABLES", "Allowed", "mismatch"]

# what the instance sets in every job's environment, whatever the jobspec says
INSTANCE_VARIABLES: Final = frozenset(
    (
        "FLUX_JOB_ID",
        "FLUX_JOB_SIZE",
        "FLUX_JOB_NNODES",
        "FLUX_URI",
        "PFLUX_URI",
        "FLUX_KVS_NAMESPACE",
        "PFLUX_KVS_NAMESPACE",
        "FLUX_JOB_ID_PATH",
    )
)
_SHIM_PATHS: Final = ("PATH", "PYTHONPATH")
_SHIM_VARIABLES: Final = (*_SHIM_PATHS, PYTHON_ENV)
_BROKEN: Final = "the jobspec is not one the instance could have run"
# the parts of a check, in turn (``Allowed.broken``: the one whose jobspec is broken)
_HEAD, _ENVIRONMENT, _PLACES, _FILES, _NONE = range(5)
_TAG: Final = re.compile(r"\{\{[^{}]*\}\}")


def mismatch(description: Description, jobspec: Any, shim: ShimEnv | None) -> str:
    """Why ``description`` is not the jobspec's (a sentence naming the field); "" if it is.

    ``shim`` is the flux shim as this installation puts it on the tasks' paths
    (None: the instance adds none).
    """
    return Allowed(jobspec, shim).mismatch(description)


class Allowed:
    """What one jobspec lets a description be, worked out once: a guest's shell checks
    each further job that carries the same jobspec against it, each in full.

    Each part the jobspec decides (the command and environment, the shim's values,
    the places, the files) is read here; a part of the wrong shape is the reason the
    check gives at that part's turn, after any earlier part's reason, as a check that
    reads the jobspec as it goes."""

    __slots__ = (
        "broken",
        "command",
        "cwd",
        "environment",
        "expand",
        "files",
        "patterns",
        "shim",
        "shimmed",
        "stdin",
    )

    def __init__(self, jobspec: Any, shim: ShimEnv | None) -> None:
        self.shim = shim
        self.broken = (_HEAD, _BROKEN)  # (the part whose turn fails, the reason)
        try:
            system = jobspec["attributes"]["system"]
            self.command = jobspec["tasks"][0]["command"]
            environment = system.get("environment", {})
            options = system.get("shell", {}).get("options", {})
            expand = options.get("env-expand", {})
            if not isinstance(environment, Mapping) or not isinstance(expand, Mapping):
                self.broken = (_HEAD, "the jobspec's environment is not a mapping")
                return
            self.environment: Mapping[str, Any] = environment
            self.expand = set(expand)
            self.broken = (_ENVIRONMENT, _BROKEN)
            # the shim's variables as the instance sets them from the jobspec's (not all of it)
            shimmed = {name: environment[name] for name in _SHIM_PATHS if name in environment}
            if shim is not None:
                shim.apply(shimmed)
            self.shimmed = shimmed
            self.broken = (_PLACES, _BROKEN)
            self.cwd = system.get("cwd")
            stdin = options.get("input", {}).get("stdin", {})
            self.stdin = stdin.get("path") if stdin.get("type") == "file" else None
            output = options.get("output", {})
            templates = [output.get(s, {}).get("path") for s in ("stdout", "stderr")]
            self.patterns = [_pattern(t) for t in templates if isinstance(t, str)]
            self.broken = (_FILES, _BROKEN)
            files = system.get("files")
            try:
                self.files = [] if files is None else decode_files(files)
            except PfluxError as exc:
                self.broken = (_FILES, f"the jobspec's {exc}")
                return
        except (LookupError, TypeError, AttributeError):
            return
        self.broken = (_NONE, "")

    def mismatch(self, description: Description) -> str:
        """Why ``description`` is not the jobspec's (a sentence naming the field); "" if it is."""
        part, why = self.broken
        try:
            if part == _HEAD:
                return why
            if description.argv != self.command:
                return f"command {description.argv!r} is not the jobspec's {self.command!r}"
            if part == _ENVIRONMENT:
                return why
            why_not = self._environment(description)
            if why_not or part == _PLACES:
                return why_not or why
            why_not = self._places(description)
            if why_not or part == _FILES:
                return why_not or why
            if description.files != self.files:
                return "files: not the jobspec's"
            return ""
        except (LookupError, TypeError, AttributeError):
            return _BROKEN

    def _environment(self, description: Description) -> str:
        env = description.env
        environment, expand, shimmed = self.environment, self.expand, self.shimmed
        for name, value in environment.items():
            if name in INSTANCE_VARIABLES or name in expand or name == "HOSTNAME":
                continue  # the instance's, or the user's template, rendered
            if name in _SHIM_PATHS and env.get(name) == shimmed.get(name):
                continue
            if name not in env:
                return f"environment: {name} is the jobspec's, and missing"
            if env[name] != value:
                return f"environment: {name}={env[name]!r} is not the jobspec's {value!r}"
        shim = self.shim
        for name, value in env.items():
            if name in environment or name in INSTANCE_VARIABLES or name in expand:
                continue
            if name in _SHIM_VARIABLES and shim is not None and value == shimmed.get(name):
                continue
            return f"environment: {name} is not the jobspec's nor one the instance sets"
        return _expanded(description, expand)

    def _places(self, description: Description) -> str:
        """The working directory, the input file and the output files."""
        if description.cwd != self.cwd:
            return f"cwd {description.cwd!r} is not the jobspec's {self.cwd!r}"
        if description.stdin != self.stdin:
            return f"input file {description.stdin!r} is not the jobspec's {self.stdin!r}"
        for stream in ("stdout", "stderr"):
            target = getattr(description, stream)
            if not isinstance(target, tuple):
                continue
            for path in target[0]:
                if not any(p.fullmatch(path) for p in self.patterns):
                    return f"{stream} file {path!r} is not one of the jobspec's output paths"
        return ""


def _expanded(description: Description, expand: set[str]) -> str:
    """The variables set per task, or filled in with FLUX_JOB_TMPDIR: env-expand's."""
    for values in description.task_env or ():
        extra = sorted(set(values) - expand)
        if extra:
            return f"environment: {extra[0]} is set per task and is not an env-expand variable"
    extra = sorted(set(description.tmpdir_env) - expand)
    if extra:
        return f"environment: {extra[0]} is not an env-expand variable"
    return ""


def _pattern(template: str) -> re.Pattern[str]:
    """The paths a template can name: each ``{{tag}}`` anything but ``/``."""
    pieces = _TAG.split(template)
    return re.compile("[^/]*".join(re.escape(piece) for piece in pieces))
