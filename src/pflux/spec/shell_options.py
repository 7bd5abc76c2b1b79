"""The job shell's options (``attributes.system.shell.options``): which exist, and their values.

job-ingest checks every jobspec's shell options here, so that an option the
shell would not act on is refused at submission (``--dry-run``, ``submit`` and
the API alike) rather than accepted and ignored. Names and value rules are
flux-core's (``flux-shell-options(7)``); options flux-core's shell has and
pflux's does not are refused as such. Pure: no I/O.
"""

from __future__ import annotations

import math

# the class collections.abc re-exports, without the collections package (a command
# that loads it pays for OrderedDict, Counter, ChainMap...)
from _collections_abc import Mapping

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Final

    _Check = Callable[[Any], str | None]

__all__ = [
    "AFFINITY_MODES",
    "KNOWN",
    "UNSUPPORTED",
    "check",
    "cpu_map",
    "exit_timeout",
    "signal_option",
    "taskmap_scheme",
]

AFFINITY_MODES: Final = ("on", "off", "per-task")
DEFAULT_EXIT_TIMEOUT: Final = 30.0  # flux-core's, for a job that is not an instance
DEFAULT_SIGNAL: Final = 10  # SIGUSR1, flux-core's signal.signum default
DEFAULT_TIMELEFT: Final = 60.0  # flux-core's signal.timeleft default
# the limits flux-core's shell knows (rlimit.c), ofile an alias of nofile
RLIMIT_NAMES: Final = frozenset(
    (
        "cpu",
        "fsize",
        "data",
        "stack",
        "core",
        "nofile",
        "ofile",
        "as",
        "rss",
        "nproc",
        "memlock",
        "msgqueue",
        "nice",
        "rtprio",
        "rttime",
        "sigpending",
    )
)
_MAX_CPU: Final = 1 << 16  # a CPU number in cpu-affinity=map: above this is refused


def _describe(value: Any) -> str:
    import json

    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _mapping(value: Any) -> str | None:
    return None if isinstance(value, Mapping) else "must be a mapping"


def _flag(value: Any) -> str | None:
    """A switch set by ``-o NAME`` (1): 1 or true; flux-core treats any value as on."""
    return None if value is True or (_is_int(value) and value == 1) else "takes no value (1)"


def _rlimit(value: Any) -> str | None:
    if not isinstance(value, Mapping):
        return "must be a mapping of limit names to integers"
    for name, limit in value.items():
        if name not in RLIMIT_NAMES:
            return f"{name}: unknown resource limit (known: {', '.join(sorted(RLIMIT_NAMES))})"
        if not _is_int(limit) or limit < -1:
            return f"{name}: must be an integer >= 0, or -1 for unlimited, not {_describe(limit)}"
    return None


def _env_expand(value: Any) -> str | None:
    if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
        return "must be a mapping of variable names to template strings"
    return None


def exit_timeout(value: Any) -> float | None:
    """Seconds of ``exit-timeout`` (None: ``none``); ValueError if it is not valid."""
    if isinstance(value, str):
        if value.lower() == "none":
            return None
        from pflux.errors import DurationError
        from pflux.spec import duration

        try:
            seconds = duration.parse(value)
        except DurationError:
            raise ValueError("is not a valid Flux Standard Duration") from None
    elif isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise ValueError("is not a valid Flux Standard Duration")
    if not 0 <= seconds < math.inf:
        raise ValueError("is not a valid Flux Standard Duration")
    return seconds


def _exit_timeout(value: Any) -> str | None:
    try:
        exit_timeout(value)
    except ValueError as exc:
        return f"{_describe(value)} {exc} (or none)"
    return None


