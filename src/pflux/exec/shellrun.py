"""A real run: the guest namespace, a job shell per rank of R, and their records.

job-exec plans the job (``pflux.exec.plan``: one shell description per
execution target of R, as flux-core runs a shell per broker rank), creates
the guest namespace ``job-<id>`` over ``job.<kvs id>.guest``, posts
``init`` and ``starting`` to its ``exec.eventlog`` and the ``output``
header, and asks each rank's launcher for a shell
(``ShellHost.send_launcher``), all in the same loop turn. Every record is
keyed by its shell (``pflux.protocol.shellwire.shell_key``: job id and rank). The
shells' records come straight back: STARTED with the time the tasks started
(once every shell's have, job-exec answers ``start`` and posts
``shell.init``, whose ``size`` is the number of shells, and
``shell.start``), an EXCEPTION for a launch failure, what the tasks write,
in whole lines, the ends of their streams (job-exec builds the RFC 24
``output`` events, capped as flux-core's shell does), FENCE when a shell's
tasks enter PMI's barrier (every shell is answered with the union of their
puts once all have), and last each shell's wait status (from the launcher,
if the shell died). A shell that ends before the others has its rank
released (RFC 32, ``final: false``) once its records are committed. When
the last ends, job-exec posts ``complete {status}``, the largest status of
the shells, and ``done`` and removes the namespace (its keys stay as the
final snapshot, RFC 16), and only then answers ``finish`` and the final
``release``. A rank that goes down (``rank_lost``) fails the job, and is
released at once: its shell cannot report.

Nothing a shell sends is lost if the broker dies. job-exec counts the bytes
of each shell's records it has applied (the shell counts the same), and
with each turn's commit of a running job's output it puts where it stands,
``job.<kvs id>.data.job-exec.resume``: ``{offset, written, kept, eof}``
(records applied: a number for a job of one shell, else one per shell in
rank order, with ``ended``, the ``[rank, status]`` of the shells that
ended; bytes written and kept per stream; the streams whose end is posted).
Once a commit is answered it acknowledges (ACK) each shell's offset, every
``ACK_STEP`` bytes and when the shell is done, and the shell forgets what it
kept. A job-exec that takes a job over (``resume``) reads that key and the
``exec.eventlog``: a job whose ``done`` is there is over (its status is
``complete``'s); otherwise each shell, if it runs, sends its records again
from its offset (RESUME); if it ended while the instance was down, job-exec
reads them from its spool file; if neither, the job gets a fatal exception
saying what became of it. Either way it posts ``reattach`` to the
``exec.eventlog``, as flux-core does.

Standard input (``job-exec.stdin``, from ``pflux job attach``) is appended
to the guest ``input`` eventlog (``pflux.exec.input``) and, once that is
committed, passed to the shells running the tasks named, which write it to
them.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import errno
import logging
import marshal
import os
import signal
from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, Final

import orjson

from pflux.broker.message import Message, RPCError
from pflux.broker.router import Request
from pflux.errors import EventlogError, IdsetError, PfluxError, ResourceError
from pflux.exec.input import data_context, header_context, limit_note
from pflux.exec.output import DEFAULT_LIMIT, OWNER_LIMIT, KVSOutput, event_line
from pflux.exec.plan import STREAMS, Plan, plan
from pflux.protocol import shellwire as wire
from pflux.protocol.shellwire import ALL_RECORDS, EXITED_SPOOLED
from pflux.spec.eventlog import parse
from pflux.spec.fluid import JobID
from pflux.spec.idset import IdSet
from pflux.spec.layout import Layout
from pflux.spec.resource import ResourceSet

if TYPE_CHECKING:
    from pflux.exec.host import GuestKeys, RunJob, ShellHost
    from pflux.exec.leftovers import Leftover
    from pflux.protocol.exec import StdinRequest

__all__ = ["ACK_STEP", "RESUME_KEY", "UNSTARTED_NOTE", "ShellPart", "ShellRun"]

log = logging.getLogger("pflux.job-exec")

ACK_STEP: Final = 1 << 20  # acknowledge a running job's records every this many bytes
RESUME_KEY: Final = "data.job-exec.resume"  # in the job's directory (RFC 16 data.<service>)
STDIN: Final = "job-exec.stdin"
REPLAY_CHUNK: Final = 1 << 20  # spool bytes replayed per commit
LOST_NOTE: Final = "job shell and tasks not found when the instance restarted"
DIED_NOTE: Final = "job shell died while the instance was down"
UNSTARTED_NOTE: Final = "job shell never started the job before the instance restarted"
REJOIN_WAIT: Final = 60.0  # seconds a restarted job-exec waits for a rank's shells (quorum's)
_STREAM_NAMES: Final = {wire.STDOUT: "stdout", wire.STDERR: "stderr"}


class ShellPart:
    """One of a job's shells: the broker rank it runs for, and where its records stand."""

    __slots__ = (
        "acked",
        "applied",
        "awaiting",
        "exited",
        "key",
        "live",
        "rank",
        "replaying",
        "spool",
        "started",
        "status",
        "tasks",
        "where",
    )

    def __init__(self, jobid: int, rank: int, tasks: frozenset[int] | None) -> None:
        self.rank = rank  # the broker rank it runs for
        self.key = wire.shell_key(jobid, rank)  # its records' key
        self.tasks = tasks  # the ranks of its tasks (None: every task of the job)
        self.applied = 0  # bytes of its records applied
        self.acked = 0  # the offset last acknowledged to it
        self.live = False  # it runs, and will send records
        self.started = False  # it said STARTED
        self.where = b""  # what STARTED said of its tasks: HOST RANK:PID,RANK:PID...
        self.exited = False  # its status is known (or it was lost)
        self.status = 0  # its wait status
        self.spool: str | None = None  # its spool file, if it may have one
        self.awaiting = False  # on another broker: taken over once that rank says it runs
        self.replaying = False  # its spool is being applied


