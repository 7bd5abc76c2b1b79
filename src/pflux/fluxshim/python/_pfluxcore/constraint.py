"""RFC 35 constraint queries read into RFC 31 objects, as flux-core's parser reads them.

A query is terms ``[operator:]operand`` joined by ``and`` (``&``, ``&&`` or just
whitespace), ``or`` (``|``, ``||``), ``not`` before an expression, ``-`` before a
term, and parentheses; a quoted operand may hold any character. flux-core reads it
with an LALR parser whose precedences are, lowest first: OR, AND (and
juxtaposition), NOT, NEGATE, where a term or ``(`` after an expression reduces what
precedes it (``a|b c`` is ``(a|b)&c``). ``Parser`` is a shift-reduce parser with the
same table, so every query gives flux-core's object (its nesting included) or
flux-core's error. pflux's ``--requires`` and the flux package's
``ConstraintParser`` both read queries here; the lexer and parser raise
``ValueError`` with flux-core's message, which each face raises as its own error.
"""

from __future__ import annotations

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing (several ms)
if TYPE_CHECKING:
    from re import Pattern
    from typing import Any, Callable, Container, Dict, Iterator, List, Mapping, NoReturn, Union

    Node = Dict[str, List[Any]]
    Item = Union["LexToken", Node]

#: the lexer's patterns, tried in this order at each position, and a character an
#: operator may not hold
_TOKENS = (
    r"(?P<NEGATE>-)|(?P<NOT>not\b)|(?P<AND>&{1,2}|and\b)|(?P<OR>\|{1,2}|or\b)"
    r"|(?P<LPAREN>\()|(?P<RPAREN>\))|(?P<TOKEN>[^()|&\s\"']+)|(?P<QUOTE>['\"])"
)
_OPERATOR_CHAR = r"[^\w.+@-]"
_IGNORED = " \t\r\n\f\v"
_compiled: list[Pattern[str]] = []


def _patterns() -> list[Pattern[str]]:
    """The two patterns, compiled on first use: ``import re`` is for a query's reader
    to pay, not every importer of the core."""
    if not _compiled:
        import re

        _compiled.extend((re.compile(_TOKENS), re.compile(_OPERATOR_CHAR)))
    return _compiled


#: (level, left-associative) of the operators; a token missing here has level 0
_PRECEDENCE = {"OR": (1, True), "AND": (2, True), "NOT": (3, False), "NEGATE": (4, False)}


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


class Lexer:
    """The tokens of a query: ``input(query)``, then ``token()`` until it gives None
    (or iterate). A term ending in ``:`` joins the next term, so ``op:'a b'`` is one
    token. An error is raised only when the token at fault is asked for."""

    def __init__(self) -> None:
        self.input("")
        self._done = True

    def input(self, data: str) -> None:
        """Start reading ``data``."""
        self.parens_level = 0  # open parentheses, negative when more were closed
        self.last_lparens = 0
        self.last_rparens = 0
        self.last_quote: int | None = None
        self.quote_start: int | None = None
        self.pending_token: LexToken | None = None
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
                raise ValueError(
                    f"Unclosed quote {other}{self._unclosed}{other} at position {self.quote_start}"
                )
            while self.lexpos < len(data) and data[self.lexpos] in _IGNORED:
                self.lexpos += 1
            if self.lexpos >= len(data):
                self._done = True
                if self.pending_token is not None:
                    raise ValueError(f"Missing argument to token '{self.pending_token.value}'")
                return None
            found = _patterns()[0].match(data, self.lexpos)
            if found is None:
                char, pos = data[self.lexpos], self.lexpos
                raise ValueError(f"Illegal character '{char}' at position {pos}")
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