def signal_option(value: Any) -> tuple[int, float] | None:
    """(signal number, seconds before expiration) of ``signal``; None: no signal (0).

    flux-core's forms: an integer (1, as ``-o signal`` gives, means the
    defaults; 0 none) or ``{signum, timeleft}``, each optional, ``timeleft``
    seconds or an FSD. ValueError naming the problem otherwise.
    """
    if _is_int(value):
        if value == 0:
            return None
        return DEFAULT_SIGNAL, DEFAULT_TIMELEFT
    if not isinstance(value, Mapping):
        raise ValueError("must be an integer or a mapping of signum and timeleft")
    extra = set(value) - {"signum", "timeleft"}
    if extra:
        raise ValueError(f"unknown key {sorted(extra)[0]!r} (known: signum, timeleft)")
    signum = value.get("signum", DEFAULT_SIGNAL)
    if not _is_int(signum) or not 0 < signum < 65:
        raise ValueError(f"signum must be a signal number 1-64, not {_describe(signum)}")
    timeleft = value.get("timeleft", DEFAULT_TIMELEFT)
    try:
        seconds = exit_timeout(timeleft)
    except ValueError:
        seconds = None
    if seconds is None:
        raise ValueError(f"timeleft={_describe(timeleft)} is invalid")
    return signum, seconds


def _signal(value: Any) -> str | None:
    try:
        signal_option(value)
    except ValueError as exc:
        return str(exc)
    return None


def cpu_map(text: str) -> list[frozenset[int]]:
    """The CPU sets of ``cpu-affinity=map:LIST``: ``;``-separated hwloc lists
    (``0-1,4``) or taskset masks (``0x3``); ValueError naming a bad one."""
    sets = []
    for given in text.split(";"):
        item = given.strip()
        cpus: set[int] = set()
        try:
            if item.lower().startswith("0x"):
                mask = int(item[2:], 16)
                cpus = {bit for bit in range(mask.bit_length()) if mask >> bit & 1}
            else:
                for part in item.split(","):
                    low, _, high = part.partition("-")
                    first, last = int(low), int(high or low)
                    if not 0 <= first <= last < _MAX_CPU:
                        raise ValueError
                    cpus.update(range(first, last + 1))
        except ValueError:
            cpus = set()
        if not cpus or max(cpus) >= _MAX_CPU:
            raise ValueError(f"cpuset {item} contains no cores or is invalid")
        sets.append(frozenset(cpus))
    return sets


def _cpu_affinity(value: Any) -> str | None:
    if not isinstance(value, str):
        return "must be a string"
    if value in AFFINITY_MODES:
        return None
    if value.startswith("map:"):
        try:
            cpu_map(value[4:])
        except ValueError as exc:
            return str(exc)
        return None
    return f"{value!r} is not one of on, off, per-task or map:LIST"


def _gpu_affinity(value: Any) -> str | None:
    if value in AFFINITY_MODES:
        return None
    return f"{_describe(value)} is not one of on, off or per-task"


def _verbose(value: Any) -> str | None:
    return None if _is_int(value) and value >= 0 else "must be an integer >= 0"


PMI_NAMES = ("simple", "pmi1", "pmi2", "off")  # flux-core takes pmi1 and pmi2 for simple
TASKMAP_SCHEMES = ("block", "cyclic")
TASKMAP_UNSUPPORTED = ("manual", "hostfile")


def _pmi(value: Any) -> str | None:
    """One name or a comma-separated list of them, as flux-core's shell takes it."""
    if not isinstance(value, str):
        return "must be a string"
    for name in value.split(","):
        if name not in PMI_NAMES:
            return f"unknown value '{name}' (one of {', '.join(PMI_NAMES)})"
    return None


def taskmap_scheme(value: Any) -> tuple[str, int]:
    """(scheme, stride) of the ``taskmap`` option, ``{scheme, value}`` as ``--taskmap`` writes
    it (None: block): block, or cyclic with a stride; ValueError naming the problem."""
    if value is None:
        return "block", 1
    if not isinstance(value, Mapping) or not isinstance(value.get("scheme"), str):
        raise ValueError("must be an object with a scheme")
    scheme, stride = value["scheme"], value.get("value", "")
    if not isinstance(stride, str):
        raise ValueError("value must be a string")
    if scheme in TASKMAP_UNSUPPORTED:
        raise ValueError(f"taskmap scheme '{scheme}' is not supported by pflux (block, cyclic[:N])")
    if scheme not in TASKMAP_SCHEMES:
        raise ValueError(f"unknown taskmap scheme '{scheme}' (block, cyclic[:N])")
    if scheme == "block" and stride:
        raise ValueError(f"block taskmap does not accept a value (got {stride})")
    if stride and not (stride.isascii() and stride.isdigit() and int(stride) >= 1):
        raise ValueError(f"invalid cyclic stride: {stride}")
    return scheme, int(stride or 1)


