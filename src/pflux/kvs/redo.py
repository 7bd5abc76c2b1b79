"""The KVS's redo log, ``<db>-redo``: each turn's writes, appended before they are answered.

A durable store keeps one SQLite transaction open across turns and commits it
every ``HOLD_SECONDS``, so that a page many turns write goes to the WAL once
(``Database.hold``). What a turn wrote is meanwhile only in that transaction, so
the turn is first appended here, in one ``write`` (and an ``fdatasync`` under
``sync=full``): a ``kill -9`` loses no answered write, since the kernel has it.
Opening the store applies the records past the one its last commit covers, in
order; each commit cuts the log back to nothing.

A record is a header of three big-endian 32-bit words, the body's length, the
CRC-32 of that length's four bytes and the body's CRC-32, then the body: the
JSON array ``[lsn, entries]``, ``lsn`` the record's number (one more than the
record before, across cuts) and ``entries`` the store's calls, in order
(``Store._replay`` reads them). A crash mid-write leaves a torn last record,
which was never answered and is dropped: a sound header whose body runs past the
end, a header cut short, or a last body that fails its check. Anything else that
fails is damage, and the store refuses to open.
"""

from __future__ import annotations

import errno
import os
import struct
import zlib
from pathlib import Path
from typing import Any

from pflux.spec import jsontext

HEADER = struct.Struct(">III")
LENGTH = struct.Struct(">I")


class RedoError(Exception):
    """The log is damaged: a record other than the last fails its check."""


def encode(lsn: int, entries: list[Any]) -> tuple[bytes, bytes]:
    """One record: its header, and its body ``[lsn, entries]`` as JSON (apart, so that a
    large body is not copied to join them)."""
    body = jsontext.dumps([lsn, entries])
    size = len(body)
    return HEADER.pack(size, zlib.crc32(LENGTH.pack(size)), zlib.crc32(body)), body


def entries_of(body: bytes) -> list[Any]:
    """The entries of a record's body that ``encode`` made."""
    entries: list[Any] = jsontext.loads(body)[1]
    return entries


def decode(data: bytes) -> tuple[list[tuple[int, list[Any]]], int]:
    """The whole records of ``data`` and the length they take; RedoError if a record
    fails its check with more after it (a torn last record ends the list)."""
    records: list[tuple[int, list[Any]]] = []
    offset, end = 0, len(data)
    while offset < end:
        if end - offset < HEADER.size:
            break  # a torn header
        size, size_crc, crc = HEADER.unpack_from(data, offset)
        start = offset + HEADER.size
        if zlib.crc32(LENGTH.pack(size)) != size_crc:
            raise RedoError(f"byte {offset}: a record's header fails its checksum")
        if start + size > end:
            break  # a torn body
        body = data[start : start + size]
        if zlib.crc32(body) != crc:
            if start + size == end:
                break  # the last record, torn within its pages
            raise RedoError(f"byte {offset}: a record fails its checksum")
        try:
            lsn, entries = jsontext.loads(body)
        except (jsontext.DecodeError, TypeError):
            raise RedoError(f"byte {offset}: a record is not [lsn, entries]") from None
        if type(lsn) is not int or type(entries) is not list:
            raise RedoError(f"byte {offset}: a record is not [lsn, entries]")
        records.append((lsn, entries))
        offset = start + size
    return records, offset


class RedoLog:
    """The log, open for appending (made mode 0600 if missing)."""

    def __init__(self, path: Path, *, sync: bool) -> None:
        self.path = path
        self._sync = sync
        flags = os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW
        self._fd = os.open(path, flags, 0o600)
        self._size = os.fstat(self._fd).st_size
        self._broken = False  # a failed write could not be taken back
        if sync:  # the file's name, durable before any record in it is relied on
            parent = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                os.fsync(parent)
            finally:
                os.close(parent)

    def read(self) -> tuple[list[tuple[int, list[Any]]], int]:
        """Its records (``decode``), and the bytes they leave unread (a torn tail)."""
        data = os.pread(self._fd, self._size, 0)
        records, used = decode(data)
        return records, len(data) - used

    def append(self, header: bytes, body: bytes) -> None:
        """Write a record whole, or raise OSError and leave the log as it was (EIO for
        good once a failed write could not be taken back)."""
        if self._broken:
            raise OSError(errno.EIO, f"{self.path}: a failed write could not be taken back")
        size = len(header) + len(body)
        try:
            done = os.writev(self._fd, (header, body))
            if done < size:  # rare (a signal, a nearly full disk): the rest, joined
                rest = (header + body)[done:]
                while rest:
                    written = os.write(self._fd, rest)
                    if written == 0:
                        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                    rest = rest[written:]
            if self._sync:
                os.fdatasync(self._fd)
        except OSError:
            try:  # a record partly written would read as damage once another follows
                os.ftruncate(self._fd, self._size)
            except OSError:
                self._broken = True
            raise
        self._size += size

    def cut(self) -> None:
        """Empty the log: what it held is committed."""
        if self._size:
            os.ftruncate(self._fd, 0)
            self._size = 0

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
