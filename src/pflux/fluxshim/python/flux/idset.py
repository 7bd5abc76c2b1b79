"""flux-core's ``flux.idset``: mutable sets of non-negative integer ids (RFC 22).

An ``IDset`` keeps sorted, disjoint, non-adjacent inclusive ranges, so ``0-4000000``
costs no more than ``0``. Decoding is libidset's: ids in any order, repeats and a
descending ``hi-lo`` range allowed, brackets around the whole set ignored.
"""

from __future__ import annotations

import numbers

from _pfluxcore import idset as _ranges

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterator, List, Tuple

    Ranges = List[Tuple[int, int]]

IDSET_INVALID_ID = 2**32 - 2
"""What ``next`` answers past the last id (libidset's ``UINT_MAX - 1``)."""
IDSET_FLAG_BRACKETS = 2
"""Encode a set of more than one id in brackets."""
IDSET_FLAG_RANGE = 4
"""Encode runs of consecutive ids as ``lo-hi``."""

__all__ = [
    "IDSET_FLAG_BRACKETS",
    "IDSET_FLAG_RANGE",
    "IDSET_INVALID_ID",
    "IDset",
    "decode",
]


def _number(text: str, whole: str) -> int:
    if not text.isdigit() or not text.isascii():
        raise ValueError(f"IDset(): Invalid argument: {whole}")
    value = int(text)
    if value >= IDSET_INVALID_ID:
        raise ValueError(f"IDset(): Invalid argument: {whole}")
    return value


def _parse(text: str) -> Ranges:
    """libidset's ``idset_decode``: the ranges of ``text``, or ValueError."""
    body = text[1:] if text.startswith("[") else text
    body = body[:-1] if body.endswith("]") else body
    ranges: Ranges = []
    for token in body.split(","):
        if not token:
            if body:
                raise ValueError(f"IDset(): Invalid argument: {text}")
            continue
        lo_s, dash, hi_s = token.partition("-")
        lo = _number(lo_s, text)
        hi = _number(hi_s, text) if dash else lo
        ranges.append((min(lo, hi), max(lo, hi)))
    return _ranges.merge(ranges)[0]


