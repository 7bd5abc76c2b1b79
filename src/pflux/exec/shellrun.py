"""A real run: the guest namespace, a job shell from the launcher, and its records.

job-exec plans the shell (``pflux.exec.plan``), creates the guest namespace
``job-<id>`` over ``job.<kvs id>.guest``, posts ``init`` and ``starting`` to
its ``exec.eventlog`` and the ``output`` header, and asks the launcher for a
shell, all in the same loop turn. The shell's records (``pflux.exec.wire``)
come straight back: STARTED with the time the tasks started (job-exec
answers ``start`` and posts ``shell.init`` and ``shell.start``), an
EXCEPTION for a launch failure, what the tasks write, in whole lines, and
the ends of their streams (job-exec builds the RFC 24 ``output`` events,
capped as flux-core's shell does), and last the job's wait status (from the
launcher, if the shell died). job-exec then posts ``complete {status}`` and
``done`` and removes the namespace (its keys stay as the final snapshot, RFC
16), and only then answers ``finish`` and ``release``.

Nothing a shell sends is lost if the broker dies. job-exec counts the bytes
of the records it has applied (the shell counts the same), and with each
turn's commit of a running job's output it puts where it stands,
``job.<kvs id>.data.job-exec.resume``: ``{offset, written, kept, eof}``
(records applied; bytes written and kept per stream; the streams whose end
is posted). Once a commit is answered it acknowledges (ACK) the offset to
the shell, every ``ACK_STEP`` bytes and when the job is over, and the shell
forgets what it kept. A job-exec that takes a job over (``resume``) reads
that key and the ``exec.eventlog``: a job whose ``done`` is there is over
(its status is ``complete``'s); otherwise the shell, if it runs, sends its
records again from the offset (RESUME); if it ended while the instance was
down, job-exec reads them from its spool file; if neither, the job gets a
fatal exception saying what became of its shell. Either way it posts
``reattach`` to the ``exec.eventlog``, as flux-core does.

Standard input (``job-exec.stdin``, from ``pflux job attach``) is appended
to the guest ``input`` eventlog (``pflux.shell.input``) and, once that is
committed, passed to the shell, which writes it to the tasks named.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import errno
import logging
import os
import signal
from typing import TYPE_CHECKING, Any, Final

import orjson

from pflux.broker.message import Message, RPCError
from pflux.broker.router import Request
from pflux.errors import EventlogError, IdsetError, PfluxError
from pflux.exec import wire
from pflux.exec.plan import STREAMS, Plan, plan
from pflux.exec.wire import ALL_RECORDS, EXITED_SPOOLED
from pflux.shell.input import data_context, header_context, limit_note
from pflux.shell.layout import Layout
from pflux.shell.output import DEFAULT_LIMIT, OWNER_LIMIT, KVSOutput, event_line
from pflux.spec.eventlog import parse
from pflux.spec.fluid import JobID
from pflux.spec.idset import IdSet

if TYPE_CHECKING:
    from pflux.exec.host import GuestKeys, RunJob, ShellHost
    from pflux.exec.leftovers import Leftover
    from pflux.protocol.exec import StdinRequest

__all__ = ["ACK_STEP", "RESUME_KEY", "ShellRun"]

log = logging.getLogger("pflux.job-exec")

ACK_STEP: Final = 1 << 20  # acknowledge a running job's records every this many bytes
RESUME_KEY: Final = "data.job-exec.resume"  # in the job's directory (RFC 16 data.<service>)
STDIN: Final = "job-exec.stdin"
REPLAY_CHUNK: Final = 1 << 20  # spool bytes replayed per commit
LOST_NOTE: Final = "job shell and tasks not found when the instance restarted"
DIED_NOTE: Final = "job shell died while the instance was down"
_STREAM_NAMES: Final = {wire.STDOUT: "stdout", wire.STDERR: "stderr"}


class ShellRun:
    """A real run: the guest namespace, a job shell from the launcher, and its records."""

    __slots__ = (
        "acked",
        "applied",
        "concluded",
        "eof_pending",
        "exited",
        "input_bytes",
        "input_kvs",
        "input_limit",
        "input_open",
        "input_started",
        "job",
        "key",
        "live",
        "namespace",
        "out",
        "places",
        "ptys",
        "retries",
        "service",
        "spool",
        "state_key",
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
        self.exited = False  # the job's status is known
        self.concluded = False  # an earlier job-exec posted complete and done
        self.live = False  # a shell runs, and will send records
        self.spool: str | None = None  # the job's spool file, if it may have one
        self.applied = 0  # bytes of the shell's records applied
        self.acked = 0  # the offset last acknowledged to the shell
        self.retries = 0  # commits of this job's keys being retried on their own
        self.input_kvs = False  # the tasks read stdin from the input eventlog, not a file
        self.input_limit = 0
        self.input_bytes = 0  # stdin bytes the input eventlog holds
        self.input_started = False  # the input eventlog exists
        self.input_open: set[int] = set()  # task ranks whose stdin is open
        self.ptys = False  # some tasks run on a pty

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
        self.places = planned.layout
        job.warning = planned.signal
        if planned.input.path is None:
            self.input_kvs = True
            self.input_open = set(range(ntasks))
        self.input_limit = planned.input.limit
        self.ptys = bool(planned.ptys)
        return planned

    def start(self) -> None:
        """Plan the shell, create the namespace, write the first events, ask for the shell."""
        planned = self._plan()
        if planned is not None:
            self._launch(planned)

    def _launch(self, planned: Plan) -> None:
        self._create(planned)
        self.job.started = True
        self.live = True
        self.service.send_launcher(wire.record(wire.SPAWN, self.job.id, planned.description))

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

    async def resume(self, leftover: Leftover | None) -> None:
        """Take over a job an earlier job-exec ran (see the module docstring)."""
        job = self.job
        planned = self._plan()
        events: list[Any] | None = None
        if planned is not None:
            self.spool = leftover.spool if leftover is not None else None
            try:
                events = await self._recover()
            except (PfluxError, RPCError, IdsetError) as exc:
                job.fatal(f"reattach: {exc}")
                planned = None
        if planned is None or job.finalizing:  # it cannot go on, or was ended meanwhile
            self._forget(leftover, kill=True)
            return
        names = [event.name for event in events or ()]
        if "done" in names:
            self._forget(leftover)
            self._conclude(events or [])
        elif events is None and leftover is None and not job.reattach:  # it never ran
            self._launch(planned)
        elif events is None and leftover is None:  # it started, and nothing is left of it
            self.concluded = True
            job.fatal(LOST_NOTE)
        else:
            await self._go_on(leftover, planned, events is not None, "shell.start" in names)

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
        self, leftover: Leftover | None, planned: Plan, logged: bool, running: bool
    ) -> None:
        """Resume the shell, or replay its spool, or say what became of it."""
        job = self.job
        job.started = True
        if logged:
            self.writes.append(self, "exec.eventlog", event_line("reattach"))
        else:  # its start had not reached the KVS: begin it there now
            self._create(planned)
        if running:
            job.set_running()
        if leftover is not None and leftover.running:
            self.live = True
            log.info("job %s: reattached to its shell", JobID(job.id))
            self.service.send_launcher(wire.record(wire.RESUME, job.id, b"%d" % self.applied))
        elif self.spool is not None:
            await self._replay(self.spool)
        if not (self.exited or self.live or job.finalizing):
            self._lost(leftover.died if leftover is not None else None)

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
            offset = int(state["offset"])
            self.out.restore(list(map(int, state["written"])), list(map(int, state["kept"])))
            for stream, rank in state["eof"]:
                self.eof_pending.discard((stream, rank))
        except (orjson.JSONDecodeError, LookupError, TypeError, ValueError) as exc:
            raise PfluxError(f"reattach: {self.state_key}: {exc!r}") from None
        self.applied = self.acked = offset

    def _state(self) -> str:
        written, kept = self.out.counts()
        ended = sorted(
            (stream, rank)
            for stream in STREAMS
            for rank in range(len(self.places.tasks) if self.places is not None else 0)
            if (stream, rank) not in self.eof_pending
        )
        state = {"offset": self.applied, "written": written, "kept": kept, "eof": ended}
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

    def _forget(self, leftover: Leftover | None, *, kill: bool = False) -> None:
        """What an earlier job-exec left of the job is not needed: let its shell go."""
        if leftover is None:
            return
        if leftover.running:
            send = self.service.send_launcher
            send(wire.record(wire.RESUME, self.job.id, b"%d" % ALL_RECORDS))
            if kill:
                send(wire.record(wire.TERMINATE, self.job.id, b"%d" % signal.SIGKILL))
        self.spool = leftover.spool

    async def _replay(self, path: str) -> None:
        """Apply the records a shell spooled while no job-exec was there, from ``applied``."""
        try:
            with open(path, "rb") as f:
                base = int.from_bytes(f.read(8), "big")
                if self.applied < base:
                    raise PfluxError(f"{path} begins at {base}, after {self.applied}")
                f.seek(self.applied - base + 8)
                held = b""
                while chunk := await asyncio.to_thread(f.read, REPLAY_CHUNK):
                    records, used = wire.split(held + chunk)
                    held = (held + chunk)[used:]
                    self.service.on_records([(k, self.job.id, p) for k, _, p in records], True)
                    if self.job.finalizing:
                        return
                    await self.writes.committed()
        except (OSError, PfluxError) as exc:
            log.error("job %s: reading its spool: %s", JobID(self.job.id), exc)

    async def spooled(self) -> None:
        """The shell ended before it was resumed: what it did not send is in its spool."""
        if not self.live or self.exited:
            return
        self.live = False
        self.spool = os.path.join(self.service.spool_dir, str(self.job.id))
        await self._replay(self.spool)
        if not (self.exited or self.job.finalizing):
            self._lost(None)

    def _lost(self, status: int | None) -> None:
        """The shell is gone and said nothing more: it died, or nothing of it is left."""
        if status is None:
            self.job.fatal(LOST_NOTE)
            self._ended(1 << 8)
        elif os.WIFSIGNALED(status):
            self.job.fatal(f"{DIED_NOTE} (killed by signal {os.WTERMSIG(status)})")
            self._ended(status)
        else:
            self.job.fatal(f"{DIED_NOTE} (exit status {os.WEXITSTATUS(status)})")
            self._ended(status)

    # --- signals ------------------------------------------------------------------------

    def kill(self, signum: int) -> None:
        if self.live and not self.exited:
            self.service.send_launcher(wire.record(wire.KILL, self.job.id, b"%d" % signum))

    def kill_shell(self, signum: int) -> None:
        if self.live and not self.exited:
            self.service.send_launcher(wire.record(wire.TERMINATE, self.job.id, b"%d" % signum))

    # --- the shell's records ------------------------------------------------------------

    def on_record(self, kind: bytes, payload: bytes) -> None:
        """A record from the job's shell, or from the launcher about it."""
        if kind == wire.OUTPUT:
            self.out.data(
                _STREAM_NAMES[payload[:1]], int.from_bytes(payload[1:5], "big"), payload[5:]
            )
            self._output()
        elif kind == wire.EOF:
            self._eof(_STREAM_NAMES[payload[:1]], int.from_bytes(payload[1:5], "big"))
            self._output()
        elif kind == wire.STARTED:
            self.job.set_running()
            places = self.places
            assert places is not None
            when = float(payload) if payload else None  # when the tasks started
            leader = places.tasks[0].broker_rank
            text = event_line("shell.init", {"leader-rank": leader, "size": 1}, when)
            text += event_line("shell.start", {"taskmap": places.taskmap()}, when)
            self.writes.append(self, "exec.eventlog", text)
        elif kind == wire.EXCEPTION:
            self.job.raise_exception("exec", 0, payload.decode(errors="replace"))
        elif kind == wire.EXITED:
            status, _, reason = payload.decode(errors="replace").partition(" ")
            if int(status) == EXITED_SPOOLED:
                self.service.track(self.spooled())
            else:
                self._ended(int(status), reason)
        else:
            log.error("job %s: unknown record %r from the launcher", JobID(self.job.id), kind)

    def _eof(self, stream: str, rank: int) -> None:
        if (stream, rank) in self.eof_pending:
            self.out.eof(stream, rank)
            self.eof_pending.discard((stream, rank))

    def _output(self) -> None:
        if self.out:
            self.writes.append(self, "output", self.out.take().decode())

    def _ended(self, status: int, reason: str = "") -> None:
        """The shell is done: end the streams it did not, then the job."""
        for stream, rank in sorted(self.eof_pending):
            self._eof(stream, rank)
        self.out.close()
        self._output()
        self.on_exit(status, reason)

    def on_exit(self, status: int, reason: str = "") -> None:
        """The shell has exited with wait ``status`` (-1: it never ran, for ``reason``)."""
        if self.exited:
            return
        self.exited = True
        job = self.job
        if status < 0:
            job.fatal(reason or "job shell never started")
            status = 1 << 8
        elif os.WIFSIGNALED(status):
            job.fatal(f"job shell exited unexpectedly (killed by signal {os.WTERMSIG(status)})")
        job.complete(status)

    # --- committing -------------------------------------------------------------------

    def state(self) -> str | None:
        """What to put at ``RESUME_KEY`` this turn (None: nothing needs it)."""
        return None if self.exited else self._state()

    def on_committed(self) -> None:
        """This turn's records of the job are in the KVS: tell the shell, now and then."""
        if not self.live:
            return
        if self.exited or self.applied - self.acked >= ACK_STEP:
            self.acked = self.applied
            offset = ALL_RECORDS if self.exited else self.applied
            self.service.send_launcher(wire.record(wire.ACK, self.job.id, b"%d" % offset))

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
        if self.spool is not None:
            _unlink(self.spool)

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
        """``job-exec.stdin``: append to the ``input`` eventlog, then pass it to the shell."""
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
        record = wire.input_record(self.job.id, ranks, data, eof=eof)
        self.writes.after_commit(lambda: self._pass_input(req, record))

    def winsize(self, req: Request, rows: int, cols: int) -> None:
        """``job-exec.winsize``: pass the ptys' new size to the shell."""
        jobid = JobID(self.job.id)
        if self.places is None or not self.live or self.exited:
            raise RPCError(errno.ENOSYS, f"job {jobid}: not running")
        if not self.ptys:
            raise RPCError(errno.ENOSYS, f"job {jobid}: has no pty")
        text = f"{rows} {cols}".encode()
        self.service.send_launcher(wire.record(wire.WINSIZE, self.job.id, text))
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

    def _pass_input(self, req: Request, record: bytes) -> None:
        if self.live and not self.exited:
            self.service.send_launcher(record)
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
