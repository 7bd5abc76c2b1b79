"""A real run: the guest namespace, a job shell per rank of R, and their records.

job-exec plans the job (``pflux.exec.plan``: one shell description per
execution target of R, as flux-core runs a shell per broker rank), creates
the guest namespace ``job-<id>`` over ``job.<kvs id>.guest``, posts
``init`` and ``starting`` to its ``exec.eventlog`` and the ``output``
header, and asks each rank's launcher for a shell
(``ShellHost.send_launcher``), all in the same loop turn. Every record is
keyed by its shell (``pflux.protocol.shellwire.shell_key``: job id and rank). The
shells' records come straight back: STARTED with the time the tasks started
(once every shell's have, job-exec posts ``shell.init``, whose ``size`` is
the number of shells, and ``shell.start``, and answers ``start`` once they
are sent, at the turn's end), an EXCEPTION for a launch failure, what the tasks write,
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

Nothing a shell sends is lost if the broker dies: with each turn's commit of
a running job's output job-exec puts where it stands, which a later job-exec
reads to take the job over (``pflux.exec.takeover``). Once a commit is
answered it acknowledges (ACK) each shell's offset, every ``ACK_STEP`` bytes
and when the shell is done, and the shell forgets what it kept.

Standard input (``job-exec.stdin``, from ``pflux job attach``) is appended
to the guest ``input`` eventlog (``pflux.exec.input``) and, once that is
committed, passed to the shells running the tasks named, which write it to
them.
"""

from __future__ import annotations

import base64
import binascii
import errno
import logging
import marshal
import os
from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Final

from pflux.broker.router import Request
from pflux.errors import IdsetError, PfluxError, ResourceError, RPCError
from pflux.exec.input import data_context, header_context, limit_note
from pflux.exec.output import DEFAULT_LIMIT, OWNER_LIMIT, KVSOutput, event_line
from pflux.exec.plan import STREAMS, Plan, plan
from pflux.exec.shellpart import ShellPart
from pflux.exec.takeover import RESUME_KEY, Takeover
from pflux.protocol import shellwire as wire
from pflux.protocol.impwire import encode_description, spawn_as
from pflux.protocol.kvs import GetRequest, value_of
from pflux.protocol.message import Message
from pflux.protocol.shellwire import ALL_RECORDS, EXITED_SPOOLED, Description
from pflux.spec import jsontext
from pflux.spec.fluid import JobID
from pflux.spec.idset import IdSet
from pflux.spec.layout import Layout
from pflux.spec.resource import ResourceSet

if TYPE_CHECKING:
    from pflux.exec.host import GuestKeys, RunJob, ShellHost
    from pflux.exec.leftovers import Leftover
    from pflux.protocol.exec import StdinRequest

__all__ = ["ACK_STEP", "ShellRun"]

log = logging.getLogger("pflux.job-exec")

ACK_STEP: Final = 1 << 20  # acknowledge a running job's records every this many bytes
STDIN: Final = "job-exec.stdin"
_STREAM_NAMES: Final = {wire.STDOUT: "stdout", wire.STDERR: "stderr"}


