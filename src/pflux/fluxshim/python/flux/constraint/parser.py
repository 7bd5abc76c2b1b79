"""``flux.constraint.parser``: RFC 35 constraint queries read into RFC 31 objects.

A query is terms ``[operator:]operand`` joined by ``and`` (``&``, ``&&`` or just
whitespace), ``or`` (``|``, ``||``), ``not`` before an expression, ``-`` before a
term, and parentheses; a quoted operand may hold any character. flux-core reads it
with an LALR parser whose precedences are, lowest first: OR, AND (and juxtaposition),
NOT, NEGATE, where a term or ``(`` after an expression reduces what precedes it. The
parser here is a shift-reduce parser with the same table of precedences, so every
query gives flux-core's object (its nesting included) or flux-core's error.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from typing import Any, ClassVar, Dict, Iterator, List, Union

    Node = Dict[str, List[Any]]
    Item = Union["LexToken", Node]

__all__ = ["ConstraintLexer", "ConstraintParser", "ConstraintSyntaxError"]

#  The lexer's patterns, tried in this order at each position
_PATTERN = re.compile(
    r"(?P<NEGATE>-)|(?P<NOT>not\b)|(?P<AND>&{1,2}|and\b)|(?P<OR>\|{1,2}|or\b)"
    r"|(?P<LPAREN>\()|(?P<RPAREN>\))|(?P<TOKEN>[^()|&\s\"']+)|(?P<QUOTE>['\"])"
)
_IGNORED = " \t\r\n\f\v"

#  (level, associativity) of the operators; a token missing here has level 0
_PRECEDENCE = {"OR": (1, "left"), "AND": (2, "left"), "NOT": (3, "right"), "NEGATE": (4, "right")}


class ConstraintSyntaxError(Exception):
    """A query that is not RFC 35's syntax (the message says where)."""


class LexToken:
    """One token: ``type`` (NOT, AND, OR, NEGATE, LPAREN, RPAREN, TOKEN), its text as
    ``value``, and ``lexpos``, its offset in the query."""

    def __init__(self, type: str, value: str, lexpos: int) -> None:
        self.type = type
        self.value = value
        self.lexpos = lexpos
        self.lineno = 1

    def __repr__(self) -> str:
        return f"LexToken({self.type},{self.value!r},{self.lineno},{self.lexpos})"

    __str__ = __repr__


class ConstraintLexer:
    """The tokens of a query: ``input(query)``, then ``token()`` until it gives None
    (or iterate). A term ending in ``:`` joins the next term, so ``op:'a b'`` is one
    token."""

    tokens = ("NOT", "AND", "OR", "NEGATE", "LPAREN", "RPAREN", "TOKEN", "QUOTE")

    def __init__(self, **kw_args: Any) -> None:
        self.parens_level = 0
        self.last_lparens = 0
        self.last_rparens = 0
        self.last_quote: int | None = None
        self.quote_start: int | None = None
        self.pending_token: LexToken | None = None
        self.lexdata = ""
        self.lexpos = 0
        self._done = True
        self._unclosed = ""

    def input(self, data: str) -> None:
        """Start reading ``data``."""
        self.parens_level = 0
        self.last_lparens = 0
        self.last_rparens = 0
        self.last_quote = None
        self.quote_start = None
        self.pending_token = None
        self.lexdata = data
        self.lexpos = 0
        self._done = False
        self._unclosed = ""

    def __iter__(self) -> Iterator[LexToken]:
        return self

    def __next__(self) -> LexToken:
        tok = self.token()
        if tok is None:
            raise StopIteration
        return tok

    def token(self) -> LexToken | None:
        """The next token, or None at the end of the query."""
        data = self.lexdata
        while not self._done:
            if self._unclosed:
                self._done = True
                other = "'" if self._unclosed == '"' else '"'
                raise ConstraintSyntaxError(
                    f"Unclosed quote {other}{self._unclosed}{other} at position {self.quote_start}"
                )
            while self.lexpos < len(data) and data[self.lexpos] in _IGNORED:
                self.lexpos += 1
            if self.lexpos >= len(data):
                self._done = True
                if self.pending_token is not None:
                    val = self.pending_token.value
                    raise ConstraintSyntaxError(f"Missing argument to token '{val}'")
                return None
            found = _PATTERN.match(data, self.lexpos)
            if found is None:
                char, pos = data[self.lexpos], self.lexpos
                raise ConstraintSyntaxError(f"Illegal character '{char}' at position {pos}")
            kind = found.lastgroup or ""
            start, self.lexpos = self.lexpos, found.end()
            if kind == "QUOTE":
                tok = self._quoted(found.group())
            else:
                tok = self._token(LexToken(kind, found.group(), start))
            if tok is not None:
                return tok
        return None

    def _quoted(self, quote: str) -> LexToken | None:
        """The text up to the closing quote, as a term (nothing if empty). Unclosed, the
        text is still given as a term, and the next call raises."""
        self.quote_start = self.lexpos
        self.last_quote = self.lexpos - 1
        end = self.lexdata.find(quote, self.lexpos)
        if end < 0:
            end = len(self.lexdata)
            self._unclosed = quote
        tok = None
        if end > self.lexpos:
            tok = self._token(LexToken("TOKEN", self.lexdata[self.lexpos : end], self.lexpos))
        self.lexpos = end + 1
        if not self._unclosed:
            self.last_quote = None
        return tok

    def _token(self, tok: LexToken) -> LexToken | None:
        if tok.type == "LPAREN":
            self.parens_level += 1
            self.last_lparens = tok.lexpos
        elif tok.type == "RPAREN":
            self.parens_level -= 1
            self.last_rparens = tok.lexpos
        elif tok.type == "TOKEN":
            if self.pending_token is not None:
                tok.value = self.pending_token.value + tok.value
                self.pending_token = None
            elif tok.value.endswith(":"):
                self.pending_token = tok
                return None
        return tok


