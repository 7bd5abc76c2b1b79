"""What ``JobspecV1.apply_options`` does with each of ``flux submit``'s options: the
job's environment and resource limits from the submitter's by ``--env`` and
``--rlimit`` rules, ``--signal``, ``--taskmap``, ``--dependency``, ``--requires``,
``--time-limit``, shell options, attributes and ``--add-file``, as flux's commands
build them.
"""

from __future__ import annotations

import os

from _pfluxcore import envrules, rlimits, submitopts
from _pfluxcore.namepattern import bad as _bad

from flux._fsd import parse_fsd

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol, Sequence

    class Jobspec(Protocol):
        """What the options change of a jobspec (``flux.job.Jobspec`` is one)."""

        environment: Any
        duration: Any

        def setattr(self, key: str, val: Any) -> None: ...

        def setattr_shell_option(self, key: str, val: Any) -> None: ...

        def add_file(self, path: str, data: Any) -> None: ...


def _seconds(text: Any, option: str) -> float:
    try:
        return float(text) if isinstance(text, (int, float)) else parse_fsd(text)
    except ValueError as exc:
        raise _bad(option, str(text), str(exc)) from None


def signal_option(text: str) -> dict[str, Any]:
    """``[SIG][@TIME]`` as the ``signal`` shell option (SIGUSR1, 60s by default)."""
    return submitopts.signal_option(text, lambda when: _seconds(when, "--signal"))


def uri_entry(text: str) -> dict[str, Any]:
    """``scheme[:value][?key=val&...]`` as ``{scheme, value, key: val...}`` (RFC 26's form
    of a dependency, and a task map's)."""
    scheme, _, rest = text.partition(":")
    if not scheme:
        raise ValueError(f"{text}: missing scheme")
    value, _, query = rest.partition("?")
    entry: dict[str, Any] = {"scheme": scheme, "value": value}
    for pair in query.split("&") if query else ():
        key, _, val = pair.partition("=")
        entry[key] = int(val) if val.isdigit() else val
    return entry


def _propagate(jobspec: Jobspec, options: dict[str, Any], env_set: bool, rlimit_set: bool) -> None:
    """The submitter's environment and limits, by the rules given."""
    if env_set:
        rules = options.get("env") or []
        jobspec.environment, expand = envrules.filter_environment(rules, dict(os.environ))
        if expand:
            jobspec.setattr_shell_option("env-expand", expand)
    if rlimit_set:
        rules = options.get("rlimit") or []
        limits = rlimits.filter_rlimits(rules, rlimits.current_rlimits())
        if limits:
            jobspec.setattr_shell_option("rlimit", limits)


def _shell(jobspec: Jobspec, options: dict[str, Any]) -> None:
    """``signal``, ``taskmap`` and the ``shell_options`` dict."""
    if options.get("signal"):
        jobspec.setattr_shell_option("signal", signal_option(options["signal"]))
    taskmap = options.get("taskmap")
    if taskmap is not None:
        jobspec.setattr_shell_option("taskmap", uri_entry(taskmap))
    for key, val in (options.get("shell_options") or {}).items():
        jobspec.setattr_shell_option(key, val)


def apply(jobspec: Jobspec, options: dict[str, Any], *, env_set: bool, rlimit_set: bool) -> None:
    """Apply ``options`` (apply_options' keywords, None for those not given)."""
    for name in ("requires", "dependency", "env", "rlimit", "add_file"):
        if isinstance(options.get(name), str):
            options[name] = [options[name]]
    _propagate(jobspec, options, env_set, rlimit_set)
    _shell(jobspec, options)
    if options.get("dependency") is not None:
        try:
            dependencies = [uri_entry(uri) for uri in options["dependency"]]
        except ValueError as exc:
            raise ValueError(f"--dependency: {exc}") from None
        jobspec.setattr("system.dependencies", dependencies)
    if options.get("requires") is not None:
        _requires(jobspec, options["requires"])
    if options.get("time_limit") is not None:
        jobspec.duration = _seconds(options["time_limit"], "--time-limit")
    for key, val in (options.get("attributes") or {}).items():
        jobspec.setattr(submitopts.attribute_key(key), val)
    for arg in options.get("add_file") or ():
        _add_file(jobspec, arg)


def _requires(jobspec: Jobspec, requires: Sequence[str]) -> None:
    """``--requires``, all joined by AND: RFC 31's ``system.constraints``."""
    from flux.constraint.parser import ConstraintSyntaxError
    from flux.job._utils import MiniConstraintParser

    constraint = " ".join(requires)
    try:
        jobspec.setattr("system.constraints", MiniConstraintParser().parse(constraint))
    except ConstraintSyntaxError as exc:
        raise ValueError(f"--requires='{constraint}': {exc}") from None


def _add_file(jobspec: Jobspec, arg: str) -> None:
    """``--add-file=[NAME=]ARG``: ARG's text as NAME, or the local file ARG as its own
    base name."""
    name, _, data = arg.partition("=")
    if not data:
        if "\n" in name:
            raise ValueError("--add-file: file name missing")
        data, name = name, os.path.basename(name)
    try:
        jobspec.add_file(name, data)
    except (TypeError, ValueError, OSError) as exc:
        raise ValueError(f"--add-file={arg}: {exc}") from None