class IDset:
    """A set of non-negative integer ids, from an RFC 22 string (``"0-3,7"``), an int,
    another IDset, or an iterable of ints."""

    def __init__(self, arg: Any = "", flags: int = IDSET_FLAG_RANGE, handle: Any = None) -> None:
        self.default_flags = flags
        self._ranges: Ranges
        if handle is not None:
            self._ranges = list(handle)
        elif isinstance(arg, IDset):
            self._ranges = list(arg._ranges)
        elif isinstance(arg, str):
            self._ranges = _parse(arg)
        elif isinstance(arg, bool):
            raise TypeError(f"IDset() expected an idset string or iterable, got {type(arg)}")
        elif isinstance(arg, numbers.Integral):
            self._ranges = _parse(str(int(arg)))
        else:
            try:
                items = sorted(arg)
            except TypeError:
                raise TypeError(
                    f"IDset() expected an idset string or iterable, got {type(arg)}"
                ) from None
            self._ranges = _parse(",".join(str(i) for i in items))

    def __str__(self) -> str:
        return self.encode()

    def __repr__(self) -> str:
        return f"IDset('{self.encode(IDSET_FLAG_RANGE)}')"

    def __len__(self) -> int:
        return self.count()

    def __iter__(self) -> Iterator[int]:
        for lo, hi in list(self._ranges):
            yield from range(lo, hi + 1)

    def __contains__(self, i: object) -> bool:
        return self.test(i)

    def __getitem__(self, i: object) -> bool:
        return self.test(i)

    def __setitem__(self, i: int, value: Any) -> None:
        if not isinstance(value, int) or value not in (0, 1):
            raise TypeError(f"IDset setitem must be bool or 0,1 not {type(value)}")
        if value:
            self.set(i)
        else:
            self.clear(i)

    def __eq__(self, idset: object) -> bool:
        return self.equal(idset)

    __hash__ = None  # type: ignore[assignment]  # mutable, as flux-core's

    def __add__(self, arg: Any) -> IDset:
        return self.union(arg)

    def __or__(self, arg: Any) -> IDset:
        return self.union(arg)

    def __sub__(self, arg: Any) -> IDset:
        return self.difference(arg)

    def __and__(self, arg: Any) -> IDset:
        return self.intersect(arg)

    def __iadd__(self, arg: Any) -> IDset:
        return self.add(arg)

    def __isub__(self, arg: Any) -> IDset:
        return self.subtract(arg)

    def equal(self, idset: object) -> bool:
        """True if ``idset`` (an IDset) holds the same ids; TypeError for anything else."""
        if not isinstance(idset, IDset):
            raise TypeError(f"IDset.equal expects an IDset, not {type(idset)}")
        return self._ranges == idset._ranges

    def set_flags(self, flags: int) -> None:
        """The flags ``encode`` and ``str`` use by default (IDSET_FLAG_RANGE, _BRACKETS)."""
        self.default_flags = flags

    @staticmethod
    def _check_index(i: object, name: str) -> int:
        if isinstance(i, bool) or not isinstance(i, numbers.Integral):
            raise TypeError(f"IDset.{name} supports integers, not {type(i)}")
        if i < 0:
            raise ValueError(f"negative index passed to IDset.{name}")
        return int(i)

    def test(self, i: object) -> bool:
        """True if id ``i`` is in the set."""
        return _ranges.contains(self._ranges, self._check_index(i, "test"))

    def _span(self, start: int, end: int | None, name: str) -> tuple[int, int]:
        lo = self._check_index(start, name)
        if end is None:
            return lo, lo
        hi = self._check_index(end, name)
        if hi < lo:
            raise ValueError(f"can't set range with {start} > {end}")
        return lo, hi

    def set(self, start: int, end: int | None = None) -> IDset:
        """Add id ``start`` (or ``start`` to ``end``); returns the set itself."""
        self._ranges = _ranges.merge([*self._ranges, self._span(start, end, "set")])[0]
        return self

    def clear(self, start: int, end: int | None = None) -> IDset:
        """Remove id ``start`` (or ``start`` to ``end``); returns the set itself."""
        self._ranges = _ranges.difference(self._ranges, [self._span(start, end, "clear")])[0]
        return self

    def expand(self) -> list[int]:
        """The ids, ascending, as a list."""
        return list(self)

    def count(self) -> int:
        """How many ids the set holds."""
        return sum(hi - lo + 1 for lo, hi in self._ranges)

    def copy(self) -> IDset:
        """An independent copy, with the same default flags."""
        return IDset(handle=self._ranges, flags=self.default_flags)

    def encode(self, flags: int | None = None) -> str:
        """The RFC 22 string, shaped by ``flags`` (default: the set's default flags)."""
        if flags is None:
            flags = self.default_flags
        text = _ranges.encode(self._ranges, runs=bool(flags & IDSET_FLAG_RANGE))
        if flags & IDSET_FLAG_BRACKETS and self.count() > 1:
            return f"[{text}]"
        return text

    def first(self) -> int:
        """The lowest id, or IDSET_INVALID_ID if the set is empty."""
        return self._ranges[0][0] if self._ranges else IDSET_INVALID_ID

    def last(self) -> int:
        """The highest id, or IDSET_INVALID_ID if the set is empty."""
        return self._ranges[-1][1] if self._ranges else IDSET_INVALID_ID

    def next(self, i: int) -> int:
        """The lowest id above ``i``, or IDSET_INVALID_ID if there is none."""
        found = _ranges.next_id(self._ranges, self._check_index(i, "next") + 1)
        return IDSET_INVALID_ID if found is None else found

    @staticmethod
    def _of(arg: Any) -> IDset:
        """``arg`` as an IDset: an IDset, an idset string or an iterable of ints."""
        if isinstance(arg, IDset):
            return arg
        if not isinstance(arg, str) and not hasattr(arg, "__iter__"):
            raise TypeError(f"expected an IDset, idset string or iterable, got {type(arg)}")
        return IDset(arg)

    def add(self, arg: Any) -> IDset:
        """Add the ids of ``arg`` (IDset, idset string or iterable of ints) in place."""
        self._ranges = _ranges.merge(self._ranges + self._of(arg)._ranges)[0]
        return self

    def subtract(self, arg: Any) -> IDset:
        """Remove the ids of ``arg`` (IDset, idset string or iterable of ints) in place."""
        self._ranges = _ranges.difference(self._ranges, self._of(arg)._ranges)[0]
        return self

    def union(self, *args: Any) -> IDset:
        """A new set: the ids in this set or any of ``args``."""
        result = self.copy()
        for arg in args:
            result.add(arg)
        return result

    def intersect(self, *args: Any) -> IDset:
        """A new set: the ids in this set and in every one of ``args``."""
        result = self.copy()
        for arg in args:
            result._ranges = _ranges.intersection(result._ranges, self._of(arg)._ranges)[0]
        return result

    def difference(self, *args: Any) -> IDset:
        """A new set: the ids in this set and in none of ``args``."""
        result = self.copy()
        for arg in args:
            result.subtract(arg)
        return result


def decode(string: Any) -> IDset:
    """The IDset of an RFC 22 string."""
    return IDset(string)
