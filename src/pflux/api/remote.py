"""A command run on ranks of the instance outside any job (``rexec``), followed on one
connection: ``Client.rexec`` gives a ``Remote``, which ``pflux exec`` reads in its own
select loop (``fileno``, ``poll``) while it feeds the processes their input."""

from __future__ import annotations

import errno
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from pflux.errors import RPCError

if TYPE_CHECKING:
    from pflux.client.handle import Handle
    from pflux.protocol.message import Message

#: what iterating gives: (rank, an entry of rexec.exec's stream, the error that ended
#: it, or None once it ended normally)
Item = tuple[int, dict[str, Any] | RPCError | None]


def exec_payload(
    command: Sequence[str], env: Mapping[str, str], cwd: str | None, stdin: bool
) -> dict[str, Any]:
    """``rexec.exec``'s request."""
    return {"cmd": list(command), "env": dict(env), "cwd": cwd, "stdin": stdin}


class Remote:
    """``command`` on each of ``ranks``; the requests are sent when it is made."""

    def __init__(self, handle: Handle, ranks: Sequence[int], payload: dict[str, Any]) -> None:
        self._handle = handle
        self._arrived: deque[tuple[int, Message]] = deque()
        self.pids: dict[int, int] = {}  # rank -> pid, once started
        self.running = set(ranks)  # ranks whose stream has not ended
        for rank in ranks:
            rpc = handle.rpc("rexec.exec", payload, streaming=True, wait=True, nodeid=rank)
            rpc.then(partial(_arrive, self._arrived, rank))
        handle.flush()

    def __iter__(self) -> Iterator[Item]:
        """Every rank's items as they come, until every stream has ended."""
        while self.running or self._arrived:
            if not self._arrived:
                self._handle.process(None)
                continue
            yield self._parsed(*self._arrived.popleft())

    def fileno(self) -> int:
        """The connection: readable when ``poll`` has something to take."""
        return self._handle.fileno()

    def poll(self) -> list[Item]:
        """The items that have arrived, without waiting (what was written is sent)."""
        if self.running:
            self._handle.process(0.0)
        items = []
        while self._arrived:
            items.append(self._parsed(*self._arrived.popleft()))
        return items

    def _parsed(self, rank: int, msg: Message) -> Item:
        if msg.errnum:
            self.running.discard(rank)
            self.pids.pop(rank, None)
            return rank, None if msg.errnum == errno.ENODATA else RPCError(msg.errnum, msg.errstr)
        entry: dict[str, Any] = msg.payload
        if entry.get("type") == "started":
            self.pids[rank] = entry["pid"]
        return rank, entry

    def write(self, data: bytes, *, eof: bool = False) -> None:
        """``data`` to every started process's input; ``eof`` closes it. Sent with the
        next ``poll``."""
        payload: dict[str, Any] = {"eof": eof}
        try:
            payload["data"] = data.decode()
        except UnicodeDecodeError:
            import base64

            payload.update(data=base64.b64encode(data).decode(), encoding="base64")
        for rank, pid in self.pids.items():
            self._handle.rpc("rexec.write", {**payload, "pid": pid}, nodeid=rank).then(_ignore)

    def kill(self, signum: int) -> None:
        """Send ``signum`` to every started process. Sent with the next ``poll``."""
        for rank, pid in self.pids.items():
            payload = {"pid": pid, "signum": signum}
            self._handle.rpc("rexec.kill", payload, nodeid=rank).then(_ignore)


def _arrive(arrived: deque[tuple[int, Message]], rank: int, msg: Message) -> None:
    arrived.append((rank, msg))


def _ignore(msg: Message) -> None:
    """A process that ended meanwhile answers ESRCH: nothing to do."""
