"""A client's reads from its socket into one buffer it keeps.

``sock.recv(1 << 20)`` makes a megabyte for every read (an ``mmap``, the page
faults of what the read fills, an ``mremap`` to its size, a ``munmap``): a
client reading a message a job pays that much a job. Both faces' connections
read here instead.
"""

from __future__ import annotations

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing (several ms)
if TYPE_CHECKING:
    import _socket

ROOM = 1 << 16  # bytes one read takes in at first
ROOM_MAX = 1 << 20  # the most the buffer grows to while reads fill it


class ReadBuffer:
    """One read's room, grown while reads fill it."""

    __slots__ = ("_room",)

    def __init__(self) -> None:
        self._room = memoryview(bytearray(ROOM))

    def recv(self, sock: _socket.socket) -> memoryview:
        """What one read gets (empty at the stream's end), valid until the next read:
        the caller copies it out. OSError as ``recv_into`` raises it."""
        room = self._room
        got = sock.recv_into(room)
        if got == len(room) and got < ROOM_MAX:  # more came than it holds: hold more
            self._room = memoryview(bytearray(2 * got))
        return room[:got]
