"""RFC 22 idsets: sets of non-negative integer ids such as ``0-3,7``.

An :class:`IdSet` is immutable and stores sorted, disjoint, non-adjacent
inclusive ranges rather than its members, so ``0-2147483647`` costs as little
as ``0``: ranks, cores and GPUs in R (RFC 20) are all idsets, and the scheduler
combines them per job.

Decoding is strict RFC 22: ascending unique decimal ids without leading zeros,
``a-b`` ranges (``a < b``, as flux-core's libidset requires), optional
brackets around the whole set, and nothing but ``0-9 , - [ ]``.  Ids are at
most :data:`MAX_ID`, the largest id flux-core's libidset accepts (its universe
size is capped at ``INT_MAX + 1``). The set algebra and the text are
``_pfluxcore.idset``'s, which the flux package's ``IDset`` shares.
"""

from __future__ import annotations

from functools import lru_cache

from _pfluxcore import idset as _ranges

from pflux.errors import IdsetError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import NoReturn

__all__ = ["MAX_ID", "IdSet", "decode", "encode"]

MAX_ID = 2**31 - 1
"""The largest id an idset may hold (flux-core: ``IDSET_MAX_UNIVERSE - 1``)."""

_MAX_DIGITS = len(str(MAX_ID))
_CACHED_LEN = 64  # longer texts are rare and would make the cache costly
_ALLOWED = frozenset("0123456789,-[]")

Range = tuple[int, int]


def _show(text: str) -> str:
    """Quote user text for an error message, shortened if it is long."""
    import json  # here: only an error needs it, and it loads re

    return json.dumps(text if len(text) <= 64 else text[:61] + "...", ensure_ascii=False)


def _fail(text: str, rule: str) -> NoReturn:
    raise IdsetError(f"idset {_show(text)}: {rule}")


def _parse_id(s: str, tok: str, text: str) -> int:
    """Convert one decimal id of ``text`` (found in element ``tok``)."""
    if s.isdigit():  # the caller has checked that the text is ASCII
        if s[0] == "0" and len(s) > 1:
            _fail(text, f"leading zero in {_show(s)}")
        n = int(s) if len(s) <= _MAX_DIGITS else MAX_ID + 1
        if n > MAX_ID:
            _fail(text, f"id {s[:20]} exceeds the maximum {MAX_ID}")
        return n
    for c in s:
        if c in "[]":
            _fail(text, "unbalanced or misplaced brackets")
        if c not in _ALLOWED:
            _fail(text, f"invalid character {c!r}")
    if not tok:
        _fail(text, "empty element")
    _fail(text, f"malformed range {_show(tok)}")


