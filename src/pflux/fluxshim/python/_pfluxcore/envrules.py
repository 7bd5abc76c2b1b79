"""``--env`` rules: the job's environment built from the submitter's, as flux-core does."""

from __future__ import annotations

import os

from .namepattern import bad, matcher

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing (several ms)
if TYPE_CHECKING:
    from typing import Mapping, Sequence

_MAX_ENV_FILE_DEPTH = 16


def filter_environment(
    rules: Sequence[str], environ: Mapping[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    """The job's environment and its ``env-expand`` templates, after applying ``rules``.

    flux-core's rules (``get_filtered_environment``), starting from all of
    ``environ``: ``-PATTERN`` drops matching names; ``^FILE`` applies the rules
    in FILE, one per line (blank lines and ``#`` comments skipped); ``NAME=VALUE``
    sets NAME, expanding ``$VAR`` and ``${VAR}`` from the environment built so
    far, then from ``environ`` (``$$`` is a dollar), or, when VALUE holds a
    ``{{mustache}}`` template, leaves it to the job shell; a bare ``PATTERN``
    copies matching names from ``environ`` that are not yet set.  A PATTERN is
    a shell glob, or a regular expression written ``/regex/``.  A bad rule
    raises ValueError.
    """
    env = dict(environ)
    expand: dict[str, str] = {}
    _apply_env_rules(rules, env, expand, environ, 0)
    return env, expand


def _apply_env_rules(
    rules: Sequence[str],
    env: dict[str, str],
    expand: dict[str, str],
    environ: Mapping[str, str],
    depth: int,
) -> None:
    for rule in rules:
        if rule.startswith("-"):
            matches = matcher("--env", rule, rule[1:])
            for name in [name for name in env if matches(name)]:
                del env[name]
        elif rule.startswith("^"):
            lines = _env_file(rule, depth)
            _apply_env_rules(lines, env, expand, environ, depth + 1)
        elif "=" not in rule:
            matches = matcher("--env", rule, rule)
            for name, value in environ.items():
                if name not in env and matches(name):
                    env[name] = value
        else:
            name, _, value = rule.partition("=")
            if not name:
                raise bad("--env", rule, "the variable name is empty")
            if "{{" in value:
                expand[name] = value
            else:
                env[name] = _substitute(rule, value, env, environ)


def _env_file(rule: str, depth: int) -> list[str]:
    if depth >= _MAX_ENV_FILE_DEPTH:
        raise bad("--env", rule, f"env files nest more than {_MAX_ENV_FILE_DEPTH} deep")
    path = os.path.expanduser(rule[1:])
    try:
        with open(path, encoding="utf-8") as file:
            lines = [line.strip() for line in file]
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ValueError(f"--env: cannot read rules from {path}: {why}") from None
    return [line for line in lines if line and not line.startswith("#")]


def _substitute(rule: str, value: str, env: Mapping[str, str], environ: Mapping[str, str]) -> str:
    if "$" not in value:
        return value
    from string import Template

    try:
        return Template(value).substitute({**environ, **env})
    except KeyError as exc:
        raise bad("--env", rule, f'variable "{exc.args[0]}" is not set') from None
    except ValueError:
        raise bad("--env", rule, "a $ must start $NAME or ${NAME}, or be written $$") from None
