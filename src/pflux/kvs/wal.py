"""Damage in a SQLite WAL file, found before SQLite reads it.

SQLite reads a WAL up to the first frame that fails its checksum (or belongs to
an earlier generation, by its salts) and ignores the rest: the right thing
after a torn last write, but after a garbled or zeroed file it silently
drops transactions that were acknowledged. Frames of one generation are
written one after another from the start of the file, so a frame of the
current generation after that point, or a header that is not a WAL header,
is damage, not a torn write. (A file cut short cannot be told from one
whose last transactions were never written: that is not detected.)

The format is SQLite's (https://www.sqlite.org/fileformat2.html#walformat): a
32-byte header, then frames of a 24-byte header and a page, each checksummed
cumulatively from the header's checksum.
"""

from __future__ import annotations

import struct
from typing import BinaryIO

MAGIC = (0x377F0682, 0x377F0683)  # the low bit: checksums of big-endian words
HEADER = 32
FRAME_HEADER = 24
_MASK = 0xFFFFFFFF


def _checksum(data: bytes, order: str, s1: int, s2: int) -> tuple[int, int]:
    """SQLite's WAL checksum of ``data`` (a multiple of 8 bytes), continued from (s1, s2)."""
    words = iter(struct.unpack(f"{order}{len(data) // 4}I", data))
    for x0, x1 in zip(words, words, strict=True):
        s1 = (s1 + x0 + s2) & _MASK
        s2 = (s2 + x1 + s1) & _MASK
    return s1, s2


def damage(path: str) -> str | None:
    """Why the WAL at ``path`` is damaged, or None (missing or empty files included)."""
    try:
        with open(path, "rb") as f:
            return _damage(f)
    except FileNotFoundError:
        return None


def _damage(f: BinaryIO) -> str | None:
    header = f.read(HEADER)
    if not header:
        return None
    if len(header) < HEADER:
        return "shorter than a WAL header"
    magic, _, page_size, _, salt1, salt2, c1, c2 = struct.unpack(">8I", header)
    if magic not in MAGIC or not 512 <= page_size <= 65536:
        return "its header is not a WAL header"
    order = ">" if magic & 1 else "<"
    if _checksum(header[:24], order, 0, 0) != (c1, c2):
        return "its header fails its checksum"
    return _frames(f, order, FRAME_HEADER + page_size, (salt1, salt2), (c1, c2))


def _frames(
    f: BinaryIO, order: str, size: int, salts: tuple[int, int], sums: tuple[int, int]
) -> str | None:
    """Damage in the frames (``size`` bytes each): one of this generation after the
    first that ends it."""
    end = 0  # the frame that ended the generation's valid frames, counted from 1
    n = 0
    while len(data := f.read(size)) == size:
        n += 1
        _, _, salt1, salt2, f1, f2 = struct.unpack(">6I", data[:FRAME_HEADER])
        current = (salt1, salt2) == salts
        if end:
            if current:
                return f"frame {n} follows frame {end}, which fails its checksum or salts"
            continue
        if current:
            sums = _checksum(data[:8] + data[FRAME_HEADER:], order, *sums)
            if sums == (f1, f2):
                continue
        end = n
    return None
