"""A job shell's records until job-exec acknowledges them: in memory, or in its spool.

A shell keeps every record it made until job-exec says (ACK) that the KVS
holds it, and sends the next from here in datagrams (``chunk``). While no
job-exec is there, what is unacknowledged, and all that follows, goes to the
spool file ``exec/spool/<shell key>``: its first ``SPOOL_HEADER`` bytes give the
offset of its first record, then the records. A job-exec that takes the job
over says from which offset to send again (RESUME, ``rewind``). A guest's
shell has no spool (no path): it keeps its records in memory until it ends, job-exec
there or not (``WINDOW`` unacknowledged at most). The reasons are in
``docs/architecture.md``, "The job shell".
"""

from __future__ import annotations

import os

from pflux.protocol import shellwire as wire

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (mypy knows it)
if TYPE_CHECKING:  # the launcher imports this before it forks: keep typing out of it
    from typing import Final

__all__ = ["DATAGRAM", "SPOOL_HEADER", "AckLog", "write_all"]

DATAGRAM: Final = 65536  # records are sent in datagrams of about this size at most
SPOOL_HEADER: Final = 8  # the spool's first bytes: the offset of its first record


class AckLog:
    """Every record the shell has made and job-exec has not acknowledged, from ``acked`` on.

    Offsets count record bytes from the job's first record. Records live in
    memory (``mem``, from ``mem_base``) or, once job-exec has gone away, in
    the spool file (from ``spool_base`` to ``spool_end``), which then comes
    first: what the shell makes while a spool exists goes to its end, so the
    records stay in order however often job-exec comes and goes.
    """

    __slots__ = (
        "acked",
        "cursor",
        "end",
        "mem",
        "mem_base",
        "path",
        "sent",
        "spool",
        "spool_base",
        "spool_end",
    )

    def __init__(self, path: str) -> None:
        self.path = path
        self.mem: list[bytes] = []
        self.mem_base = 0
        self.cursor = 0  # the first record of ``mem`` not sent (when sending from memory)
        self.end = 0  # the offset after the last record made
        self.sent = 0  # the offset after the last record sent
        self.acked = 0
        self.spool = -1
        self.spool_base = 0
        self.spool_end = 0

    def add(self, data: bytes, *, spooling: bool) -> None:
        if (spooling or self.spool >= 0) and self.path:
            self._spool(data)
        else:
            self.mem.append(data)
        self.end += len(data)

    def _spool(self, data: bytes) -> None:
        if self.spool < 0:
            flags = os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_CLOEXEC
            self.spool = os.open(self.path, flags, 0o600)
            self.spool_base = self.spool_end = self.mem_base
            write_all(self.spool, self.spool_base.to_bytes(SPOOL_HEADER, "big"))
        if self.mem:  # what memory held comes first
            held, self.mem, self.cursor = b"".join(self.mem), [], 0
            write_all(self.spool, held)
            self.spool_end += len(held)
        write_all(self.spool, data)
        self.spool_end += len(data)
        self.mem_base = self.spool_end

    def spool_all(self) -> None:
        """Move what memory holds to the spool (job-exec is gone), if there is one."""
        if self.mem and self.path:
            self._spool(b"")

    def ack(self, offset: int) -> None:
        """Records up to ``offset`` are in the KVS: forget them."""
        if offset <= self.acked:
            return
        self.acked = min(offset, self.end)
        self.sent = max(self.sent, self.acked)
        mem = self.mem
        drop = 0
        base = self.mem_base
        while drop < len(mem) and base + len(mem[drop]) <= self.acked:
            base += len(mem[drop])
            drop += 1
        if drop:
            del mem[:drop]
            self.mem_base = base
            self.cursor = max(0, self.cursor - drop)
        if self.spool >= 0 and self.acked >= self.spool_end:
            self.drop_spool()

    def rewind(self, offset: int) -> None:
        """Send again from ``offset`` (a new job-exec lacks what follows it)."""
        self.ack(offset)
        self.sent = self.acked
        self.cursor = 0  # memory now begins at what was acknowledged, or is empty

    def drop_spool(self) -> None:
        if self.spool >= 0:
            os.close(self.spool)
            self.spool = -1
            _unlink(self.path)

    def chunk(self) -> tuple[bytes, int]:
        """(the next whole records to send, about a datagram's worth, from ``sent``;
        how many of them are memory's, for ``advance``)."""
        start = self.sent
        if self.spool >= 0 and start < self.spool_end:
            position = start - self.spool_base + SPOOL_HEADER
            data = os.pread(self.spool, min(DATAGRAM, self.spool_end - start), position)
            _, used = wire.split(data)
            if not used:  # one record larger than a datagram
                _, _, length = wire.HEADER.unpack_from(data)
                data = os.pread(self.spool, wire.HEADER.size + length, position)
                used = len(data)
            return data[:used], 0
        mem = self.mem
        index = stop = self.cursor
        size = 0
        while stop < len(mem) and (stop == index or size + len(mem[stop]) <= DATAGRAM):
            size += len(mem[stop])
            stop += 1
        return (mem[index] if stop == index + 1 else b"".join(mem[index:stop])), stop - index

    def advance(self, data: bytes, records: int) -> None:
        """``data``, of which ``records`` of memory's, is sent."""
        self.sent += len(data)
        self.cursor += records


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
