"""job-exec's writes to its jobs' guest keys: one turn's, in as few commits as they allow.

Everything one loop turn appends to any job's guest keys goes in one
``kvs.commit`` (a ``TurnBatch``, ``pflux.broker.turn``), after the turn's
namespace creations and before its removals; a batch that fails whole is
retried job by job. A job whose namespace is removed this turn (its end) has
its writes in a commit of its own, after the others, so that no other job's
failed batch holds back its last events; its ``finish`` answer goes after them
(``after_flush``: a job's end is one transaction, as ``pflux.broker.turn``
says).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Hashable, Iterable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from pflux.broker.turn import TurnBatch
from pflux.protocol.kvs import CommitRequest, NamespaceCreateRequest, NamespaceRemoveRequest

if TYPE_CHECKING:
    from pflux.broker.router import Broker
    from pflux.protocol.message import Message

__all__ = ["GuestWrites", "split_commits"]

log = logging.getLogger("pflux.job-exec")

Run = TypeVar("Run", bound=Hashable)  # a ShellRun; anything hashable in tests


class _Owned(Protocol):
    @property
    def userid(self) -> int: ...


class WritingRun(Hashable, Protocol):
    """What the batching uses of a job's run (``ShellRun``)."""

    namespace: str  # the job's guest namespace
    key: str  # its keys' prefix, as primary keys (ending in a dot)
    state_key: str  # where its resume state goes
    retries: int  # commits of its keys being retried on their own

    @property
    def job(self) -> _Owned: ...

    def state(self) -> str | None: ...

    def on_created(self, msg: Message) -> None: ...

    def on_committed(self) -> None: ...

    def on_retried(self, msg: Message) -> None: ...

    def on_removed(self, msg: Message) -> None: ...


R = TypeVar("R", bound=WritingRun)


class _Turn(Generic[R]):
    """One turn's writes."""

    __slots__ = ("after", "appends", "applied", "creates", "new", "removes")

    def __init__(self) -> None:
        self.creates: list[R] = []
        self.new: dict[str, tuple[R, list[str]]] = {}  # primary key -> texts
        self.appends: dict[str, tuple[R, list[str]]] = {}
        self.removes: list[R] = []
        self.applied: set[R] = set()  # runs that applied shell records this turn
        self.after: list[Callable[[], None]] = []  # to call once this turn's writes are in


class GuestWrites(Generic[R]):
    """The guest-key writes of this turn, sent at its end (see the module docstring)."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self._turn: TurnBatch[_Turn[R]] = TurnBatch(broker, _Turn, self._flush)

    def create_namespace(self, run: R) -> None:
        self._turn.get().creates.append(run)

    def append(self, run: R, name: str, text: str, *, new: bool = False) -> None:
        """Append ``text`` to the guest key ``name`` of ``run``'s job, with this turn's batch.

        ``new``: the key does not exist yet. New keys are made with ``put`` in a
        commit of their own, before the turn's other appends, which then all grow
        existing values: the KVS applies those in one statement, and makes a new
        key with fewer than it needs to find that an append's key is missing.
        """
        key = run.key + name
        turn = self._turn.get()
        batch = turn.new if new else turn.appends
        pending = batch.get(key)
        if pending is None:
            batch[key] = (run, [text])
        else:
            pending[1].append(text)

    def remove_namespace(self, run: R) -> None:
        """Remove ``run``'s namespace after this turn's writes, which are the job's last."""
        self._turn.get().removes.append(run)

    def applied(self, run: R) -> None:
        """``run`` applied records of its shell this turn: put its resume state with them,
        and acknowledge them once committed."""
        self._turn.get().applied.add(run)

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once this turn's writes are committed."""
        self._turn.get().after.append(callback)

    def after_flush(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` at this turn's end once its writes, which there must be, are sent."""
        self._turn.after_flush(fn)

    def committed(self) -> asyncio.Future[None]:
        """Resolved once this turn's writes are committed."""
        future: asyncio.Future[None] = self.broker.loop.create_future()

        def resolve() -> None:
            if not future.done():
                future.set_result(None)

        self.after_commit(resolve)
        return future

    def flush(self) -> None:
        """Send this turn's writes now (job-exec stops)."""
        self._turn.flush()

    def _flush(self, turn: _Turn[R]) -> None:
        """Send this turn's creations, its commits, then its removals, in that order.

        The put of each running job's resume state goes with the new keys; the KVS
        applies the turn's commits in one transaction, so it is durable exactly when
        the output it describes is.
        """
        applied = turn.applied
        new = turn.new
        for run in applied:
            state = run.state()
            if state is not None:
                new[run.state_key] = (run, [state])
        send = self.broker.send
        for run in turn.creates:
            namespace = NamespaceCreateRequest(run.namespace, run.job.userid, run.key[:-1])
            send("kvs.namespace-create", namespace, run.on_created)
        commits = split_commits(new, turn.appends, turn.removes)
        for i, (ops, runs) in enumerate(commits):
            done = partial(self._done, applied, turn.after) if i == len(commits) - 1 else None
            send("kvs.commit", CommitRequest(ops), partial(self._committed, ops, runs, done))
        if not commits:
            self._done(applied, turn.after)
        for run in turn.removes:
            send("kvs.namespace-remove", NamespaceRemoveRequest(run.namespace), run.on_removed)

    @staticmethod
    def _done(applied: set[R], after: list[Callable[[], None]]) -> None:
        """The turn's writes are in: acknowledge the shells, then whoever waited."""
        for run in applied:
            if not run.retries:
                run.on_committed()
        for callback in after:
            callback()

    def _committed(
        self,
        ops: list[list[str]],
        runs: list[R],
        done: Callable[[], None] | None,
        msg: Message,
    ) -> None:
        """A turn's commit is answered; if it failed, commit each job's part on its own.

        The retries reach the KVS with what the job-manager commits on hearing of any
        job finalized the turn after the batch was sent, so they are applied no later.
        """
        if not msg.errnum:
            if done is not None:
                done()
            return
        log.warning("job-exec: a batched commit failed (%s); retrying job by job", msg.errstr)
        by_run: dict[R, list[list[str]]] = {}
        for op, run in zip(ops, runs, strict=True):
            by_run.setdefault(run, []).append(op)
        for run, own in by_run.items():
            run.retries += 1
            self.broker.send("kvs.commit", CommitRequest(own), run.on_retried)
        if done is not None:
            done()


def split_commits(
    new: Mapping[str, tuple[Run, list[str]]],
    appends: Mapping[str, tuple[Run, list[str]]],
    finals: Iterable[Run],
) -> list[tuple[list[list[str]], list[Run]]]:
    """A turn's commits, each as (ops, the job of each op): the new keys' puts, then
    the appends, then one commit for each job of ``finals``, holding all of its ops,
    its puts first."""
    own: dict[Run, list[list[str]]] = {run: [] for run in finals}
    commits: list[tuple[list[list[str]], list[Run]]] = []
    for op, batch in (("put", new), ("append", appends)):
        ops: list[list[str]] = []
        runs: list[Run] = []
        for key, (run, texts) in batch.items():
            entry = [op, key, "".join(texts)]
            last = own.get(run)
            if last is None:
                ops.append(entry)
                runs.append(run)
            else:
                last.append(entry)
        if ops:
            commits.append((ops, runs))
    commits += [(ops, [run] * len(ops)) for run, ops in own.items() if ops]
    return commits
