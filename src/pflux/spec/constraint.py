"""Job constraints: RFC 35's query syntax (``--requires``) read into RFC 31's JSON
object, and an RFC 31 object matched against the execution targets of R.

The query ``a b``, ``a&b`` or ``a,b`` requires properties a and b; ``|`` or
``or`` is OR, ``not`` negates an expression and ``-`` a term, parentheses
group. As in flux-core's parser, ``&`` binds tighter than OR and looser than
``not``, and a term after an expression is joined by AND once what precedes it is
complete: ``a|b c`` is ``(a|b)&c``, ``a&b|c`` is ``(a&b)|c``.
A term is ``operator:operand`` (``host``/``hosts`` mean ``hostlist``, ``rank``
means ``ranks``); a bare operand is a list of properties, ``^p`` meaning "not
p". The JSON follows flux-core's reading of the same query, so both submit the
same jobspec: properties joined by AND are one list, and ANDs and ORs chain
into one list each. The lexer and parser are ``_pfluxcore.constraint``'s, which
the flux package's ``ConstraintParser`` reads queries with too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from _pfluxcore import constraint as _core

from pflux.errors import HostlistError, IdsetError, SpecError
from pflux.spec import hostlist
from pflux.spec.idset import IdSet
from pflux.spec.resource import ResourceSet

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, Final

__all__ = ["matching_ranks", "parse", "placeable", "unmet"]

_TERMS: Final = {None: "properties", "host": "hostlist", "hosts": "hostlist", "rank": "ranks"}
_SPLIT: Final = {"properties": ","}
_COMBINED: Final = frozenset(("properties",))
_LOGICAL: Final = ("and", "or", "not")
_KNOWN: Final = ("properties", "hostlist", "ranks", *_LOGICAL)


class _Parser(_core.Parser):
    """``--requires``: a bare operand is properties (split on commas, merged when
    joined by AND), ``host:``/``hosts:`` a hostlist, ``rank:`` ranks."""

    def _term(self, text: str) -> dict[str, Any]:
        return _core.term(text, _TERMS, _SPLIT)

    def _conjoin(self, left: dict[str, Any], right: dict[str, Any]) -> dict[str, Any]:
        return _core.conjoin(left, right, _COMBINED)


def parse(query: str) -> dict[str, Any]:
    """The RFC 31 constraint object of an RFC 35 query; SpecError says what is wrong."""
    try:
        return _Parser(_core.Lexer())._parse(query)
    except ValueError as exc:
        raise SpecError(str(exc)) from None


def matching_ranks(constraint: Any, resources: ResourceSet) -> IdSet:
    """The ranks of ``resources`` whose host, rank and properties meet ``constraint``;
    SpecError names an operator or value that is not RFC 31's."""
    test = _compile(constraint, "constraints")
    return IdSet.from_sorted(
        rank
        for rank, target in resources.targets.items()
        if test(rank, target.hostname, resources.properties)
    )


def unmet(constraint: Any, resources: ResourceSet) -> str | None:
    """Why a job with ``constraint`` cannot run on ``resources``, or None if some rank
    meets it (the scheduler places the job on those only)."""
    try:
        placeable(constraint, resources)
    except SpecError as exc:
        return str(exc)
    return None


def placeable(constraint: Any, resources: ResourceSet) -> IdSet | None:
    """The ranks of ``resources`` that meet ``constraint``, None if all do; SpecError if
    none does or the constraint is malformed."""
    import json

    text = json.dumps(constraint, separators=(",", ":"))
    try:
        ranks = matching_ranks(constraint, resources)
    except SpecError as exc:
        raise SpecError(f"{exc} (in {text})") from None
    if not ranks:
        raise SpecError(f"unsatisfiable constraints {text}: no rank of this instance meets them")
    return None if ranks == resources.ranks() else ranks


Test = Callable[[int, str, Mapping[str, IdSet]], bool]


def _compile(node: Any, path: str) -> Test:
    if not isinstance(node, dict) or len(node) != 1:
        raise SpecError(f"{path}: must be an object with one operator")
    ((operator, values),) = node.items()
    if operator not in _KNOWN:
        raise SpecError(f"{path}: unknown constraint operator '{operator}'")
    where = f"{path}.{operator}"
    if not isinstance(values, list) or (operator == "not" and len(values) != 1):
        raise SpecError(f"{where}: must be an array" + (" of one" if operator == "not" else ""))
    if operator in _LOGICAL:
        tests = [_compile(value, f"{where}[{i}]") for i, value in enumerate(values)]
        if operator == "and":
            return lambda *target: all(test(*target) for test in tests)
        if operator == "or":
            return lambda *target: any(test(*target) for test in tests)
        return lambda *target: not tests[0](*target)
    if not all(isinstance(value, str) and value for value in values):
        raise SpecError(f"{where}: values must be non-empty strings")
    if operator == "properties":
        return _properties(values)
    try:
        if operator == "hostlist":
            hosts = {host for value in values for host in hostlist.decode(value)}
            return lambda rank, host, props: host in hosts
        ranks = [IdSet.decode(value) for value in values]
    except (HostlistError, IdsetError) as exc:
        raise SpecError(f"{where}: {exc}") from None
    return lambda rank, host, props: any(rank in ids for ids in ranks)


def _properties(values: list[str]) -> Test:
    wanted = [(value.startswith("^"), value.lstrip("^")) for value in values]

    def test(rank: int, host: str, props: Mapping[str, IdSet]) -> bool:
        return all((rank in props.get(name, IdSet())) != negated for negated, name in wanted)

    return test
