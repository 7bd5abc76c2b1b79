"""Job constraints: RFC 35's query syntax (``--requires``) read into RFC 31's JSON
object, and an RFC 31 object matched against the execution targets of R.

The query ``a b``, ``a&b`` or ``a,b`` requires properties a and b; ``|`` or
``or`` is OR, ``not`` negates an expression and ``-`` a term, parentheses
group, whitespace is AND and binds as ``&`` does, below ``not`` and above OR.
A term is ``operator:operand`` (``host``/``hosts`` mean ``hostlist``, ``rank``
means ``ranks``); a bare operand is a list of properties, ``^p`` meaning "not
p". The JSON follows flux-core's reading of the same query, so both submit the
same jobspec: properties joined by AND are one list, and ANDs and ORs chain
into one list each.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

from pflux.errors import HostlistError, IdsetError, SpecError
from pflux.spec import hostlist
from pflux.spec.idset import IdSet
from pflux.spec.resource import ResourceSet

__all__ = ["matching_ranks", "parse", "placeable", "unmet"]

_OPERATORS: Final = {"host": "hostlist", "hosts": "hostlist", "rank": "ranks"}
_LOGICAL: Final = ("and", "or", "not")
_KNOWN: Final = ("properties", "hostlist", "ranks", *_LOGICAL)
_TOKEN: Final = re.compile(
    r"""(?P<space>\s+)|(?P<negate>-)|(?P<not>not\b)|(?P<and>&{1,2}|and\b)|(?P<or>\|{1,2}|or\b)
    |(?P<lparen>\()|(?P<rparen>\))|(?P<quote>['"])|(?P<word>[^()|&\s"']+)""",
    re.VERBOSE,
)
Token = tuple[str, str, int]  # kind, text, position


def _tokens(query: str) -> Iterator[Token]:
    """The query's tokens; a word ending in ``:`` takes a quoted operand that follows."""
    pos = 0
    pending: Token | None = None
    while pos < len(query):
        found = _TOKEN.match(query, pos)
        if found is None:  # the pattern matches any character: cannot happen
            raise SpecError(f"Illegal character '{query[pos]}' at position {pos}")
        kind = found.lastgroup or ""
        text = found.group()
        start, pos = pos, found.end()
        if kind == "quote":
            end = query.find(text, pos)
            if end < 0:
                raise SpecError(f"Unclosed quote {text!r} at position {start}")
            kind, text, pos = "word", query[pos:end], end + 1
            if not text:
                continue
        if kind == "space":
            continue
        if kind == "word" and pending is not None:
            yield ("word", pending[1] + text, pending[2])
            pending = None
        elif kind == "word" and text.endswith(":"):
            pending = (kind, text, start)
        elif pending is not None:
            break
        else:
            yield (kind, text, start)
    if pending is not None:
        raise SpecError(f"Missing argument to token '{pending[1]}'")


class _Parser:
    def __init__(self, query: str) -> None:
        self.query = query
        self.tokens = list(_tokens(query))
        self.at = 0

    def peek(self) -> str | None:
        return self.tokens[self.at][0] if self.at < len(self.tokens) else None

    def take(self) -> Token:
        if self.at >= len(self.tokens):
            raise SpecError(f"Unexpected end of input in '{self.query}'")
        token = self.tokens[self.at]
        self.at += 1
        return token

    def fail(self) -> SpecError:
        kind, text, pos = self.tokens[self.at]
        if kind == "rparen":
            return SpecError(f"Mismatched parenthesis at position {pos}")
        return SpecError(f"Invalid token '{text}' at position {pos}")

    def parse(self) -> dict[str, Any]:
        if not self.tokens:
            raise SpecError("empty constraint")
        result = self.either()
        if self.at < len(self.tokens):
            raise self.fail()
        return result

    def either(self) -> dict[str, Any]:
        result = self.both()
        while self.peek() == "or":
            self.take()
            right = self.both()
            if "or" in result:
                result["or"].append(right)
            else:
                result = {"or": [result, right]}
        return result

    def both(self) -> dict[str, Any]:
        result = self.unary()
        while self.peek() in ("and", "not", "negate", "lparen", "word"):
            if self.peek() == "and":
                self.take()
            result = _and(result, self.unary())
        return result

    def unary(self) -> dict[str, Any]:
        kind, text, pos = self.take()
        if kind == "not":
            return {"not": [self.unary()]}
        if kind == "negate":
            kind, text, pos = self.take()
            if kind != "word":
                raise SpecError(f"Invalid token '{text}' at position {pos}")
            return {"not": [_term(text)]}
        if kind == "lparen":
            inner = self.either()
            if self.peek() != "rparen":
                if self.peek() is None:
                    raise SpecError(f"Unclosed parenthesis in position {pos}")
                raise self.fail()
            self.take()
            return inner
        if kind == "word":
            return _term(text)
        raise SpecError(f"Invalid token '{text}' at position {pos}")


def _term(text: str) -> dict[str, Any]:
    operator, colon, value = text.partition(":")
    if not colon:
        operator, value = "properties", text
    operator = _OPERATORS.get(operator, operator)
    bad = re.search(r"[^\w.+@-]", operator)
    if bad:
        raise SpecError(f"invalid character '{bad.group()}' in operator '{operator}:'")
    if operator == "properties":
        return {operator: value.split(",")}
    return {operator: [value]}


def _and(left: dict[str, Any], right: dict[str, Any]) -> dict[str, Any]:
    """``left AND right`` as flux-core writes it: one ``and`` list, properties merged."""
    if "and" in left:
        left["and"].append(right)
        return left
    if "properties" in left and "properties" in right:
        left["properties"].extend(right["properties"])
        return left
    return {"and": [left, right]}


def parse(query: str) -> dict[str, Any]:
    """The RFC 31 constraint object of an RFC 35 query; SpecError says what is wrong."""
    return _Parser(query).parse()


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