class ConstraintParser:
    """Parse an RFC 35 query into an RFC 31 constraint object (a dict).

    Subclasses set ``operator_map`` (short names to operators; the key None gives the
    operator of a bare term, without which every term needs one), ``split_values``
    (operator to the string its value is split on) and ``combined_terms`` (operators
    whose values are merged into one term when joined by AND).
    """

    operator_map: ClassVar[dict[str | None, str]] = {}
    split_values: ClassVar[dict[str, str]] = {}
    combined_terms: ClassVar[set[str]] = set()

    def __init__(
        self,
        lexer: ConstraintLexer | None = None,
        optimize: bool = True,
        debug: bool = False,
        write_tables: bool = False,
        **kw_args: Any,
    ) -> None:
        """``optimize``, ``debug``, ``write_tables`` and further keywords are flux-core's
        parser-generator settings; there are no generated tables here to set."""
        self.lexer = ConstraintLexer() if lexer is None else lexer
        self.tokens = self.lexer.tokens
        self.query: str | None = None

    def parse(self, query: str, **kw_args: Any) -> dict[str, Any]:
        """The RFC 31 object of ``query``; ConstraintSyntaxError if it is not valid."""
        self.query = query
        self.lexer.input(query)
        stack: list[Item] = []
        for tok in self.lexer:
            self._settle(stack)
            self._reduce(stack, tok.type)
            self._shift(stack, tok)
        self._settle(stack)
        self._reduce(stack, None)
        if len(stack) != 1 or isinstance(stack[0], LexToken):
            self.p_error(None)
        result: dict[str, Any] = stack[0]  # type: ignore[assignment]  # checked above
        return result

    def _settle(self, stack: list[Item]) -> None:
        """Make the term on top (and a ``-`` before it) an expression: done once the
        token after it is read, so a lexical error there is the one raised first."""
        top = stack[-1] if stack else None
        if not isinstance(top, LexToken) or top.type != "TOKEN":
            return
        term = self.p_expression_token(top.value)
        before = stack[-2] if len(stack) > 1 else None
        if isinstance(before, LexToken) and before.type == "NEGATE":
            stack[-2:] = [{"not": [term]}]
        else:
            stack[-1] = term

    def _shift(self, stack: list[Item], tok: LexToken) -> None:
        top = stack[-1] if stack else None
        after_expr = isinstance(top, dict)
        negated = isinstance(top, LexToken) and top.type == "NEGATE"
        if tok.type == "TOKEN":
            stack.append(tok)
            return
        if tok.type in ("AND", "OR"):
            ok = after_expr
        elif tok.type == "RPAREN":
            opener = stack[-2] if len(stack) > 1 else None
            ok = after_expr and isinstance(opener, LexToken) and opener.type == "LPAREN"
            if ok:
                stack[-2:] = [stack[-1]]
                return
        else:  # NOT, NEGATE, LPAREN: an expression starts
            ok = not negated
        if not ok:
            self.p_error(tok)
        stack.append(tok)

    def _reduce(self, stack: list[Item], lookahead: str | None) -> None:
        """Reduce the stack's top while its rule binds tighter than ``lookahead``."""
        while len(stack) > 1 and isinstance(stack[-1], dict):
            right, before = stack[-1], stack[-2]
            rule = "AND" if isinstance(before, dict) else before.type
            if rule not in _PRECEDENCE or not self._reduces(rule, lookahead):
                return
            if rule == "NOT":
                stack[-2:] = [{"not": [right]}]
            elif isinstance(before, dict):
                stack[-2:] = [self._and(before, right)]
            else:
                left = stack[-3]
                assert isinstance(left, dict)  # AND and OR are shifted after an expression
                stack[-3:] = [self._or(left, right) if rule == "OR" else self._and(left, right)]

    @staticmethod
    def _reduces(rule: str, lookahead: str | None) -> bool:
        if lookahead is None or lookahead == "RPAREN":
            return True
        rlevel, _ = _PRECEDENCE[rule]
        slevel, assoc = _PRECEDENCE.get(lookahead, (0, "right"))
        return slevel < rlevel or (slevel == rlevel and assoc == "left")

    def p_error(self, p: LexToken | None) -> None:
        """Raise the error for the unexpected token ``p`` (None: the end of input)."""
        if p is None:
            if self.lexer.parens_level > 0:
                pos = self.lexer.last_lparens
                raise ConstraintSyntaxError(f"Unclosed parenthesis in position {pos}")
            raise ConstraintSyntaxError(f"Unexpected end of input in '{self.query}'")
        if self.lexer.parens_level < 0:
            raise ConstraintSyntaxError(
                f"Mismatched parentheses starting at position {self.lexer.last_rparens}."
            )
        raise ConstraintSyntaxError(f"Invalid token '{p.value}' at position {p.lexpos}")

    def _and(self, left: Node, right: Node) -> Node:
        return self.combine_like_terms(left, right)

    @staticmethod
    def _or(left: Node, right: Node) -> Node:
        if "or" in left:
            left["or"].append(right)
            return left
        return {"or": [left, right]}

    def combine_like_terms(self, p1: Node, p2: Node) -> Node:
        """``p1 AND p2``: appended to ``p1`` if it is an AND already, and values of one
        of ``combined_terms`` merged into the first such term."""
        if "and" in p1:
            p1["and"].append(p2)
            entries = [p1]
        else:
            entries = [p1, p2]
        merged: dict[str, list[Any]] = {}
        terms: list[Node] = []
        for entry in entries:
            key = next(iter(entry))
            if key not in self.combined_terms:
                terms.append(entry)
            elif key not in merged:
                merged[key] = entry[key]
                terms.append(entry)
            else:
                merged[key].extend(entry[key])
        return terms[0] if len(terms) == 1 else {"and": list(terms)}

    @staticmethod
    def invalid_operator(op: str) -> str | None:
        """The first character not allowed in an operator's name, or None."""
        match = re.search(r"[^\w.+@-]", op)
        return match[0] if match else None

    def p_expression_token(self, text: str) -> Node:
        """A term ``[operator:]operand`` as ``{operator: [values]}``."""
        op, colon, value = text.partition(":")
        if not colon:
            if None not in self.operator_map:
                raise ConstraintSyntaxError(f'Missing required operator in "{text}"')
            op, value = self.operator_map[None], text
        elif op in self.operator_map:
            op = self.operator_map[op]
        invalid = self.invalid_operator(op)
        if invalid:
            raise ConstraintSyntaxError(f"invalid character '{invalid}' in operator '{op}:'")
        if op in self.split_values:
            return {op: value.split(self.split_values[op])}
        return {op: [value]}
