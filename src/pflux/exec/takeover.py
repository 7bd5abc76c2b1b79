"""Taking a job over: what a job-exec starting after a crash does with a run it finds.

Nothing a shell sends is lost if the broker dies. job-exec counts the bytes
of each shell's records it has applied (the shell counts the same), and
with each turn's commit of a running job's output it puts where it stands,
``job.<kvs id>.data.job-exec.resume``: ``{offset, written, kept, eof}``
(records applied: a number for a job of one shell, else one per shell in
rank order, with ``ended``, the ``[rank, status]`` of the shells that
ended; bytes written and kept per stream; the streams whose end is posted).
A job-exec that takes a job over (``resume``) reads that key and the
``exec.eventlog``: a job whose ``done`` is there is over (its status is
``complete``'s); otherwise each shell, if it runs, sends its records again
from its offset (RESUME); if it ended while the instance was down, job-exec
reads them from its spool file; if neither, the job gets a fatal exception
saying what became of it. Either way it posts ``reattach`` to the
``exec.eventlog``, as flux-core does. A shell on another broker is taken
over once its rank says what it runs, and one that ends into its spool (its
launcher died, or job-exec was away) is read from there. A job none of whose
shells began it starts again: those on this broker were given the job and ended
before they recorded themselves, or were never given it, and each rank's
exec-node whose shell job-exec had journalled asking for says it was never asked.

``Takeover`` is this half of a run (``pflux.exec.shellrun.ShellRun`` the
other): the run's state it reads and sets is declared here for the type
checker, the run holds it.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import signal
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import orjson

from pflux.errors import EventlogError, IdsetError, PfluxError, RPCError
from pflux.exec.output import event_line
from pflux.exec.plan import STREAMS
from pflux.protocol import shellwire as wire
from pflux.protocol.kvs import GetRequest, value_of
from pflux.protocol.shellwire import ALL_RECORDS
from pflux.spec.eventlog import parse
from pflux.spec.fluid import JobID
from pflux.spec.idset import IdSet

if TYPE_CHECKING:
    from pflux.exec.host import GuestKeys, RankShells, RunJob, ShellHost
    from pflux.exec.leftovers import Leftover
    from pflux.exec.output import KVSOutput
    from pflux.exec.plan import Plan
    from pflux.exec.shellpart import ShellPart
    from pflux.spec.layout import Layout

__all__ = ["DIED_NOTE", "LOST_NOTE", "RESUME_KEY", "UNSTARTED_NOTE", "Takeover"]

log = logging.getLogger("pflux.job-exec")

RESUME_KEY: Final = "data.job-exec.resume"  # in the job's directory (RFC 16 data.<service>)
REPLAY_CHUNK: Final = 1 << 20  # spool bytes replayed per commit
LOST_NOTE: Final = "job shell and tasks not found when the instance restarted"
DIED_NOTE: Final = "job shell died while the instance was down"
UNSTARTED_NOTE: Final = "job shell never started the job before the instance restarted"
REJOIN_WAIT: Final = 60.0  # seconds a restarted job-exec waits for a rank's shells (quorum's)


class Takeover:
    """A run's takeover of its job from an earlier job-exec, and its shells' spools."""

    # the run's state a takeover sets, as well as the run
    __slots__ = ("concluded", "exited", "input_bytes", "input_started", "rank_waits")

    if TYPE_CHECKING:  # the rest of the run's (``ShellRun``) that a takeover uses
        job: RunJob
        service: ShellHost[Any]
        writes: GuestKeys[Any]
        key: str
        state_key: str
        out: KVSOutput
        eof_pending: set[tuple[str, int]]
        places: Layout | None
        shells: list[ShellPart]
        taken: Mapping[int, Leftover]
        exited: bool
        concluded: bool
        spools: set[str]
        input_kvs: bool
        input_bytes: int
        input_started: bool
        input_open: set[int]
        rank_waits: dict[int, list[asyncio.Future[RankShells]]]  # the ranks' words awaited

        def _plan(self) -> Plan | None: ...

        def _launch(self, planned: Plan) -> None: ...

        def _create(self, planned: Plan) -> None: ...

        def _remote(self, rank: int) -> bool: ...

        def _shell_ended(self, shell: ShellPart, status: int) -> None: ...

    async def resume(self, leftovers: Mapping[int, Leftover]) -> None:
        """Take over a job an earlier job-exec ran (see the module docstring); ``leftovers``
        are what is left of its shells, by rank."""
        job = self.job
        planned = self._plan()
        events: list[Any] | None = None
        if planned is not None:
            for shell in self.shells:
                leftover = leftovers.get(shell.rank)
                if leftover is not None and leftover.spool is not None:
                    shell.spool = leftover.spool
            try:
                events = await self._recover()
            except (PfluxError, RPCError, IdsetError) as exc:
                job.fatal(f"reattach: {exc}")
                planned = None
        if planned is None or job.finalizing:  # it cannot go on, or was ended meanwhile
            self._forget(leftovers, kill=True)
            return
        names = [event.name for event in events or ()]
        if "done" in names:
            self._forget(leftovers)
            self._conclude(events or [])
        elif events is None and not leftovers and not job.reattach:  # it never ran
            self._launch(planned)
        elif await self._never_started(leftovers, names):
            if self.job.finalizing:  # ended while the ranks were asked
                self._forget(leftovers)
                return
            log.info("job %s: its shells never started it: starting it again", JobID(job.id))
            self._launch(planned)
        elif events is None and not leftovers:  # it started, and nothing is left of it
            self.concluded = True
            job.fatal(LOST_NOTE)
        else:
            await self._go_on(leftovers, planned, events is not None, "shell.start" in names)

    async def _never_started(self, leftovers: Mapping[int, Leftover], names: list[str]) -> bool:
        """Whether none of the job's tasks can have run, nor ever will: each of its shells
        was given the job and ended before it recorded itself, or (on another rank) the
        exec-node there was never asked for it, and neither the job manager
        (``reattach``) nor the exec.eventlog has heard of a start."""
        if self.job.reattach or "shell.start" in names:
            return False
        shells = self.shells
        if len(leftovers) != len(shells) or not all(
            (leftover := leftovers.get(shell.rank)) is not None
            and (leftover.unstarted or bool(leftover.asked))
            for shell in shells
        ):
            return False
        for shell in shells:
            leftover = leftovers[shell.rank]
            if not leftover.unstarted:
                said = await self._rank_said(shell.rank)
                if said is None or not _never_asked(said, self.job.id, leftover):
                    return False
        return True

    async def _rank_said(self, rank: int) -> RankShells | None:
        """What rank ``rank``'s exec-node says since it joined, once it has; None if it has
        not within ``REJOIN_WAIT``."""
        said = self.service.remote_shells(rank)
        if said is not None:
            return said
        waiter: asyncio.Future[RankShells] = self.job.loop.create_future()
        self.rank_waits.setdefault(rank, []).append(waiter)
        try:
            return await asyncio.wait_for(waiter, REJOIN_WAIT)
        except TimeoutError:
            return None

    async def _recover(self) -> list[Any] | None:
        """The job's exec.eventlog, having restored where the earlier job-exec stood."""
        events = await self._read_events()
        state = await self._read(self.state_key)
        if state is not None:
            self._restore(state)
        given = await self._read(self.key + "input") if self.input_kvs else None
        if given is not None:
            self._restore_input(given)
        return events

    async def _go_on(
        self, leftovers: Mapping[int, Leftover], planned: Plan, logged: bool, running: bool
    ) -> None:
        """Resume each shell, or replay its spool, or say what became of it."""
        job = self.job
        job.started = True
        if logged:
            self.writes.append(self, "exec.eventlog", event_line("reattach"))
        else:  # its start had not reached the KVS: begin it there now
            self._create(planned)
        if running:
            for shell in self.shells:
                shell.started = True
            job.set_running()
        for shell in self.shells:
            leftover = leftovers.get(shell.rank)
            if shell.exited:  # it ended before: nothing of it is left to take
                if leftover is not None:
                    self._let_go(shell, leftover)
                continue
            if leftover is not None and leftover.late:  # resumed once it rejoins
                shell.live = True
            elif leftover is not None and leftover.running:
                self._reattach(shell)
            elif shell.spool is not None:
                await self._replay(shell)
            elif self._remote(shell.rank) and (leftover is None or leftover.asked is not None):
                self._await_rank(shell)
            if not (shell.exited or shell.live or shell.awaiting or job.finalizing or self.exited):
                died = leftover.died if leftover is not None else None
                self._lost(shell, died, unstarted=leftover is not None and leftover.unstarted)

    def _reattach(self, shell: ShellPart) -> None:
        """The shell runs: it sends its records again from the first not applied."""
        shell.live = True
        log.info("job %s: reattached to its shell on rank %d", JobID(self.job.id), shell.rank)
        data = wire.record(wire.RESUME, shell.key, b"%d" % shell.applied)
        self.service.send_launcher(shell.rank, data)

    def _await_rank(self, shell: ShellPart) -> None:
        """A shell on another broker: take it over once its rank says what it runs (now,
        if it has), or lose it if the rank does not come back in time."""
        shell.awaiting = True
        answered = self.service.remote_shells(shell.rank)
        if answered is not None:
            self.rank_answered(shell.rank, answered)
        else:
            self.job.loop.call_later(REJOIN_WAIT, self._rank_too_late, shell)

    def rank_answered(self, rank: int, said: RankShells) -> None:
        """Rank ``rank``'s exec-node said which jobs' shells it runs: take this job's over."""
        for waiter in self.rank_waits.pop(rank, []):
            if not waiter.done():
                waiter.set_result(said)
        for shell in self.shells:
            if shell.rank != rank or not shell.awaiting:
                continue
            shell.awaiting = False
            if self.job.id in said.running:
                self._reattach(shell)
            elif not (self.job.finalizing or self.exited):
                leftover = self.taken.get(rank)
                unstarted = leftover is not None and _never_asked(said, self.job.id, leftover)
                self._lost(shell, said.died.get(self.job.id), unstarted=unstarted)

    def _rank_too_late(self, shell: ShellPart) -> None:
        if shell.awaiting and not shell.exited:
            shell.awaiting = False
            self._lost(shell, None)

    async def _read(self, key: str) -> str | None:
        try:
            return value_of(await self.service.broker.call("kvs.get", GetRequest(key)))
        except RPCError as exc:
            if exc.errnum == errno.ENOENT:
                return None
            raise

    async def _read_events(self) -> list[Any] | None:
        text = await self._read(self.key + "exec.eventlog")
        if text is None:
            return None
        try:
            return parse(text)
        except EventlogError as exc:
            raise PfluxError(f"exec.eventlog: {exc}") from None

    def _restore(self, text: str) -> None:
        """Where the earlier job-exec stood (``RESUME_KEY``)."""
        try:
            state = orjson.loads(text)
            offsets = state["offset"]
            offsets = [int(offsets)] if isinstance(offsets, int) else list(map(int, offsets))
            if len(offsets) != len(self.shells):
                raise ValueError(f"{len(offsets)} offsets for {len(self.shells)} shells")
            self.out.restore(list(map(int, state["written"])), list(map(int, state["kept"])))
            for stream, rank in state["eof"]:
                self.eof_pending.discard((stream, rank))
            ended = {int(rank): int(status) for rank, status in state.get("ended", ())}
            where = [str(w).encode() for w in state.get("where", [""] * len(offsets))]
            if len(where) != len(offsets):
                raise ValueError(f"{len(where)} task lists for {len(offsets)} shells")
        except (orjson.JSONDecodeError, LookupError, TypeError, ValueError) as exc:
            raise PfluxError(f"reattach: {self.state_key}: {exc!r}") from None
        for shell, offset, tasks in zip(self.shells, offsets, where, strict=True):
            shell.applied = shell.acked = offset
            shell.where = shell.where or tasks  # STARTED's, which the offset may have passed
            if shell.rank in ended:
                shell.exited = True
                shell.status = ended[shell.rank]

    def _state(self) -> str:
        written, kept = self.out.counts()
        ended = sorted(
            (stream, rank)
            for stream in STREAMS
            for rank in range(len(self.places.tasks) if self.places is not None else 0)
            if (stream, rank) not in self.eof_pending
        )
        shells = self.shells
        state: dict[str, Any] = {"written": written, "kept": kept, "eof": ended}
        if any(shell.where for shell in shells):  # each shell's tasks (``hostpids``)
            state["where"] = [shell.where.decode(errors="replace") for shell in shells]
        if len(shells) == 1:
            state["offset"] = shells[0].applied
        else:  # per shell, in rank order, and the status of those that ended
            state["offset"] = [shell.applied for shell in shells]
            state["ended"] = [[shell.rank, shell.status] for shell in shells if shell.exited]
        return orjson.dumps(state).decode()

    def _conclude(self, events: list[Any]) -> None:
        """The earlier job-exec finished the job: answer as it would have."""
        job = self.job
        job.started = True
        self.exited = self.concluded = True
        complete = next((e for e in events if e.name == "complete"), None)
        if complete is None:
            job.finalize()
            return
        job.set_running()
        job.complete(int((complete.context or {}).get("status", 0)))

    def _forget(self, leftovers: Mapping[int, Leftover], *, kill: bool = False) -> None:
        """What an earlier job-exec left of the job is not needed: let its shells go."""
        for rank, leftover in leftovers.items():
            if leftover.running:
                key = leftover.key
                send = self.service.send_launcher
                send(rank, wire.record(wire.RESUME, key, b"%d" % ALL_RECORDS))
                if kill:
                    send(rank, wire.record(wire.TERMINATE, key, b"%d" % signal.SIGKILL))
            if leftover.spool is not None:
                self.spools.add(leftover.spool)

    def _let_go(self, shell: ShellPart, leftover: Leftover) -> None:
        """A shell that ended before is found again: what it has is applied already."""
        self._forget({shell.rank: leftover}, kill=True)

    async def _replay(self, shell: ShellPart) -> None:
        """Apply the records a shell spooled while no job-exec was there, from ``applied``."""
        path = shell.spool
        assert path is not None
        self.spools.add(path)
        shell.replaying = True
        try:
            with open(path, "rb") as f:
                base = int.from_bytes(f.read(8), "big")
                if shell.applied < base:
                    raise PfluxError(f"{path} begins at {base}, after {shell.applied}")
                f.seek(shell.applied - base + 8)
                held = b""
                while chunk := await asyncio.to_thread(f.read, REPLAY_CHUNK):
                    records, used = wire.split(held + chunk)
                    held = (held + chunk)[used:]
                    self.service.on_records([(k, shell.key, p) for k, _, p in records], True)
                    if self.job.finalizing:
                        return
                    await self.writes.committed()
        except (OSError, PfluxError) as exc:
            log.error("job %s: reading its spool: %s", JobID(self.job.id), exc)
        finally:
            shell.replaying = False

    async def spooled(self, shell: ShellPart) -> None:
        """The shell ended before it was resumed: what it did not send is in its spool.

        While the job is being taken over, before its shells are resumed (the
        launcher's word came as the job's state was read), the takeover replays the
        spool rather than resume a shell that is gone."""
        if shell.exited:
            return
        if not shell.live:
            leftover = self.taken.get(shell.rank)
            if leftover is not None and leftover.running:
                leftover.running = False
                shell.spool = os.path.join(self.service.spool_dir, str(shell.key))
            return
        shell.live = False
        shell.spool = os.path.join(self.service.spool_dir, str(shell.key))
        await self._replay(shell)
        if not (shell.exited or self.job.finalizing or self.exited):
            self._lost(shell, None)

    def _lost(self, shell: ShellPart, status: int | None, *, unstarted: bool = False) -> None:
        """The shell is gone and said nothing more: it died, or nothing of it is left, or
        (``unstarted``) it ended before it started the job's tasks."""
        if unstarted:
            self.job.fatal(UNSTARTED_NOTE)
            self._shell_ended(shell, 1 << 8)
        elif status is None:
            self.job.fatal(LOST_NOTE)
            self._shell_ended(shell, 1 << 8)
        elif os.WIFSIGNALED(status):
            self.job.fatal(f"{DIED_NOTE} (killed by signal {os.WTERMSIG(status)})")
            self._shell_ended(shell, status)
        else:
            self.job.fatal(f"{DIED_NOTE} (exit status {os.WEXITSTATUS(status)})")
            self._shell_ended(shell, status)

    def _restore_input(self, text: str) -> None:
        """What earlier job-execs passed on of the job's input (the ``input`` eventlog)."""
        self.input_started = True
        try:
            events = parse(text)
        except EventlogError as exc:
            raise PfluxError(f"input: {exc}") from None
        for event in events:
            context = event.context or {}
            if event.name != "data":
                continue
            self.input_bytes += len(context.get("data", ""))
            if context.get("eof"):
                rank = context.get("rank", "all")
                closed = self.input_open if rank == "all" else set(IdSet.decode(str(rank)))
                self.input_open -= closed


def _never_asked(said: RankShells, jobid: int, leftover: Leftover) -> bool:
    """The rank's exec-node, the one job-exec journalled asking, never had the job's shell."""
    return bool(leftover.asked) and said.incarnation == leftover.asked and jobid in said.unasked
