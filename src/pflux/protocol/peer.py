"""Who is at the other end of a Unix socket, as the kernel says (``SO_PEERCRED``),
never as the peer says: the broker's clients, the privileged helper's askers, a
guest's shell and the job-exec it meets. ``_socket`` and ``_struct`` only, as the
shell launcher keeps its imports few."""

from __future__ import annotations

import _socket
import _struct

__all__ = ["peer_credentials"]

_UCRED = _struct.Struct("3i")  # struct ucred: pid, uid, gid


def peer_credentials(sock: _socket.socket) -> tuple[int, int, int]:
    """The (pid, uid, gid) of a Unix socket's peer."""
    raw = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, _UCRED.size)
    pid, uid, gid = _UCRED.unpack(raw)
    return pid, uid, gid
