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
    r"(?P<negate>-)|(?P<not>not\b)|(?P<and>&{1,2}|and\b)|(?P<or>\|{1,2}|or\b)"
    r"|(?P<lparen>\()|(?P<rparen>\))|(?P<word>[^()|&\s\"']+)|(?P<quote>['\"])"
)
_SPACE: Final = " \t\r\n\f\v"
#: (level, left-associative) of the operators, as flux-core's parser ranks them; a word
#: or ``(`` after an expression has level 0, so it ends an OR before it (``a|b c`` is
#: ``(a|b)&c``) and is joined by AND after the rest
_PRECEDENCE: Final = {"or": (1, True), "and": (2, True), "not": (3, False), "negate": (4, False)}


class Token:
    """One token of a query: its kind, its text, and where it starts."""

    __slots__ = ("kind", "pos", "text")

    def __init__(self, kind: str, text: str, pos: int) -> None:
        self.kind, self.text, self.pos = kind, text, pos


class _Lexer:
    """The query's tokens one at a time, as flux-core's lexer gives them: a word ending
    in ``:`` joins the next word (``op:'a b'``), and an error is raised only when the
    parser asks for the token at fault."""

    def __init__(self, query: str) -> None:
        self.query = query
        self.pos = 0
        self.parens = 0  # open parentheses, negative when more were closed
        self.last_lparen = self.last_rparen = 0
        self.pending: Token | None = None
        self.unclosed: tuple[str, int] | None = None

    def __iter__(self) -> Iterator[Token]:
        query = self.query
        while True:
            if self.unclosed is not None:
                quote, pos = self.unclosed
                other = "'" if quote == '"' else '"'
                raise SpecError(f"Unclosed quote {other}{quote}{other} at position {pos}")
            while self.pos < len(query) and query[self.pos] in _SPACE:
                self.pos += 1
            if self.pos >= len(query):
                if self.pending is not None:
                    raise SpecError(f"Missing argument to token '{self.pending.text}'")
                return
            found = _TOKEN.match(query, self.pos)
            if found is None:
                raise SpecError(f"Illegal character '{query[self.pos]}' at position {self.pos}")
            kind = found.lastgroup or ""
            start, self.pos = self.pos, found.end()
            token = (
                self._quoted(found.group())
                if kind == "quote"
                else self._token(Token(kind, found.group(), start))
            )
            if token is not None:
                yield token

    def _quoted(self, quote: str) -> Token | None:
        """The text up to the closing quote as a word (none if empty); unclosed, the
        word still comes, and the error after it."""
        start = self.pos
        end = self.query.find(quote, start)
        if end < 0:
            end, self.unclosed = len(self.query), (quote, start)
        self.pos = end + 1
        return self._token(Token("word", self.query[start:end], start)) if end > start else None

    def _token(self, token: Token) -> Token | None:
        if token.kind == "lparen":
            self.parens += 1
            self.last_lparen = token.pos
        elif token.kind == "rparen":
            self.parens -= 1
            self.last_rparen = token.pos
        elif token.kind == "word":
            if self.pending is not None:
                token.text = self.pending.text + token.text
                self.pending = None
            elif token.text.endswith(":"):
                self.pending = token
                return None
        return token


Item = dict[str, Any] | Token


class _Parser:
    """A shift-reduce parser with flux-core's precedences: the same object, nesting
    and error for every query."""

    def __init__(self, query: str) -> None:
        self.query = query
        self.lexer = _Lexer(query)

    def parse(self) -> dict[str, Any]:
        stack: list[Item] = []
        for token in self.lexer:
            self._settle(stack)
            self._reduce(stack, token.kind)
            self._shift(stack, token)
        self._settle(stack)
        self._reduce(stack, None)
        if len(stack) != 1 or isinstance(stack[0], Token):
            raise self._error(None)
        return stack[0]

    @staticmethod
    def _settle(stack: list[Item]) -> None:
        """The word on top (and a ``-`` before it) made a term, once the next token is
        read: an error lexing that one comes first, as in flux-core."""
        if not stack or not isinstance(stack[-1], Token) or stack[-1].kind != "word":
            return
        term = _term(stack[-1].text)
        before = stack[-2] if len(stack) > 1 else None
        if isinstance(before, Token) and before.kind == "negate":
            stack[-2:] = [{"not": [term]}]
        else:
            stack[-1] = term

    def _shift(self, stack: list[Item], token: Token) -> None:
        top = stack[-1] if stack else None
        negated = isinstance(top, Token) and top.kind == "negate"
        if token.kind == "word":
            ok = True
        elif token.kind in ("and", "or"):
            ok = isinstance(top, dict)
        elif token.kind == "rparen":
            opener = stack[-2] if len(stack) > 1 else None
            ok = isinstance(top, dict) and isinstance(opener, Token) and opener.kind == "lparen"
            if ok:
                stack[-2:] = [stack[-1]]
                return
        else:  # not, negate, lparen: an expression starts
            ok = not negated
        if not ok:
            raise self._error(token)
        stack.append(token)

    @staticmethod
    def _reduce(stack: list[Item], lookahead: str | None) -> None:
        """Reduce the top of the stack while its operator binds tighter than ``lookahead``."""
        while len(stack) > 1 and isinstance(stack[-1], dict):
            right, before = stack[-1], stack[-2]
            rule = "and" if isinstance(before, dict) else before.kind
            if rule not in _PRECEDENCE:
                return
            if lookahead not in (None, "rparen"):
                level, left_assoc = _PRECEDENCE[rule]
                ahead, _ = _PRECEDENCE.get(lookahead, (0, False))
                if ahead > level or (ahead == level and not left_assoc):
                    return
            if rule == "not":
                stack[-2:] = [{"not": [right]}]
            elif isinstance(before, dict):
                stack[-2:] = [_and(before, right)]
            else:
                left = stack[-3]
                assert isinstance(left, dict)  # and/or are shifted after an expression only
                stack[-3:] = [_or(left, right) if rule == "or" else _and(left, right)]

    def _error(self, token: Token | None) -> SpecError:
        lexer = self.lexer
        if token is None:
            if lexer.parens > 0:
                return SpecError(f"Unclosed parenthesis in position {lexer.last_lparen}")
            return SpecError(f"Unexpected end of input in '{self.query}'")
        if lexer.parens < 0:
            return SpecError(f"Mismatched parentheses starting at position {lexer.last_rparen}.")
        return SpecError(f"Invalid token '{token.text}' at position {token.pos}")


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


def _or(left: dict[str, Any], right: dict[str, Any]) -> dict[str, Any]:
    """``left OR right`` as flux-core writes it: one ``or`` list."""
    if "or" in left:
        left["or"].append(right)
        return left
    return {"or": [left, right]}


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
