"""Sizes in bytes, read as flux-core's ``parse_size`` reads them (libutil/parse_size.c).

A size is a non-negative integer, or a string: decimal digits, an optional
fraction (``.5``), and an optional suffix, ``k`` or ``K`` (1024), ``M``, ``G``,
``T``, ``P`` or ``E`` (each 1024 times the one before). A fraction is rounded
down to whole bytes (``1.5K`` is 1536). The suffixes are flux-core's, case and
all: ``m`` or ``g`` are refused, as ``KB`` or ``MiB`` are. flux-core also takes
what C's ``strtoull`` and ``strtold`` take (hex, octal with a leading 0,
exponents, leading spaces); those are refused here rather than read otherwise
than a user would guess (``010`` is ten). A size past 2**64 - 1 is refused.
"""

from __future__ import annotations

import re

from pflux.errors import SizeError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Final

__all__ = ["SIZE_RULE", "parse_size"]

_SIZE: Final = re.compile(r"([0-9]+)(?:\.([0-9]*))?([kKMGTPE]?)")
_SCALE: Final = {"": 0, "k": 10, "K": 10, "M": 20, "G": 30, "T": 40, "P": 50, "E": 60}
_MAX: Final = (1 << 64) - 1
SIZE_RULE: Final = "a size such as 1048576, 512K or 8M (k or K, M, G, T, P, E: powers of 1024)"


def parse_size(value: object) -> int:
    """Bytes in ``value`` (see the module docstring); SizeError naming the rule."""
    if type(value) is int:
        size = value
    else:
        match = _SIZE.fullmatch(value) if isinstance(value, str) else None
        if match is None:
            raise SizeError(f"must be {SIZE_RULE}, not {value!r}")
        whole, fraction, suffix = match.groups()
        shift = _SCALE[suffix]
        size = int(whole) << shift
        if fraction:  # exact: the fraction's digits over their power of ten
            size += (int(fraction) << shift) // 10 ** len(fraction)
    if size < 0:
        raise SizeError(f"must be {SIZE_RULE}, not {value!r}")
    if size > _MAX:
        raise SizeError(f"must be at most {_MAX} bytes (16E), not {value!r}")
    return size
