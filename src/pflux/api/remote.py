"""A command run on ranks of the instance outside any job (``rexec``), followed on one
connection: ``Client.rexec`` gives a ``Remote``, which ``pflux exec`` reads in its own
select loop (``fileno``, ``poll``) while it feeds the processes their input. What
each rank's stream gives is ``pflux.api.streams.Execs``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pflux.api.driven import Driven
from pflux.api.streams import ExecItem, Execs

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from pflux.client.handle import Handle

#: what iterating gives: (rank, an entry of rexec.exec's stream, the error that ended
#: it, or None once it ended normally)
Item = ExecItem


def exec_payload(
    command: Sequence[str], env: Mapping[str, str], cwd: str | None, stdin: bool
) -> dict[str, Any]:
    """``rexec.exec``'s request."""
    return {"cmd": list(command), "env": dict(env), "cwd": cwd, "stdin": stdin}


class Remote(Driven[ExecItem]):
    """``command`` on each of ``ranks``; the requests are sent when it is made."""

    def __init__(self, handle: Handle, ranks: Sequence[int], payload: dict[str, Any]) -> None:
        self._execs = Execs(ranks, payload)
        super().__init__(handle, self._execs)
        self.flush()

    @property
    def pids(self) -> dict[int, int]:
        """rank -> pid, once started."""
        return self._execs.pids

    @property
    def running(self) -> set[int]:
        """The ranks whose stream has not ended."""
        return self._execs.running

    def write(self, data: bytes, *, eof: bool = False) -> None:
        """``data`` to every started process's input; ``eof`` closes it. Sent with the
        next ``poll``."""
        self.send(self._execs.writes(data, eof))

    def kill(self, signum: int) -> None:
        """Send ``signum`` to every started process. Sent with the next ``poll``."""
        self.send(self._execs.kills(signum))
