"""``flux.constraint.parser``: RFC 35 constraint queries read into RFC 31 objects.

A query is terms ``[operator:]operand`` joined by ``and`` (``&``, ``&&`` or just
whitespace), ``or`` (``|``, ``||``), ``not`` before an expression, ``-`` before a
term, and parentheses; a quoted operand may hold any character. The lexer and the
shift-reduce parser with flux-core's precedences are ``_pfluxcore.constraint``'s,
which pflux's ``--requires`` reads queries with too; this module gives them
flux-core's classes, settings and ``ConstraintSyntaxError``.
"""

from __future__ import annotations

from _pfluxcore import constraint as _core
from _pfluxcore.constraint import LexToken

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from typing import Any, ClassVar, NoReturn

    from _pfluxcore.constraint import Node

__all__ = ["ConstraintLexer", "ConstraintParser", "ConstraintSyntaxError"]


class ConstraintSyntaxError(Exception):
    """A query that is not RFC 35's syntax (the message says where)."""


class ConstraintLexer(_core.Lexer):
    """The tokens of a query: ``input(query)``, then ``token()`` until it gives None
    (or iterate). A term ending in ``:`` joins the next term, so ``op:'a b'`` is one
    token."""

    tokens = ("NOT", "AND", "OR", "NEGATE", "LPAREN", "RPAREN", "TOKEN", "QUOTE")

    def __init__(self, **kw_args: Any) -> None:
        super().__init__()

    def token(self) -> LexToken | None:
        """The next token, or None at the end of the query."""
        try:
            return super().token()
        except ValueError as exc:
            raise ConstraintSyntaxError(str(exc)) from None


class ConstraintParser(_core.Parser):
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
        lexer = ConstraintLexer() if lexer is None else lexer
        super().__init__(lexer)
        self.tokens = lexer.tokens

    def parse(self, query: str, **kw_args: Any) -> dict[str, Any]:
        """The RFC 31 object of ``query``; ConstraintSyntaxError if it is not valid."""
        return self._parse(query)

    def p_error(self, p: LexToken | None) -> None:
        """Raise the error for the unexpected token ``p`` (None: the end of input)."""
        raise ConstraintSyntaxError(_core.syntax_error(self.lexer, self.query, p))

    def _fail(self, tok: LexToken | None) -> NoReturn:
        self.p_error(tok)
        raise AssertionError("p_error returned")

    def _conjoin(self, left: Node, right: Node) -> Node:
        return self.combine_like_terms(left, right)

    def combine_like_terms(self, p1: Node, p2: Node) -> Node:
        """``p1 AND p2``: appended to ``p1`` if it is an AND already, and values of one
        of ``combined_terms`` merged into the first such term."""
        return _core.conjoin(p1, p2, self.combined_terms)

    @staticmethod
    def invalid_operator(op: str) -> str | None:
        """The first character not allowed in an operator's name, or None."""
        return _core.invalid_operator(op)

    def _term(self, text: str) -> Node:
        return self.p_expression_token(text)

    def p_expression_token(self, text: str) -> Node:
        """A term ``[operator:]operand`` as ``{operator: [values]}``."""
        try:
            return _core.term(text, self.operator_map, self.split_values, self.invalid_operator)
        except ValueError as exc:
            raise ConstraintSyntaxError(str(exc)) from None
