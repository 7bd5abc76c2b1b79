"""``--rlimit`` rules: the resource limits a job inherits from its submitter, as flux-core's."""

from __future__ import annotations

from .namepattern import bad, matcher

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing (several ms)
if TYPE_CHECKING:
    from typing import Mapping, Sequence

# flux-core propagates every soft limit but these (flux/job/_utils.py)
DEFAULT_RLIMIT_RULES = (
    "-memlock",
    "-ofile",
    "-msgqueue",
    "-nice",
    "-rtprio",
    "-rttime",
    "-sigpending",
)
UNLIMITED = -1  # how jobspec (and flux-core's job shell) writes RLIM_INFINITY
_UNLIMITED_WORDS = ("unlimited", "infinity", "inf")


def current_rlimits() -> dict[str, int]:
    """This process's soft resource limits, by flux-core's lower-case names, -1 for none."""
    import resource

    limits = {}
    for symbol in vars(resource):
        if symbol.startswith("RLIMIT_"):
            soft = resource.getrlimit(getattr(resource, symbol))[0]
            limits[symbol[7:].lower()] = UNLIMITED if soft == resource.RLIM_INFINITY else soft
    return limits


def filter_rlimits(rules: Sequence[str], current: Mapping[str, int]) -> dict[str, int]:
    """The limits to pass on: flux-core's defaults, then ``rules`` in order.

    ``-PATTERN`` drops matching limits; ``NAME=VALUE`` sets one (``unlimited``,
    ``infinity`` or ``inf`` for none); a bare ``PATTERN`` passes matching limits
    at their ``current`` values.  Names are ``current``'s, case-insensitive.  A
    bad rule raises ValueError.
    """
    limits = dict(current)
    for rule in (*DEFAULT_RLIMIT_RULES, *rules):
        if rule.startswith("-"):
            matches = matcher("--rlimit", rule, rule[1:].lower())
            limits = {name: value for name, value in limits.items() if not matches(name)}
            continue
        name, equals, value = rule.partition("=")
        name = name.lower()
        if not equals:
            matches = matcher("--rlimit", rule, name)
            found = {limit: soft for limit, soft in current.items() if matches(limit)}
            if not found:
                raise bad("--rlimit", rule, "no resource limit matches")
            limits.update(found)
        elif name not in current:
            raise bad("--rlimit", rule, f"unknown resource limit (known: {', '.join(current)})")
        elif value in _UNLIMITED_WORDS:
            limits[name] = UNLIMITED
        elif value.isascii() and value.isdigit():
            limits[name] = int(value)
        else:
            raise bad("--rlimit", rule, "the value must be an integer or unlimited")
    return limits