class ShellRun(Takeover):
    """A real run: the guest namespace, a job shell per rank of R, and their records."""

    __slots__ = (
        "by_key",
        "eof_pending",
        "fences",
        "input_kvs",
        "input_limit",
        "input_open",
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
        self.rank_waits = {}  # takeovers waiting for ranks' words, by rank

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
                memo=service.plans,
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
        """Create the namespace and its first events, with this turn's writes, and ask
        each rank's launcher for the job's shell.

        A guest's job (not the instance owner's) runs through the privileged helper,
        which needs the job's J: the start request's, which job-ingest gave the job
        manager; or, where it carried none (a long J, a job manager restarted since),
        the KVS's, its shells asked for in the callback of the answer to J's read (no
        task), started or started again after a restart alike."""
        self._create(planned)
        job = self.job
        if job.userid == self.service.owner:
            self._spawn(planned)
        elif job.J is not None:
            self._spawn(planned, job.J)
        else:
            key = f"{JobID(job.id).kvs}.J"
            self.service.broker.send("kvs.get", GetRequest(key), partial(self._got_j, planned))

    def _got_j(self, planned: Plan, msg: Message) -> None:
        """The KVS's answer to the read of J: ask for the guest's shells with it, unless
        the job ended meanwhile (an exception while J was read)."""
        job = self.job
        if job.finalizing:
            return
        try:
            signed = value_of(msg.raise_for_error())
        except RPCError as exc:
            why = "it is not in the KVS" if exc.errnum == errno.ENOENT else exc.errstr
            job.fatal(f"cannot read the job's J: {why}")
            return
        self._spawn(planned, signed)

    def _spawn(self, planned: Plan, signed: str | None = None) -> None:
        """Ask each rank's launcher for the job's shell; with J (``signed``), a guest's,
        run as its user by the helper (SPAWN_AS)."""
        self.job.started = True
        service = self.service
        service.journal_asked([shell.key for shell in self.shells])
        for shell, (rank, description) in zip(self.shells, planned.shells, strict=True):
            shell.live = True
            if signed is None:
                service.send_launcher(rank, wire.record(wire.SPAWN, shell.key, description))
                continue
            plain = encode_description(Description(*marshal.loads(description)))
            payload = spawn_as(self.job.userid, signed, plain)
            service.send_launcher(rank, wire.record(wire.SPAWN_AS, shell.key, payload))

    def _create(self, planned: Plan) -> None:
        """The guest namespace and its first keys."""
        writes = self.writes
        out = self.out
        out.header(planned.ntasks)
        for level, component, message in planned.logs:
            out.log(message, level, component)
        if planned.redirects:
            ranks = IdSet.range(0, planned.ntasks - 1).encode(brackets=True)
            for stream, path in planned.redirects:
                out.redirect(stream, ranks, path)
        writes.create_namespace(self)
        writes.append(self, "exec.eventlog", event_line("init") + event_line("starting"), new=True)
        writes.append(self, "output", out.take().decode(), new=True)

    def _remote(self, rank: int) -> bool:
        """Rank ``rank``'s shells run on a broker of their own (exec-node's)."""
        return rank != 0 and self.service.broker.size > 1

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
        places = self.places
        assert places is not None
        at = self.started_at or None
        leader = shells[0].rank
        text = event_line("shell.init", {"leader-rank": leader, "size": len(shells)}, at)
        text += event_line("shell.start", {"taskmap": places.taskmap()}, at)
        self.writes.append(self, "exec.eventlog", text)
        self.job.set_running(after_writes=True)  # start goes out with these written

    def _fence(self, shell: ShellPart, puts: bytes) -> None:
        """A shell's tasks are all in PMI's barrier: once every shell's are, send each the
        union of what they put."""
        fences = self.fences
        fences[shell.rank] = puts
        if len(fences) < len(self.shells):
            return
        union: dict[str, str] = {}
        for rank, part in sorted(fences.items()):
            put = _fence_puts(part)
            if put is None:  # a guest's shell is the guest's to tamper with
                fences.clear()
                self.job.fatal(
                    f"job shell on {self._host(rank)} (rank {rank}) sent a PMI barrier"
                    " that is not a JSON object of strings"
                )
                return
            union.update(put)
        fences.clear()
        self._each_shell(wire.FENCE, jsontext.dumps(union))

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
        if not msg.errnum:  # its end is stored
            self.service.journal_ended([shell.key for shell in self.shells])

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


def _fence_puts(payload: bytes) -> dict[str, str] | None:
    """What one shell's tasks put before PMI's barrier (a JSON object of strings, as
    ``pflux.shell.job`` sends it); None if the payload is not one."""
    try:
        puts = jsontext.loads(payload)
    except jsontext.DecodeError:
        return None
    if type(puts) is not dict:
        return None
    if not all(type(value) is str for value in puts.values()):  # JSON's keys are strings
        return None
    return puts
