"""Several logs followed at once on one connection: what ``Client.follow_logs`` returns
(``pflux submit --wait``, ``run`` and ``job attach`` use it).

Iterating waits for ``(index in logs, item)``: an ``Event``, ``None`` once that log
has ended, or an ``RPCError`` that ends it (``pflux.api.streams.Logs``). A caller
with a select loop of its own (``job attach`` reads stdin and signals too) selects
on ``fileno()`` and takes what has arrived with ``poll()``, which never waits
(``pflux.api.driven``).
"""

from __future__ import annotations

from pflux.api.driven import Driven
from pflux.api.streams import LogItem, Logs

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Sequence

    from pflux.client.handle import Handle

#: what one followed log gives: an event, its end (None), or the error that ends it
Item = LogItem


class LogFollow(Driven[LogItem]):
    """Logs of a blocking Client, each ``(jobid, path)``; the requests are sent when it
    is made."""

    def __init__(self, handle: Handle, logs: Sequence[tuple[int, str]]) -> None:
        super().__init__(handle, Logs(logs))
        self.flush()

    @property
    def following(self) -> int:
        """How many logs have not ended yet."""
        return self.stream.live
