"""``job-manager.quiescent``: answered once the job manager has nothing in flight.

A simulation (``pflux.sim``) moves time on only when the instance is quiet,
as flux's simulator did by asking the job manager the same question: the
scheduler has said it is ready (so every job waiting has its alloc sent),
every event posted is committed and acted on (so every ``sched.free`` due
is sent), and every start request has had its ``start`` response (or
ended).  The
scheduler's part, the pass it owes, is asked of it directly with
``sched.sim-time``; whatever the job manager sent it before answering here
reaches it first, because the broker delivers requests in order.

The answer is computed on a later loop turn than whatever asked for a look,
so it never sees a job half-way through being acted on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pflux.broker.router import Request

if TYPE_CHECKING:
    from pflux.manager.hosts import QuiescenceHost


class Quiescence:
    """Holds ``quiescent`` requests until the job manager is quiet."""

    def __init__(self, manager: QuiescenceHost) -> None:
        self.manager = manager
        self.waiters: list[Request] = []
        self._due = False

    def request(self, req: Request) -> None:
        self.waiters.append(req)
        self.poke()

    def poke(self) -> None:
        """Something the answer depends on changed: look again on the next turn."""
        if self.waiters and not self._due:
            self._due = True
            self.manager.broker.queue.push(self._look)

    def _look(self) -> None:
        self._due = False
        manager = self.manager
        if manager.events.pending:
            manager.events.after_commit(self.poke)
            return
        if not manager.alloc.ready or manager.exec.unstarted:
            return  # poked again once the scheduler is ready, or as they are answered
        waiters, self.waiters = self.waiters, []
        for req in waiters:
            req.respond({})