def _taskmap(value: Any) -> str | None:
    try:
        taskmap_scheme(value)
    except ValueError as exc:
        return str(exc)
    return None


def _per_resource(value: Any) -> str | None:
    if not isinstance(value, Mapping) or value.get("type") not in ("node", "core"):
        return "must be a mapping whose type is node or core"
    count = value.get("count", 1)
    if not _is_int(count) or count < 1:
        return f"count must be an integer >= 1, not {_describe(count)}"
    return None


def _pty(value: Any) -> str | None:
    """``-o pty`` (1, or 0 for none), or ``pty.interactive``, ``pty.capture``, ``pty.ranks``."""
    if isinstance(value, bool) or (_is_int(value) and value in (0, 1)):
        return None
    if not isinstance(value, Mapping):
        return "must be true or a mapping of interactive, capture and ranks"
    for key, item in value.items():
        if key in ("interactive", "capture"):
            why = None if isinstance(item, (bool, int)) else "must be a boolean or an integer"
        elif key == "ranks":
            why = _pty_ranks(item)
        else:
            why = "unknown key (expected ranks, capture or interactive)"
        if why is not None:
            return f"{key}: {why}"
    if not value.get("capture", True):
        return "capture: must be true: a pty's output is kept only by capturing it"
    return None


def _pty_ranks(value: Any) -> str | None:
    """``pty.ranks``: one task rank, an idset of them, or ``all``."""
    if _is_int(value):
        return None if value >= 0 else 'must be an idset or "all"'
    if not isinstance(value, str):
        return 'must be an idset or "all"'
    if value == "all":
        return None
    from pflux.errors import IdsetError
    from pflux.spec.idset import IdSet

    try:
        IdSet.decode(value)
    except IdsetError as exc:
        return str(exc)
    return None


def _mpi(value: Any) -> str | None:
    """``mpi``: only ``none`` (no MPI personality), which nested instances ask for."""
    if value == "none":
        return None
    return 'must be "none": pflux\'s shell has no MPI plugins (MPI programs start through PMI-1)'


# every option pflux's shell acts on, with its value check
KNOWN: Final[Mapping[str, _Check]] = {
    "output": _mapping,
    "input": _mapping,
    "rlimit": _rlimit,
    "env-expand": _env_expand,
    "signal": _signal,
    "cpu-affinity": _cpu_affinity,
    "gpu-affinity": _gpu_affinity,
    "exit-timeout": _exit_timeout,
    "exit-on-error": _flag,
    "nosetpgrp": _flag,
    "verbose": _verbose,
    "pty": _pty,
    "pmi": _pmi,
    "taskmap": _taskmap,
    "per-resource": _per_resource,
    "mpi": _mpi,
}

# options of flux-core's shell that pflux's does not have
UNSUPPORTED: Final = frozenset(
    (
        "initrc",
        "userrc",
        "stop-tasks-in-exec",
        "oom",
        "pmi-simple",
        "stage-in",
        "hwloc",
        "sysmon",
        "coprocess",
        "coprocess-kill-timeout",
        "rexec-shutdown-timeout",
        "batch",
    )
)


def check(options: Any) -> list[tuple[str, str]]:
    """The problems of a jobspec's shell options, as (option name, message); [] if none."""
    if not isinstance(options, Mapping):
        return []  # the jobspec walker says it must be a mapping
    problems = []
    for name, value in options.items():
        known = KNOWN.get(name)
        if known is not None:
            why = known(value)
            if why is not None:
                problems.append((name, why))
        elif isinstance(name, str) and name.partition(".")[0] in UNSUPPORTED:
            problems.append((name, "not supported by pflux"))
        else:
            problems.append((str(name), "unknown shell option"))
    return problems