class ShellRun:
    """A real run: the guest namespace, a job shell per rank of R, and their records."""

    __slots__ = (
        "by_key",
        "concluded",
        "eof_pending",
        "exited",
        "fences",
        "input_bytes",
        "input_kvs",
        "input_limit",
        "input_open",
        "input_started",
        "job",
        "key",
        "namespace",
        "out",
        "places",
        "ptys",
        "retries",
        "service",
        "shells",
        "spools",
        "started_at",
        "state_key",
        "taken",
        "writes",
    )

    def __init__(self, job: RunJob) -> None:
        self.job = job
        self.service: ShellHost[ShellRun] = job.service
        self.writes: GuestKeys[ShellRun] = self.service.writes
        jobid = JobID(job.id)
        self.namespace = f"job-{job.id}"
        self.key = f"{jobid.kvs}.guest."  # the guest keys, as primary keys
        self.state_key = f"{jobid.kvs}.{RESUME_KEY}"
        self.out = KVSOutput(0, "")  # the output eventlog; its limit is set when planned
        self.eof_pending: set[tuple[str, int]] = set()  # KVS streams not ended yet
        self.places: Layout | None = None
        self.shells: list[ShellPart] = []  # in rank order, once planned
        self.by_key: dict[int, ShellPart] = {}
        # what an earlier job-exec left of its shells, by rank (set by the job, taking over)
        self.taken: Mapping[int, Leftover] = {}
        self.started_at = 0.0  # when the last shell's tasks started
        self.exited = False  # the job's status is known
        self.concluded = False  # an earlier job-exec posted complete and done
        self.spools: set[str] = set()  # spool files to remove with the namespace
        self.fences: dict[int, bytes] = {}  # the PMI barrier: each shell's puts, by rank
        self.retries = 0  # commits of this job's keys being retried on their own
        self.input_kvs = False  # the tasks read stdin from the input eventlog, not a file
        self.input_limit = 0
        self.input_bytes = 0  # stdin bytes the input eventlog holds
        self.input_started = False  # the input eventlog exists
        self.input_open: set[int] = set()  # task ranks whose stdin is open
        self.ptys = False  # some tasks run on a pty

    @property
    def live(self) -> bool:
        """Some shell runs, and will send records."""
        return any(shell.live for shell in self.shells)

    # --- starting -----------------------------------------------------------------------

    def _plan(self) -> Plan | None:
        job = self.job
        service = self.service
        try:
            planned = plan(
                job.id,
                job.jobspec,
                job.R,
                uri=service.uri,
                namespace=self.namespace,
                tmp_parents=service.tmp_parents,
                hostname=service.hostname,
                cpus=service.cpus,
                output_limit=OWNER_LIMIT if job.userid == service.owner else DEFAULT_LIMIT,
                shim=service.shim,
                jobid_path=service.jobid_path,
            )
        except PfluxError as exc:
            job.fatal(str(exc))
            return None
        conf = planned.output
        ntasks = planned.ntasks
        self.out.set_limit(conf.limit, conf.limit_text)
        for stream in STREAMS:
            if getattr(conf, stream).type != "file":
                self.eof_pending.update((stream, rank) for rank in range(ntasks))
        places = self.places = planned.layout
        if len(planned.shells) == 1:
            self.shells = [ShellPart(job.id, planned.shells[0][0], None)]
        else:
            self.shells = [
                ShellPart(job.id, r, frozenset(p.rank for p in places.tasks if p.broker_rank == r))
                for r, _ in planned.shells
            ]
        self.by_key = {shell.key: shell for shell in self.shells}
        job.warning = planned.signal
        if planned.input.path is None:
            self.input_kvs = True
            self.input_open = set(range(ntasks))
        self.input_limit = planned.input.limit
        self.ptys = bool(planned.ptys)
        return planned

    def start(self) -> None:
        """Plan the shells, create the namespace, write the first events, ask for the shells."""
        planned = self._plan()
        if planned is not None:
            self._launch(planned)

    def _launch(self, planned: Plan) -> None:
        self._create(planned)
        self.job.started = True
        service = self.service
        for shell, (rank, description) in zip(self.shells, planned.shells, strict=True):
            shell.live = True
            if not self._remote(rank):
                service.journal_asked(shell.key)
            service.send_launcher(rank, wire.record(wire.SPAWN, shell.key, description))

    def _create(self, planned: Plan) -> None:
        """The guest namespace and its first keys."""
        writes = self.writes
        out = self.out
        out.header(planned.ntasks)
        for level, component, message in planned.logs:
            out.log(message, level, component)
        ranks = IdSet.range(0, planned.ntasks - 1).encode(brackets=True)
        for stream, path in planned.redirects:
            out.redirect(stream, ranks, path)
        writes.create_namespace(self)
        writes.append(self, "exec.eventlog", event_line("init") + event_line("starting"), new=True)
        writes.append(self, "output", out.take().decode(), new=True)

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
        elif self._never_started(leftovers, names):
            log.info("job %s: its shells never started it: starting it again", JobID(job.id))
            self._launch(planned)
        elif events is None and not leftovers:  # it started, and nothing is left of it
            self.concluded = True
            job.fatal(LOST_NOTE)
        else:
            await self._go_on(leftovers, planned, events is not None, "shell.start" in names)

    def _never_started(self, leftovers: Mapping[int, Leftover], names: list[str]) -> bool:
        """Whether none of the job's tasks can have run, nor ever will: each of its shells
        was given the job and ended before it recorded itself, and neither the job manager
        (``reattach``) nor the exec.eventlog has heard of a start."""
        if self.job.reattach or "shell.start" in names:
            return False
        shells = self.shells
        return len(leftovers) == len(shells) and all(
            (leftover := leftovers.get(shell.rank)) is not None and leftover.unstarted
            for shell in shells
        )

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
            elif leftover is None and self._remote(shell.rank):
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

    def _remote(self, rank: int) -> bool:
        """Rank ``rank``'s shells run on a broker of their own (exec-node's)."""
        return rank != 0 and self.service.broker.size > 1

    def _await_rank(self, shell: ShellPart) -> None:
        """A shell on another broker: take it over once its rank says what it runs (now,
        if it has), or lose it if the rank does not come back in time."""
        shell.awaiting = True
        answered = self.service.remote_shells(shell.rank)
        if answered is not None:
            self.rank_answered(shell.rank, *answered)
        else:
            self.job.loop.call_later(REJOIN_WAIT, self._rank_too_late, shell)

    def rank_answered(self, rank: int, running: set[int], died: dict[int, int]) -> None:
        """Rank ``rank``'s exec-node said which jobs' shells it runs: take this job's over."""
        for shell in self.shells:
            if shell.rank != rank or not shell.awaiting:
                continue
            shell.awaiting = False
            if self.job.id in running:
                self._reattach(shell)
            elif not (self.job.finalizing or self.exited):
                self._lost(shell, died.get(self.job.id))

    def _rank_too_late(self, shell: ShellPart) -> None:
        if shell.awaiting and not shell.exited:
            shell.awaiting = False
            self._lost(shell, None)

    async def _read(self, key: str) -> str | None:
        try:
            reply = await self.service.broker.call("kvs.get", {"key": key})
        except RPCError as exc:
            if exc.errnum == errno.ENOENT:
                return None
            raise
        value: str = reply["value"]
        return value

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
        except (orjson.JSONDecodeError, LookupError, TypeError, ValueError) as exc:
            raise PfluxError(f"reattach: {self.state_key}: {exc!r}") from None
        for shell, offset in zip(self.shells, offsets, strict=True):
            shell.applied = shell.acked = offset
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

    def rank_lost(self, rank: int) -> None:
        """Broker rank ``rank`` is down: its shell cannot report, and the job fails.

        The shell is told to end (should the rank be reachable still) and let
        go of its records; its rank is released at once, the others as their
        shells end.
        """
        shell = next((s for s in self.shells if s.rank == rank), None)
        if shell is None or shell.exited or self.exited:
            return
        if shell.live:
            self.service.send_launcher(rank, wire.let_go(shell.key))
        shell.live = False
        self.job.fatal(f"lost contact with job shell on {self._host(rank)} (rank {rank})")
        self._shell_ended(shell, 1 << 8, release=self.job.release)

    def _host(self, rank: int) -> str:
        """The host name R gives broker rank ``rank`` (its rank, if R cannot say)."""
        try:
            resources = ResourceSet.from_json(self.job.R)
        except ResourceError:
            return f"rank {rank}"
        target = resources.targets.get(rank)
        return target.hostname if target is not None else f"rank {rank}"

    # --- signals ------------------------------------------------------------------------

    def kill(self, signum: int) -> None:
        self._each_shell(wire.KILL, b"%d" % signum)

    def kill_shell(self, signum: int) -> None:
        self._each_shell(wire.TERMINATE, b"%d" % signum)

    def _each_shell(self, kind: bytes, payload: bytes) -> None:
        """Send each shell that runs a record."""
        if self.exited:
            return
        send = self.service.send_launcher
        for shell in self.shells:
            if shell.live and not shell.exited:
                send(shell.rank, wire.record(kind, shell.key, payload))

    def hostpids(self) -> list[str]:
        """``host:pid`` of each task, in task rank order, as its shell said at STARTED."""
        found: dict[int, str] = {}
        for shell in self.shells:
            host, _, tasks = shell.where.decode(errors="replace").partition(" ")
            for task in filter(None, tasks.split(",")):
                rank, _, pid = task.partition(":")
                found[int(rank)] = f"{host}:{pid}"
        return [found[rank] for rank in sorted(found)]

    # --- the shells' records ------------------------------------------------------------

    def on_record(self, shell: ShellPart, kind: bytes, payload: bytes) -> None:
        """A record from one of the job's shells, or from the launcher about it."""
        if kind == wire.OUTPUT:
            self.out.data(
                _STREAM_NAMES[payload[:1]], int.from_bytes(payload[1:5], "big"), payload[5:]
            )
            self._output()
        elif kind == wire.EOF:
            self._eof(_STREAM_NAMES[payload[:1]], int.from_bytes(payload[1:5], "big"))
            self._output()
        elif kind == wire.STARTED:
            when, _, shell.where = payload.partition(b" ")
            self._started(shell, float(when) if when else 0.0)
        elif kind == wire.EXCEPTION:
            self.job.raise_exception("exec", 0, payload.decode(errors="replace"))
        elif kind == wire.LOG:
            level, _, message = payload.decode(errors="replace").partition(" ")
            self.out.log(message, int(level), None)
            self._output()
        elif kind == wire.FENCE:
            self._fence(shell, payload)
        elif kind == wire.EXITED:
            status, _, reason = payload.decode(errors="replace").partition(" ")
            if int(status) == EXITED_SPOOLED:
                self.service.track(self.spooled(shell))
            else:
                self._shell_ended(shell, int(status), reason)
        else:
            log.error("job %s: unknown record %r from the launcher", JobID(self.job.id), kind)

    def _started(self, shell: ShellPart, when: float) -> None:
        """A shell's tasks run since ``when`` (0: unknown): once every shell's do, so
        does the job."""
        if shell.started:
            return
        shell.started = True
        self.started_at = max(self.started_at, when)
        shells = self.shells
        if len(shells) > 1 and not all(s.started for s in shells):
            return
        self.job.set_running()
        places = self.places
        assert places is not None
        at = self.started_at or None
        leader = shells[0].rank
        text = event_line("shell.init", {"leader-rank": leader, "size": len(shells)}, at)
        text += event_line("shell.start", {"taskmap": places.taskmap()}, at)
        self.writes.append(self, "exec.eventlog", text)

    def _fence(self, shell: ShellPart, puts: bytes) -> None:
        """A shell's tasks are all in PMI's barrier: once every shell's are, send each the
        union of what they put."""
        fences = self.fences
        fences[shell.rank] = puts
        if len(fences) < len(self.shells):
            return
        union: dict[str, str] = {}
        for part in fences.values():
            union.update(marshal.loads(part))
        fences.clear()
        self._each_shell(wire.FENCE, marshal.dumps(union))

    def _eof(self, stream: str, rank: int) -> None:
        if (stream, rank) in self.eof_pending:
            self.out.eof(stream, rank)
            self.eof_pending.discard((stream, rank))

    def _output(self) -> None:
        if self.out:
            self.writes.append(self, "output", self.out.take().decode())

    def _shell_ended(
        self,
        shell: ShellPart,
        status: int,
        reason: str = "",
        release: Callable[[str], None] | None = None,
    ) -> None:
        """``shell`` has exited with wait ``status`` (-1: it never ran, for ``reason``):
        once every shell has, the job ends with the largest status (flux-core's); until
        then its rank is released once its records are committed (``release``: now)."""
        if shell.exited or self.exited:
            return
        shell.exited = True
        if status < 0:
            self.job.fatal(reason or "job shell never started")
            status = 1 << 8
        elif os.WIFSIGNALED(status):
            self.job.fatal(
                f"job shell exited unexpectedly (killed by signal {os.WTERMSIG(status)})"
            )
        shell.status = status
        shells = self.shells
        if len(shells) == 1 or all(s.exited for s in shells):
            self._ended(max(s.status for s in shells))
        elif release is not None:
            release(str(shell.rank))
        else:
            self.writes.after_commit(partial(self.job.release, str(shell.rank)))

    def _ended(self, status: int) -> None:
        """Every shell is done: end the streams they did not, then the job."""
        for stream, rank in sorted(self.eof_pending):
            self._eof(stream, rank)
        self.out.close()
        self._output()
        self.exited = True
        self.job.complete(status)

    def on_exit(self, status: int, reason: str = "") -> None:
        """Every shell is gone with wait ``status`` (-1: never ran, for ``reason``)."""
        if self.exited:
            return
        self.exited = True
        for shell in self.shells:
            shell.exited = True
        job = self.job
        if status < 0:
            job.fatal(reason or "job shell never started")
            status = 1 << 8
        elif os.WIFSIGNALED(status):
            job.fatal(f"job shell exited unexpectedly (killed by signal {os.WTERMSIG(status)})")
        job.complete(status)

    def shell_failed(self, key: int, reason: str) -> None:
        """The shell ``key`` will never report (its launcher died before it started)."""
        shell = self.by_key.get(key)
        if shell is not None and len(self.shells) > 1:
            shell.live = False
            self._shell_ended(shell, -1, reason)
        elif shell is not None:
            self.on_exit(-1, reason)

    # --- committing -------------------------------------------------------------------

    def state(self) -> str | None:
        """What to put at ``RESUME_KEY`` this turn (None: nothing needs it)."""
        return None if self.exited else self._state()

    def on_committed(self) -> None:
        """This turn's records of the job are in the KVS: tell the shells, now and then."""
        send = self.service.send_launcher
        for shell in self.shells:
            if not shell.live:
                continue
            done = shell.exited or self.exited
            if done or shell.applied - shell.acked >= ACK_STEP:
                shell.acked = shell.applied
                offset = ALL_RECORDS if done else shell.applied
                send(shell.rank, wire.record(wire.ACK, shell.key, b"%d" % offset))
                if done:
                    shell.live = False

    def finalize(self, finished: bool, status: int) -> bool:
        """Post the last events and remove the namespace, with this turn's writes."""
        if not self.concluded:
            text = event_line("complete", {"status": status}) if finished else ""
            self.writes.append(self, "exec.eventlog", text + event_line("done"))
        self.writes.remove_namespace(self)
        return True

    def on_created(self, msg: Message) -> None:
        if msg.errnum and msg.errnum != errno.EEXIST:  # EEXIST: an earlier job-exec made it
            self.job.fatal(f"failed to create guest namespace: {msg.errstr}")

    def on_removed(self, msg: Message) -> None:
        if msg.errnum and msg.errnum != errno.ENOTSUP:
            log.error("job %s: namespace-remove: %s", JobID(self.job.id), msg.errstr)
        for shell in self.shells:
            if shell.spool is not None:
                self.spools.add(shell.spool)
        for path in sorted(self.spools):
            _unlink(path)

    def on_retried(self, msg: Message) -> None:
        """A commit of this job's keys alone, after a batch failed, is answered."""
        self.retries -= 1
        if msg.errnum:
            log.error("job %s: guest namespace commit: %s", JobID(self.job.id), msg.errstr)
            if not self.job.finalizing:
                self.job.fatal(f"failed to write to the guest namespace: {msg.errstr}")
        elif not self.retries:
            self.on_committed()

    # --- standard input -----------------------------------------------------------------

    def stdin(self, req: Request, request: StdinRequest) -> None:
        """``job-exec.stdin``: append to the ``input`` eventlog, then pass it to the shells."""
        jobid = JobID(self.job.id)
        if self.places is None or not self.live or self.exited:
            raise RPCError(errno.ENOSYS, f"job {jobid}: not running")
        if not self.input_kvs:
            raise RPCError(errno.ENOSYS, f"job {jobid}: its stdin is read from a file")
        ranks, data, eof = _stdin_of(request, len(self.places.tasks))
        targets = set(self.input_open) if ranks is None else set(ranks)
        if not targets or not targets <= self.input_open:
            raise RPCError(errno.EPIPE, f"job {jobid}: stdin is closed")
        self.input_bytes += len(data)
        if self.input_bytes > self.input_limit:
            self.job.fatal(limit_note(self.input_limit))
            raise RPCError(errno.EFBIG, limit_note(self.input_limit))
        if eof:
            self.input_open -= targets
        text = event_line("data", data_context(request.rank, data, eof))
        if not self.input_started:
            self.input_started = True
            text = event_line("header", header_context()) + text
            self.writes.append(self, "input", text, new=True)
        else:
            self.writes.append(self, "input", text)
        self.writes.after_commit(lambda: self._pass_input(req, ranks, data, eof))

    def winsize(self, req: Request, rows: int, cols: int) -> None:
        """``job-exec.winsize``: pass the ptys' new size to the shells."""
        jobid = JobID(self.job.id)
        if self.places is None or not self.live or self.exited:
            raise RPCError(errno.ENOSYS, f"job {jobid}: not running")
        if not self.ptys:
            raise RPCError(errno.ENOSYS, f"job {jobid}: has no pty")
        self._each_shell(wire.WINSIZE, f"{rows} {cols}".encode())
        req.respond({})

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

    def _pass_input(self, req: Request, ranks: list[int] | None, data: bytes, eof: bool) -> None:
        """Give the input to the shells that run the tasks it is for."""
        if not self.exited:
            send = self.service.send_launcher
            for shell in self.shells:
                if not shell.live or shell.exited:
                    continue
                if ranks is None or shell.tasks is None or not shell.tasks.isdisjoint(ranks):
                    send(shell.rank, wire.input_record(shell.key, ranks, data, eof=eof))
        req.respond({})


def _stdin_of(request: StdinRequest, ntasks: int) -> tuple[list[int] | None, bytes, bool]:
    """(the ranks, None for all; the data; eof) of a ``job-exec.stdin`` request (RFC 24)."""
    if request.encoding == "base64":
        try:
            data = base64.b64decode(request.data, validate=True)
        except binascii.Error:
            raise RPCError(errno.EINVAL, f"{STDIN}: data: not valid base64") from None
    else:
        data = request.data.encode()
    if request.rank == "all":
        return None, data, request.eof
    try:
        ranks = list(IdSet.decode(request.rank))
    except IdsetError as exc:
        raise RPCError(errno.EINVAL, f"{STDIN}: rank: {exc}") from None
    if ranks and ranks[-1] >= ntasks:
        raise RPCError(errno.EINVAL, f"{STDIN}: rank {ranks[-1]}: the job has {ntasks} tasks")
    return ranks, data, request.eof


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        log.error("%s: %s", path, exc)
