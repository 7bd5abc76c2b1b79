"""What ``JobspecV1.apply_options`` does with each of ``flux submit``'s options: the
job's environment and resource limits from the submitter's by ``--env`` and
``--rlimit`` rules, ``--signal``, ``--taskmap``, ``--dependency``, ``--requires``,
``--time-limit``, shell options, attributes and ``--add-file``, as flux's commands
build them.
"""

from __future__ import annotations

import os
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Mapping, Sequence

    from flux.job.Jobspec import Jobspec

# flux-core propagates every soft limit but these
_DEFAULT_RLIMIT_RULES = (
    "-memlock",
    "-ofile",
    "-msgqueue",
    "-nice",
    "-rtprio",
    "-rttime",
    "-sigpending",
)
_UNLIMITED = -1
_MAX_ENV_FILE_DEPTH = 16


def _bad(option: str, value: str, why: str) -> ValueError:
    return ValueError(f"{option}={value}: {why}")


def _matcher(option: str, rule: str, pattern: str) -> Callable[[str], bool]:
    """``/regex/`` (matched at the start) or a shell glob."""
    if pattern.startswith("/"):
        try:
            regex = re.compile(pattern[1:].rstrip("/"))
        except re.error as exc:
            raise _bad(option, rule, f"bad regular expression: {exc}") from None
        return lambda name: regex.match(name) is not None
    from fnmatch import fnmatchcase

    return lambda name: fnmatchcase(name, pattern)


def filtered_environment(rules: Sequence[str]) -> tuple[dict[str, str], dict[str, str]]:
    """The job's environment from ``os.environ`` by ``--env`` rules, and its
    ``env-expand`` templates (values holding ``{{...}}``)."""
    environ = dict(os.environ)
    env = dict(environ)
    expand: dict[str, str] = {}
    _env_rules(rules, env, expand, environ, 0)
    return env, expand


def _env_rules(
    rules: Sequence[str],
    env: dict[str, str],
    expand: dict[str, str],
    environ: Mapping[str, str],
    depth: int,
) -> None:
    for rule in rules:
        if rule.startswith("-"):
            matches = _matcher("--env", rule, rule[1:])
            for name in [name for name in env if matches(name)]:
                del env[name]
        elif rule.startswith("^"):
            _env_rules(_env_file(rule, depth), env, expand, environ, depth + 1)
        elif "=" not in rule:
            matches = _matcher("--env", rule, rule)
            env.update((k, v) for k, v in environ.items() if k not in env and matches(k))
        else:
            name, _, value = rule.partition("=")
            if not name:
                raise _bad("--env", rule, "the variable name is empty")
            if "{{" in value:
                expand[name] = value
            else:
                env[name] = _substitute(rule, value, {**environ, **env})


def _env_file(rule: str, depth: int) -> list[str]:
    if depth >= _MAX_ENV_FILE_DEPTH:
        raise _bad("--env", rule, f"env files nest more than {_MAX_ENV_FILE_DEPTH} deep")
    path = os.path.expanduser(rule[1:])
    try:
        with open(path, encoding="utf-8") as file:
            lines = [line.strip() for line in file]
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ValueError(f"--env: cannot read rules from {path}: {why}") from None
    return [line for line in lines if line and not line.startswith("#")]


def _substitute(rule: str, value: str, names: Mapping[str, str]) -> str:
    if "$" not in value:
        return value
    from string import Template

    try:
        return Template(value).substitute(names)
    except KeyError as exc:
        raise _bad("--env", rule, f'variable "{exc.args[0]}" is not set') from None
    except ValueError:
        raise _bad("--env", rule, "a $ must start $NAME or ${NAME}, or be written $$") from None


def _current_rlimits() -> dict[str, int]:
    import resource

    limits = {}
    for symbol in vars(resource):
        if symbol.startswith("RLIMIT_"):
            soft = resource.getrlimit(getattr(resource, symbol))[0]
            limits[symbol[7:].lower()] = _UNLIMITED if soft == resource.RLIM_INFINITY else soft
    return limits


def filtered_rlimits(rules: Sequence[str]) -> dict[str, int]:
    """The limits to pass on: flux-core's default set, then ``--rlimit`` ``rules``."""
    current = _current_rlimits()
    limits = dict(current)
    for rule in (*_DEFAULT_RLIMIT_RULES, *rules):
        if rule.startswith("-"):
            matches = _matcher("--rlimit", rule, rule[1:].lower())
            limits = {name: value for name, value in limits.items() if not matches(name)}
            continue
        name, equals, value = rule.partition("=")
        name = name.lower()
        if not equals:
            matches = _matcher("--rlimit", rule, name)
            found = {limit: soft for limit, soft in current.items() if matches(limit)}
            if not found:
                raise _bad("--rlimit", rule, "no resource limit matches")
            limits.update(found)
        elif name not in current:
            known = ", ".join(current)
            raise _bad("--rlimit", rule, f"unknown resource limit (known: {known})")
        elif value in ("unlimited", "infinity", "inf"):
            limits[name] = _UNLIMITED
        elif value.isascii() and value.isdigit():
            limits[name] = int(value)
        else:
            raise _bad("--rlimit", rule, "the value must be an integer or unlimited")
    return limits


def _seconds(text: Any, option: str) -> float:
    from flux.job.Jobspec import parse_fsd

    try:
        return float(text) if isinstance(text, (int, float)) else parse_fsd(text)
    except ValueError as exc:
        raise _bad(option, str(text), str(exc)) from None


def signal_option(text: str) -> dict[str, Any]:
    """``[SIG][@TIME]`` as the ``signal`` shell option (SIGUSR1, 60s by default)."""
    import signal

    name, _, when = text.partition("@")
    name = name or "SIGUSR1"
    if name.isascii() and name.isdigit():
        signum = int(name)
    else:
        upper = name.upper()
        try:
            signum = int(signal.Signals[upper if upper.startswith("SIG") else f"SIG{upper}"])
        except KeyError:
            signum = 0
    if not 0 < signum < signal.NSIG:
        raise _bad("--signal", text, f"{name} is not a valid signal")
    timeleft = _seconds(when or "60s", "--signal")
    if timeleft == float("inf"):
        raise _bad("--signal", text, "the time must be finite")
    return {"signum": signum, "timeleft": timeleft}


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


def _attribute_key(key: str) -> str:
    """A bare key is ``system.``'s; a leading ``.`` starts at ``attributes``."""
    if not key.startswith((".", "attributes.", "user.", "system.")):
        return "system." + key
    return "attributes" + key if key.startswith(".") else key


def _propagate(jobspec: Jobspec, options: dict[str, Any], env_set: bool, rlimit_set: bool) -> None:
    """The submitter's environment and limits, by the rules given."""
    if env_set:
        jobspec.environment, expand = filtered_environment(options.get("env") or [])
        if expand:
            jobspec.setattr_shell_option("env-expand", expand)
    if rlimit_set:
        limits = filtered_rlimits(options.get("rlimit") or [])
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
        jobspec.setattr(_attribute_key(key), val)
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
