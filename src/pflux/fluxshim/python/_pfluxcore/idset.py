"""RFC 22 idsets as lists of ranges: the algebra and the text both faces share.

A set of ids is kept as sorted, disjoint, non-adjacent inclusive ``(lo, hi)``
ranges, so ``0-2147483647`` costs as little as ``0``. pflux's ``IdSet``
(immutable, strict RFC 22 decoding) and the flux package's ``IDset`` (mutable,
libidset's lenient decoding) differ in what text they accept and in their
errors, not in this. The operations that build a set return its ranges and
how many ids they hold, which pflux keeps beside them.
"""

from __future__ import annotations

from bisect import bisect_right

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing (several ms)
if TYPE_CHECKING:
    from typing import Iterable, List, Sequence, Tuple

    Range = Tuple[int, int]
    Ranges = List[Range]

_ABOVE_ANY_ID = 1 << 64  # pairs with an id so that bisection finds its range


def merge(ranges: Iterable[Range]) -> tuple[Ranges, int]:
    """``ranges`` in any order, those that overlap or touch joined."""
    out: Ranges = []
    count = 0
    cur_lo = cur_hi = -2
    for lo, hi in sorted(ranges):
        if lo <= cur_hi + 1:
            cur_hi = max(cur_hi, hi)
            continue
        if cur_hi >= 0:
            out.append((cur_lo, cur_hi))
            count += cur_hi - cur_lo + 1
        cur_lo, cur_hi = lo, hi
    if cur_hi >= 0:
        out.append((cur_lo, cur_hi))
        count += cur_hi - cur_lo + 1
    return out, count


def of_sorted(ids: Iterable[int]) -> tuple[Ranges, int]:
    """The ranges of ascending unique ids."""
    out: Ranges = []
    count = 0
    lo = hi = -2
    for i in ids:
        if i == hi + 1:
            hi = i
        else:
            if hi >= 0:
                out.append((lo, hi))
            lo = hi = i
        count += 1
    if hi >= 0:
        out.append((lo, hi))
    return out, count


def intersection(a: Sequence[Range], b: Sequence[Range]) -> tuple[Ranges, int]:
    """The ids in both ``a`` and ``b``."""
    out: Ranges = []
    count = 0
    i = j = 0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
            count += hi - lo + 1
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out, count


def difference(a: Sequence[Range], b: Sequence[Range]) -> tuple[Ranges, int]:
    """The ids in ``a`` and not in ``b``."""
    out: Ranges = []
    count = 0
    j = 0
    for lo, hi in a:
        while j < len(b) and b[j][1] < lo:
            j += 1
        cur = lo
        k = j
        while k < len(b) and b[k][0] <= hi:
            if b[k][0] > cur:
                out.append((cur, b[k][0] - 1))
                count += b[k][0] - cur
            cur = max(cur, b[k][1] + 1)
            k += 1
        if cur <= hi:
            out.append((cur, hi))
            count += hi - cur + 1
    return out, count


def isdisjoint(a: Sequence[Range], b: Sequence[Range]) -> bool:
    """Whether ``a`` and ``b`` share no id."""
    i = j = 0
    while i < len(a) and j < len(b):
        if max(a[i][0], b[j][0]) <= min(a[i][1], b[j][1]):
            return False
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return True


def contains(ranges: Sequence[Range], n: int) -> bool:
    """Whether id ``n`` is in ``ranges``."""
    pos = bisect_right(ranges, (n, _ABOVE_ANY_ID))
    return pos > 0 and n <= ranges[pos - 1][1]


def next_id(ranges: Sequence[Range], n: int) -> int | None:
    """The lowest id of ``ranges`` at or above ``n``, None if there is none."""
    pos = bisect_right(ranges, (n, _ABOVE_ANY_ID))
    if pos > 0 and n <= ranges[pos - 1][1]:
        return n
    return ranges[pos][0] if pos < len(ranges) else None


def encode(ranges: Iterable[Range], runs: bool = True) -> str:
    """RFC 22 text: ``lo-hi`` for each run of two or more ids (``runs``), else each id."""
    if runs:
        return ",".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in ranges)
    return ",".join(str(i) for lo, hi in ranges for i in range(lo, hi + 1))
