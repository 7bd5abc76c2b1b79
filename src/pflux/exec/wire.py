"""The records job-exec, the shell launcher and the job shells exchange.

One layout serves every hop: a kind byte, the job id (8 bytes) and the
payload's length (4 bytes), big-endian, then the payload. A shell sends whole
records in datagrams, straight to job-exec on a socket every shell shares.

job-exec to the launcher:

- ``p`` SPAWN: give the job to a shell; the payload is the shell's
  description (``pflux.shell.plan``), which the launcher passes on as it is;
- ``k`` KILL: signal every task of the job (payload: the signal number in
  decimal); the launcher passes it on to the shell;
- ``t`` TERMINATE: signal the shell's whole session (job-exec's last resort).

A shell to job-exec:

- ``s`` STARTED: the tasks are running since the time in the payload
  (seconds since the epoch), or their launch failed, which an EXCEPTION
  record follows;
- ``x`` EXCEPTION: a fatal ``exec`` exception; the payload is its note;
- ``o`` OUTPUT: what a task wrote: the stream (``o`` stdout, ``e`` stderr),
  the task rank (4 bytes), then the bytes as read;
- ``f`` EOF: a task's stream is closed (stream and rank, as for OUTPUT);
- ``w`` EXITED: the job's wait status in decimal, always its last record.

The launcher to job-exec: ``w`` EXITED when a shell could not send it (it
died, or never ran: then ``-1`` and a reason).
"""

from __future__ import annotations

import _struct

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (mypy knows it)
if TYPE_CHECKING:  # the launcher and the shells import this: keep typing out of them
    from typing import Final

__all__ = [
    "EOF",
    "EXCEPTION",
    "EXITED",
    "HEADER",
    "KILL",
    "OUTPUT",
    "SPAWN",
    "STARTED",
    "STDERR",
    "STDOUT",
    "TERMINATE",
    "Record",
    "record",
    "split",
]

HEADER: Final = _struct.Struct("!cQI")

SPAWN: Final = b"p"
KILL: Final = b"k"
TERMINATE: Final = b"t"
OUTPUT: Final = b"o"
EOF: Final = b"f"
STARTED: Final = b"s"
EXCEPTION: Final = b"x"
EXITED: Final = b"w"
STDOUT: Final = b"o"  # the stream bytes of OUTPUT and EOF
STDERR: Final = b"e"

Record = tuple[bytes, int, bytes]  # (kind, job id, payload)

_pack = HEADER.pack
_unpack = HEADER.unpack_from
_SIZE: Final = HEADER.size


def record(kind: bytes, jobid: int, payload: bytes = b"") -> bytes:
    """One record, ready to send."""
    return _pack(kind, jobid, len(payload)) + payload


def split(data: bytes | bytearray | memoryview, start: int = 0) -> tuple[list[Record], int]:
    """The whole records in ``data`` from ``start``, and the offset where the rest begins."""
    found: list[Record] = []
    end = len(data)
    with memoryview(data) as view:  # released before the caller resizes a bytearray
        while end - start >= _SIZE:
            kind, jobid, length = _unpack(view, start)
            stop = start + _SIZE + length
            if stop > end:
                break
            found.append((kind, jobid, view[start + _SIZE : stop].tobytes()))
            start = stop
    return found, start