class Parser:
    """The shift-reduce parser over ``lexer``'s tokens. A face sets how a term reads
    (``_term``), how two expressions join by AND (``_conjoin``) and what a syntax
    error raises (``_fail``, by default ValueError with flux-core's message)."""

    def __init__(self, lexer: Lexer) -> None:
        self.lexer = lexer
        self.query: str | None = None

    def _term(self, text: str) -> Node:
        raise NotImplementedError

    def _conjoin(self, left: Node, right: Node) -> Node:
        raise NotImplementedError

    def _fail(self, tok: LexToken | None) -> NoReturn:
        raise ValueError(syntax_error(self.lexer, self.query, tok))

    def _parse(self, query: str) -> Node:
        """The RFC 31 object of ``query``."""
        self.query = query
        self.lexer.input(query)
        stack: list[Item] = []
        for tok in self.lexer:
            self._settle(stack)
            self._reduce(stack, tok.type)
            self._shift(stack, tok)
        self._settle(stack)
        self._reduce(stack, None)
        top = stack[0] if len(stack) == 1 else None
        if not isinstance(top, dict):
            self._fail(None)
        return top

    def _settle(self, stack: list[Item]) -> None:
        """Make the term on top (and a ``-`` before it) an expression: done once the
        token after it is read, so a lexical error there is the one raised first."""
        top = stack[-1] if stack else None
        if not isinstance(top, LexToken) or top.type != "TOKEN":
            return
        term = self._term(top.value)
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
            self._fail(tok)
        stack.append(tok)

    def _reduce(self, stack: list[Item], lookahead: str | None) -> None:
        """Reduce the stack's top while its rule binds tighter than ``lookahead``."""
        while len(stack) > 1 and isinstance(stack[-1], dict):
            right, before = stack[-1], stack[-2]
            rule = "AND" if isinstance(before, dict) else before.type
            if rule not in _PRECEDENCE or not _reduces(rule, lookahead):
                return
            if rule == "NOT":
                stack[-2:] = [{"not": [right]}]
            elif isinstance(before, dict):
                stack[-2:] = [self._conjoin(before, right)]
            else:
                left = stack[-3]
                assert isinstance(left, dict)  # AND and OR are shifted after an expression
                stack[-3:] = [disjoin(left, right) if rule == "OR" else self._conjoin(left, right)]


def _reduces(rule: str, lookahead: str | None) -> bool:
    if lookahead is None or lookahead == "RPAREN":
        return True
    level, left_assoc = _PRECEDENCE[rule]
    ahead, _ = _PRECEDENCE.get(lookahead, (0, False))
    return ahead < level or (ahead == level and left_assoc)


def syntax_error(lexer: Lexer, query: str | None, tok: LexToken | None) -> str:
    """flux-core's message for the unexpected token ``tok`` (None: the end of input)."""
    if tok is None:
        if lexer.parens_level > 0:
            return f"Unclosed parenthesis in position {lexer.last_lparens}"
        return f"Unexpected end of input in '{query}'"
    if lexer.parens_level < 0:
        return f"Mismatched parentheses starting at position {lexer.last_rparens}."
    return f"Invalid token '{tok.value}' at position {tok.lexpos}"


def disjoin(left: Node, right: Node) -> Node:
    """``left OR right`` as flux-core writes it: one ``or`` list."""
    if "or" in left:
        left["or"].append(right)
        return left
    return {"or": [left, right]}


def conjoin(left: Node, right: Node, combined: Container[str]) -> Node:
    """``left AND right`` as flux-core writes it: appended to ``left`` if it is an AND
    already, and two terms of an operator in ``combined`` merged into one."""
    if "and" in left:
        left["and"].append(right)
        return left
    lkey, rkey = next(iter(left)), next(iter(right))
    if lkey == rkey and lkey in combined:
        left[lkey].extend(right[lkey])
        return left
    return {"and": [left, right]}


def invalid_operator(op: str) -> str | None:
    """The first character not allowed in an operator's name, or None."""
    match = _patterns()[1].search(op)
    return match[0] if match else None


def term(
    text: str,
    operator_map: Mapping[str | None, str],
    split_values: Mapping[str, str],
    invalid: Callable[[str], str | None] = invalid_operator,
) -> Node:
    """A term ``[operator:]operand`` as ``{operator: [values]}``: a short operator named
    by ``operator_map`` (its key None: the operator of a bare operand), values split
    on ``split_values[operator]``; ``invalid`` finds a character an operator may not
    hold."""
    op, colon, value = text.partition(":")
    if not colon:
        if None not in operator_map:
            raise ValueError(f'Missing required operator in "{text}"')
        op, value = operator_map[None], text
    elif op in operator_map:
        op = operator_map[op]
    bad = invalid(op)
    if bad:
        raise ValueError(f"invalid character '{bad}' in operator '{op}:'")
    if op in split_values:
        return {op: value.split(split_values[op])}
    return {op: [value]}