def _check_id(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise IdsetError(f"ids must be integers, not {type(value).__name__}")
    if not 0 <= value <= MAX_ID:
        raise IdsetError(f"id {value} is outside 0-{MAX_ID}")
    return value


class IdSet:
    """An immutable set of ids in ``0..MAX_ID``, kept as ranges."""

    __slots__ = ("_count", "_ranges")

    _ranges: tuple[Range, ...]
    _count: int

    def __init__(self, ids: Iterable[int] = ()) -> None:
        if isinstance(ids, IdSet):
            self._ranges, self._count = ids._ranges, ids._count
            return
        ranges, self._count = _ranges.of_sorted(sorted({_check_id(i) for i in ids}))
        self._ranges = tuple(ranges)

    @classmethod
    def _make(cls, ranges: tuple[Range, ...] | list[Range], count: int) -> IdSet:
        new = object.__new__(cls)
        new._ranges = tuple(ranges)
        new._count = count
        return new

    # construction

    @classmethod
    def decode(cls, text: str) -> IdSet:
        """Parse an RFC 22 idset string; raise IdsetError naming the rule broken."""
        if not isinstance(text, str):
            raise IdsetError(f"idset must be a string, not {type(text).__name__}")
        if len(text) <= _CACHED_LEN:
            return _decode_cached(text)
        return _decode(text)

    @classmethod
    def from_ids(cls, ids: Iterable[int]) -> IdSet:
        """The set of ``ids`` (any order, repeats allowed)."""
        return cls(ids)

    @classmethod
    def from_sorted(cls, ids: Iterable[int]) -> IdSet:
        """The set of ``ids``, which the caller knows are valid, unique and ascending."""
        return cls._make(*_ranges.of_sorted(ids))

    @classmethod
    def range(cls, lo: int, hi: int) -> IdSet:
        """The ids ``lo`` to ``hi`` inclusive (empty when ``hi < lo``)."""
        _check_id(lo)
        _check_id(hi)
        if hi < lo:
            return _EMPTY
        return cls._make(((lo, hi),), hi - lo + 1)

    # encoding

    def encode(self, brackets: bool = False) -> str:
        """RFC 22 text; runs of two or more ids become ``a-b``.

        With ``brackets``, a set of more than one id is bracketed, as
        flux-core's ``IDSET_FLAG_BRACKETS`` does (``3``, ``[3-4]``).
        """
        text = _ranges.encode(self._ranges)
        return self.bracket(text) if brackets else text

    def bracket(self, text: str) -> str:
        """``text``, this set's ``encode()``, in brackets if the set has more than one id
        (what ``encode(brackets=True)`` gives, for a caller that has the plain text)."""
        return f"[{text}]" if self._count > 1 else text

    def __str__(self) -> str:
        return self.encode()

    def __repr__(self) -> str:
        return f"IdSet({self.encode()!r})"

    # container protocol

    @property
    def ranges(self) -> tuple[Range, ...]:
        """The inclusive ``(lo, hi)`` ranges, ascending and non-adjacent."""
        return self._ranges

    def __len__(self) -> int:
        return self._count

    def __bool__(self) -> bool:
        return self._count > 0

    def __iter__(self) -> Iterator[int]:
        for lo, hi in self._ranges:
            yield from range(lo, hi + 1)

    def __contains__(self, item: object) -> bool:
        return isinstance(item, int) and _ranges.contains(self._ranges, item)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IdSet):
            return NotImplemented
        return self._ranges == other._ranges

    def __hash__(self) -> int:
        return hash(self._ranges)

    def first(self) -> int:
        """The lowest id; IdsetError if the set is empty."""
        if not self._ranges:
            raise IdsetError("an empty idset has no first id")
        return self._ranges[0][0]

    def last(self) -> int:
        """The highest id; IdsetError if the set is empty."""
        if not self._ranges:
            raise IdsetError("an empty idset has no last id")
        return self._ranges[-1][1]

    def take(self, n: int) -> IdSet:
        """The ``n`` lowest ids; IdsetError if the set holds fewer."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise IdsetError(f"cannot take {n!r} ids: need a non-negative integer")
        if n > self._count:
            raise IdsetError(f"cannot take {n} ids from a set of {self._count}")
        if n == self._count:
            return self
        out: list[Range] = []
        left = n
        for lo, hi in self._ranges:
            if left <= 0:
                break
            size = hi - lo + 1
            if size >= left:
                out.append((lo, lo + left - 1))
                break
            out.append((lo, hi))
            left -= size
        return IdSet._make(tuple(out), n)

    # set algebra

    def union(self, other: IdSet) -> IdSet:
        """Ids in either set."""
        if not other._count:
            return self
        if not self._count:
            return other
        return IdSet._make(*_ranges.merge(self._ranges + other._ranges))

    def intersection(self, other: IdSet) -> IdSet:
        """Ids in both sets."""
        return IdSet._make(*_ranges.intersection(self._ranges, other._ranges))

    def difference(self, other: IdSet) -> IdSet:
        """Ids in this set but not in ``other``."""
        b = other._ranges
        if not b or not self._count:
            return self
        return IdSet._make(*_ranges.difference(self._ranges, b))

    def issubset(self, other: IdSet) -> bool:
        """True if every id of this set is in ``other``."""
        if self._count > other._count:
            return False
        return not self.difference(other)._count

    def isdisjoint(self, other: IdSet) -> bool:
        """True if the sets share no id."""
        return _ranges.isdisjoint(self._ranges, other._ranges)

    def __or__(self, other: object) -> IdSet:
        if not isinstance(other, IdSet):
            return NotImplemented
        return self.union(other)

    def __and__(self, other: object) -> IdSet:
        if not isinstance(other, IdSet):
            return NotImplemented
        return self.intersection(other)

    def __sub__(self, other: object) -> IdSet:
        if not isinstance(other, IdSet):
            return NotImplemented
        return self.difference(other)


_EMPTY = IdSet._make((), 0)


def _decode(text: str) -> IdSet:
    """Parse idset text (already known to be a str)."""
    body = text
    if body and body[0] == "[":
        if len(body) < 2 or body[-1] != "]":
            _fail(text, "unbalanced or misplaced brackets")
        body = body[1:-1]
    if not body:
        return _EMPTY
    if not body.isascii():
        _fail(text, f"invalid character {next(c for c in body if not c.isascii())!r}")
    ranges: list[Range] = []
    count = 0
    last_lo = prev_hi = -2
    for tok in body.split(","):
        lo_s, dash, hi_s = tok.partition("-")
        lo = _parse_id(lo_s, tok, text)
        if dash:
            hi = _parse_id(hi_s, tok, text)
            if hi <= lo:
                _fail(text, f"range {_show(tok)} must ascend from a lower to a higher id")
        else:
            hi = lo
        if lo <= prev_hi:
            if lo < last_lo:
                _fail(text, "ids must be in ascending order")
            _fail(text, f"id {lo} is repeated")
        if lo == prev_hi + 1:
            ranges[-1] = (ranges[-1][0], hi)
        else:
            ranges.append((lo, hi))
        count += hi - lo + 1
        last_lo, prev_hi = lo, hi
    return IdSet._make(tuple(ranges), count)


# R repeats the same few idsets ("0-47") for every job; IdSets are immutable, so share them.
_decode_cached = lru_cache(maxsize=4096)(_decode)


def decode(text: str) -> IdSet:
    """Parse an RFC 22 idset string (see :meth:`IdSet.decode`)."""
    return IdSet.decode(text)


def encode(ids: IdSet | Iterable[int], brackets: bool = False) -> str:
    """RFC 22 text for an IdSet or any iterable of ids."""
    if not isinstance(ids, IdSet):
        ids = IdSet(ids)
    return ids.encode(brackets)
