"""job-exec: the RFC 32 execution service.

The job manager sends ``job-exec.start {id, userid, jobspec, reattach, R}``
for each allocated job and reads the stream of ``{id, type, data}``
responses: ``start``, ``exception``, ``finish {status}`` and, always last,
``release {ranks: "all", final: true}``; a conventional error response
means job-exec itself is broken. Each job is an ``ExecJob``
(``pflux.exec.job``), run in test mode (``pflux.exec.testexec``) or in a job
shell from the launcher (``pflux.exec.link``), driven by
``pflux.exec.shellrun``; the guest keys they write go in one batch a turn
(``pflux.exec.writes``), and the settings are read by ``pflux.exec.config``.
This module holds the service: the requests, and the launcher's records
routed to the runs. A starting job-exec takes over what an earlier one left
(``pflux.exec.leftovers``) and restarts a launcher that dies, up to
``LAUNCHER_RESTARTS`` in a row. The whole story is in
``docs/architecture.md``, "job-exec", and the protocol in
``docs/interfaces.md``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Coroutine, Iterable
from functools import partial
from typing import Any, ClassVar, Final

from pflux import fluxshim
from pflux.broker.config import ConfigError, Declared
from pflux.broker.router import Broker, Request, Service, method
from pflux.broker.turn import TurnBatch
from pflux.errors import RPCError
from pflux.exec.config import (
    DEFAULT_KILL_TIMEOUT,
    config_seconds,
    config_signal,
    imp_socket,
    job_rundir,
    rejoin_timeout,
)
from pflux.exec.host import RankShells
from pflux.exec.job import ExecJob
from pflux.exec.leftovers import Leftover, survey
from pflux.exec.link import LauncherLink, Survivors
from pflux.exec.node import FROM_SHELLS
from pflux.exec.plan import PlanMemo
from pflux.exec.rendezvous import guests_shells, owner
from pflux.exec.shellrun import ShellRun
from pflux.exec.testexec import SimulatedRun
from pflux.exec.writes import GuestWrites
from pflux.protocol import shellwire as wire
from pflux.protocol.decode import decode
from pflux.protocol.exec import (
    ExceptionRequest,
    ExecExpirationRequest,
    ForgetRequest,
    HostpidsRequest,
    KeepRequest,
    KeepResponse,
    KillRequest,
    OverrideRequest,
    StartRequest,
    StdinRequest,
    WinsizeRequest,
)
from pflux.protocol.manager import ExecHelloRequest
from pflux.protocol.message import Message
from pflux.protocol.shelljournal import Appender, alive, asked_line, end_lines, kill_recorded, live
from pflux.protocol.shellwire import ALL_RECORDS, EXITED_SPOOLED, IMP_SOCKET, REJOIN_TIMEOUT
from pflux.spec.fluid import JobID

__all__ = ["ExecService"]

log = logging.getLogger("pflux.job-exec")

LAUNCHER_RESTARTS: Final = 5  # launchers started in a row after one died, before giving up
LAUNCHER_BACKOFF: Final = 0.5  # seconds before the second restart in a row, doubled for each
LAUNCHER_SETTLED: Final = 60.0  # seconds a launcher must live for the count to start again
ORPHANS_WAIT: Final = 10.0  # seconds a starting job-exec waits for a dead launcher's shells
_RECORD: Final = wire.HEADER.size
_JOB_BITS: Final = (1 << wire.RANK_SHIFT) - 1  # a shell key's job id (wire.key_job, inline)
# for tests: having journalled the shells of a job with some on another rank, job-exec writes the
# job's id to the file this names, if it exists, and stops its broker (SIGSTOP) before it asks
STOP_AT_REMOTE_ASK: Final = "PFLUX_TEST_STOP_AT_REMOTE_ASK"


class ExecService(Service):
    """The job-exec service (see the module docstring)."""

    name = "job-exec"
    config_keys: ClassVar[Declared] = {
        "exec": ("kill-timeout", "term-signal", "kill-signal", "rejoin-timeout", "imp"),
        **fluxshim.CONFIG_KEYS,
    }

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker)
        conf = broker.config.get("exec", {})
        if not isinstance(conf, dict):
            raise ConfigError("exec", None, f"must be a table, got {conf!r}")
        self.kill_timeout = config_seconds(conf, "kill-timeout", DEFAULT_KILL_TIMEOUT)
        self.term_signal = config_signal(conf, "term-signal", signal.SIGTERM)
        self.kill_signal = config_signal(conf, "kill-signal", signal.SIGKILL)
        # for the launcher, which gives it to its shells (see ``_adopt_orphans``)
        self.rejoin_timeout = rejoin_timeout(broker)
        self.stop_at_remote_ask = os.environ.get(STOP_AT_REMOTE_ASK)
        self.launcher_env = {REJOIN_TIMEOUT: repr(self.rejoin_timeout)}
        self.imp = imp_socket(broker)  # the privileged helper's socket: guests' jobs run
        if self.imp is not None:
            self.launcher_env[IMP_SOCKET] = self.imp
        self.state_dir = broker.attrs.get("state-dir") or tempfile.gettempdir()
        self.exec_dir = os.path.join(self.state_dir, "exec")
        self.journal = os.path.join(self.exec_dir, "journal")
        self.spool_dir = os.path.join(self.exec_dir, "spool")
        self.owner = broker.owner
        self.rundir = ""  # the parent of the jobs' FLUX_JOB_TMPDIR, made at start
        self.tmp_parents: tuple[str, ...] = ()  # where FLUX_JOB_TMPDIR may go, best first
        self.uri = broker.attrs.get("uri", "")
        self.jobid_path = broker.attrs.get("jobid-path", "/")  # this instance's, from the root
        # the flux shim on the tasks' paths, unless [shim] enable = false
        self.shim = fluxshim.shim_env() if fluxshim.enabled(broker.config) else None
        self.hostname = socket.gethostname()  # the shells' host, which notes name
        self.cpus = tuple(sorted(os.sched_getaffinity(0)))  # the launcher's, inherited
        self.plans = PlanMemo()  # the last jobs' plans, for the jobs like them
        self.jobs: dict[int, ExecJob] = {}
        self.leftovers: dict[int, Leftover] = {}  # what earlier job-execs left, by shell key
        # jobs in RUN when this job-exec started: an earlier one may have run them to the
        # end (their guest keys written, the job manager's events not), so their start,
        # even without reattach, first looks at what the KVS holds of them
        self.maybe_ran: set[int] = set()
        self.launcher: LauncherLink | None = None
        self.launched = 0.0  # when the launcher was started (monotonic)
        self.restarts = 0  # launchers started in a row after one died
        self.rejoining: set[int] = set()  # shells (keys) whose launcher died, until they rejoin
        self._restart: asyncio.TimerHandle | None = None  # a launcher to start after a backoff
        self._held = bytearray()  # records for that launcher
        # records for other ranks' launchers: a turn's, one message for each rank
        self._remote: TurnBatch[dict[int, bytearray]] = TurnBatch(broker, dict, self._send_remote)
        # what each other rank's exec-node runs, as it said when it last joined
        self._answered: dict[int, RankShells] = {}
        self.stopping = False
        # the launcher's word of shells that ended while this job-exec surveyed leftovers
        self._ended_early: dict[int, bytes] | None = {}
        # ... and the shells that rejoined its launcher meanwhile (see ``_adopt_orphans``)
        self._rejoined_early: set[int] = set()
        self._orphans: set[int] = set()  # a dead launcher's shells not heard of yet
        self._orphans_heard = asyncio.Event()  # ... until there are none
        self._late: set[int] = set()  # ... those alive after ORPHANS_WAIT, until they rejoin
        self._tasks: set[asyncio.Task[None]] = set()
        self.writes: GuestWrites[ShellRun] = GuestWrites(broker)  # the guest keys, a turn's
        self._asked = Appender(self.journal)  # the journal, for its Q lines (``journal_asked``)

    async def start(self) -> None:
        os.makedirs(self.spool_dir, mode=0o700, exist_ok=True)
        self.launcher = self._link()
        survivors = await self.launcher.attach(self.broker.loop)
        if survivors is not None:
            log.info("took over the job shell launcher (pid %s)", self.launcher.pid)
            await self._meet_guests(survivors.running)
        else:
            survivors = await self._adopt_orphans()
        self.rundir = job_rundir(self.broker, self.state_dir, fresh=survivors is None)
        self.leftovers, self.maybe_ran = await survey(self, survivors)
        early, self._ended_early = self._ended_early, None
        surveyed = survivors.running if survivors is not None else set()
        rejoined, self._rejoined_early = self._rejoined_early, set()
        for key in sorted(rejoined - surveyed):  # rejoined while the survey went on
            if wire.key_job(key) in self.maybe_ran:
                self.leftovers[key] = Leftover(key, running=True)
            else:
                self._rejoined([key])
        self._late -= rejoined
        for key in self._late:  # alive, not rejoined yet: resumed once they do
            if key in self.leftovers:
                self.leftovers[key].late = True
        for key, payload in (early or {}).items():  # ended while the survey went on
            if key in self.leftovers:
                self.leftovers[key].ended(payload, self.spool_dir)
        fallback = os.environ.get("TMPDIR") or "/tmp"
        self.tmp_parents = (self.rundir, fallback) if fallback != self.rundir else (self.rundir,)
        if survivors is None:
            self._start_launcher()
        self.broker.watch_ranks(self._rank_changed)
        self.broker.send("job-manager.exec-hello", ExecHelloRequest(self.name), self._hello_done)

    def _hello_done(self, msg: Any) -> None:
        if msg.errnum:
            log.error("job-manager.exec-hello failed: %s (no jobs will be started)", msg.errstr)

    async def stop(self) -> None:
        self.stopping = True
        if self._restart is not None:
            self._restart.cancel()
        for job in list(self.jobs.values()):
            job.stop_timers()
        if self.launcher is not None:
            await self.launcher.stop()
        self.writes.flush()
        for task in list(self._tasks):
            task.cancel()
        if self.rundir:
            shutil.rmtree(self.rundir, ignore_errors=True)
        self._asked.close()

    def ended(self, jobid: int) -> None:
        """The job has answered its final ``release``: forget it."""
        self.jobs.pop(jobid, None)

    def track(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` as a task the service owns (kept until done, logged if it fails)."""
        task = self.broker.loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("job-exec task failed", exc_info=task.exception())

    # --- the launcher -------------------------------------------------------------------

    def _link(self) -> LauncherLink:
        return LauncherLink(
            self.broker,
            self.exec_dir,
            self.on_records,
            self._launcher_lost,
            self.launcher_env,
            rejoin_timeout=self.rejoin_timeout,
            on_rejoined=self._guest_rejoined,
        )

    def _start_launcher(self) -> None:
        """Start a launcher (the same link, and so the same ``exec/sock``, as the last)."""
        if self.launcher is None:
            self.launcher = self._link()
        self.launcher.start(self.broker.loop)
        self.launched = time.monotonic()

    async def _adopt_orphans(self) -> Survivors | None:
        """No launcher outlived the broker, but the journal names shells that run: theirs
        died with it, and they wait for a restarted instance (``[exec] rejoin-timeout``).

        Start a launcher, which they rejoin (LIVE, unasked) or which says they ended
        (EXITED), and answer as a launcher taken over would: the shells that rejoined,
        and those still alive after ``ORPHANS_WAIT`` (a loaded or stopped shell may take
        longer), which are resumed when they rejoin and killed if they have not within
        the rejoin timeout. A shell found gone is killed (what its session left) at once.
        None (no launcher started) when no shell runs.
        """
        self._orphans = await asyncio.to_thread(alive, self.journal)
        if not self._orphans:
            return None
        log.info("waiting for the job shells of a launcher that died: %s", sorted(self._orphans))
        self._start_launcher()
        await self._meet_guests(self._orphans)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._orphans_heard.wait(), ORPHANS_WAIT)
        unheard, self._orphans = self._orphans, set()
        # pid and start time again: only shells known to be gone are given up now
        self._late = unheard & await asyncio.to_thread(alive, self.journal) if unheard else set()
        gone = unheard - self._late
        if gone:
            log.error("job shells %s are gone and did not rejoin: killed", sorted(gone))
            await asyncio.to_thread(kill_recorded, self.journal, gone)
        if self._late:
            wait = max(self.rejoin_timeout - ORPHANS_WAIT, 0.0)
            log.warning(
                "job shells %s run but have not rejoined: waiting %g s more",
                sorted(self._late),
                wait,
            )
            self.broker.loop.call_later(wait, lambda: self.track(self._too_late()))
        survivors = Survivors(b"")
        survivors.running = self._rejoined_early - (self._ended_early or {}).keys() - gone
        survivors.running |= self._late
        return survivors

    async def _meet_guests(self, keys: set[int]) -> None:
        """Listen for the guests' shells among ``keys`` (running) at their rendezvous,
        for the rejoin timeout (by then they have given up): each is resumed as a shell
        that rejoined (``_guest_rejoined``)."""
        launcher = self.launcher
        if not keys or launcher is None:
            return
        shells = await asyncio.to_thread(guests_shells, self.journal, set(keys))
        owners = {key: await owner(self.broker, key) for key in shells}
        met = {key: (shells[key], uid) for key, uid in owners.items() if uid is not None}
        if met:
            launcher.meet(self.broker.loop, met)
            self.broker.loop.call_later(self.rejoin_timeout, launcher.forget_meetings)

    def _guest_rejoined(self, key: int) -> None:
        """A guest's shell has met this job-exec at its rendezvous, on a socket of its own."""
        log.info("job %s: its guest's shell rejoined", JobID(wire.key_job(key)))
        self._rejoined([key])

    async def _too_late(self) -> None:
        """Kill the shells that ran but did not rejoin within the rejoin timeout; the
        launcher says they ended, which ends their jobs."""
        late, self._late = self._late, set()
        if late and not self.stopping:
            log.error("job shells %s did not rejoin: killed", sorted(late))
            await asyncio.to_thread(kill_recorded, self.journal, late)

    def journal_asked(self, keys: list[int]) -> None:
        """Journal ``Q key`` for each shell before its launcher is asked for it: a restart
        whose launcher is gone then knows the job was given to no shell if no ``P``
        follows. Another rank's shell is journalled with that rank's exec-node's
        incarnation, which a restart asks it about (``pflux.protocol.shelljournal``).

        Through a descriptor kept open (``Appender``: a compaction loses no line); a
        line that fails is only logged.
        """
        lines = b"".join(asked_line(key, self._incarnation(wire.key_rank(key))) for key in keys)
        try:
            self._asked.append(lines)
        except OSError as exc:  # no journal yet (no launcher has started): nothing to add to
            log.debug("journal: %s", exc)
        if self.stop_at_remote_ask and any(self._incarnation(wire.key_rank(k)) for k in keys):
            self._stop_for_test(self.stop_at_remote_ask, keys[0] & _JOB_BITS)

    @staticmethod
    def _stop_for_test(path: str, jobid: int) -> None:
        """For tests (``STOP_AT_REMOTE_ASK``), once the file ``path`` exists (a FIFO)."""
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return
        with open(fd, "w") as f:
            f.write(f"{jobid}\n")
        os.kill(os.getpid(), signal.SIGSTOP)

    def _incarnation(self, rank: int) -> int:
        """Rank ``rank``'s exec-node's incarnation, as it last said; 0 for this broker's
        own launcher's shells, and while it has not said."""
        if not rank or self.broker.size == 1:
            return 0
        answer = self._answered.get(rank)
        return answer.incarnation if answer is not None else 0

    def journal_ended(self, keys: list[int]) -> None:
        """The job of shells ``keys`` has its end stored: journal the end of those on other
        ranks (``E``, after their ``Q``), and tell their exec-nodes they may forget them."""
        remote = [key for key in keys if wire.key_rank(key) and self.broker.size > 1]
        if not remote:
            return
        try:
            self._asked.append(end_lines(remote))
        except OSError as exc:
            log.debug("journal: %s", exc)
            return
        for key in remote:
            request = ForgetRequest([key & _JOB_BITS])
            self.broker.send("exec-node.forget", request, nodeid=wire.key_rank(key))

    def _orphan_heard(self, key: int) -> None:
        """A shell ``_adopt_orphans`` waits for has rejoined or ended."""
        if key in self._orphans:
            self._orphans.discard(key)
            if not self._orphans:
                self._orphans_heard.set()

    def send_launcher(self, rank: int, data: bytes) -> None:
        """Send records to broker rank ``rank``'s launcher: this broker's own (starting it
        again if it has died) for rank 0 and for every rank of an instance of one broker
        (its R's ranks all run here), else rank ``rank``'s exec-node's, the records of a
        turn in one message."""
        if rank and self.broker.size > 1:
            batch = self._remote.get()
            pending = batch.get(rank)
            if pending is None:
                batch[rank] = pending = bytearray()
            pending += data
            return
        if self.launcher is None or not self.launcher.running:
            if self.stopping:
                return
            if self._restart is not None:  # one starts after a backoff: it gets them then
                self._held += data
                return
            self._start_launcher()
        assert self.launcher is not None
        self.launcher.send(data)

    def _send_remote(self, batch: dict[int, bytearray]) -> None:
        for rank, data in batch.items():
            self.broker.send("exec-node.send", bytes(data), nodeid=rank)

    @method("records")
    def records(self, req: Request) -> None:
        """Records from another rank's launcher and shells (``pflux.exec.node``)."""
        req.require_internal("exec-node")
        data = req.payload
        if not isinstance(data, bytes) or not data:
            raise RPCError(errno.EPROTO, "job-exec.records: the payload must be records (bytes)")
        self.on_records(wire.split(data, 1)[0], data[:1] == FROM_SHELLS)

    def on_records(self, records: list[wire.Record], from_shell: bool) -> None:
        """Records from the shells (counted: they are the offsets ACK names) or the launcher."""
        jobs = self.jobs
        for kind, key, payload in records:
            job = jobs.get(key & _JOB_BITS)
            run = job.impl if job is not None else None
            shell = run.by_key.get(key) if isinstance(run, ShellRun) else None
            if shell is None or shell.exited or not isinstance(run, ShellRun):
                self._unclaimed((kind, key, payload), from_shell, run, shell is not None)
                continue
            if from_shell:
                if not (shell.live or shell.replaying):  # sent before its RESUME: sent again
                    continue
                shell.applied += _RECORD + len(payload)
                self.writes.applied(run)
            try:
                run.on_record(shell, kind, payload)
            except (LookupError, ValueError) as exc:  # a bug in the shell or launcher
                log.error("job %s: bad %r record: %r", JobID(key & _JOB_BITS), kind, exc)

    def _unclaimed(self, record: wire.Record, from_shell: bool, run: object, planned: bool) -> None:
        """A record of no running shell's: a launcher's LIVE, or a shell's end, which goes
        to what is left of it when its job is being taken over (``planned``: its job has
        its shells planned)."""
        kind, key, payload = record
        if kind == wire.LIVE and not from_shell:  # key is the launcher's pid
            self._rejoined(Survivors(payload).running)
        if kind != wire.EXITED:
            return
        if from_shell:  # a shell whose job (or part) is over: let it go
            self.send_launcher(wire.key_rank(key), wire.record(wire.ACK, key, b"%d" % ALL_RECORDS))
        elif key in self.leftovers:  # a shell to take over has ended meanwhile
            self.leftovers[key].ended(payload, self.spool_dir)
        elif self._ended_early is not None:  # the survey of leftovers goes on
            self._ended_early[key] = payload
            self._orphan_heard(key)
        elif not planned and isinstance(run, ShellRun) and wire.key_rank(key) in run.taken:
            run.taken[wire.key_rank(key)].ended(payload, self.spool_dir)  # not planned yet
        elif payload.startswith(b"%d " % EXITED_SPOOLED):  # the job is over: nobody reads it
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(self.spool_dir, str(key)))

    def _launcher_lost(self) -> None:
        """Start another launcher, which the shells rejoin; after too many, fail their jobs."""
        if self.stopping:
            return
        runs = [
            job.impl
            for job in self.jobs.values()
            if isinstance(job.impl, ShellRun) and job.started and not job.impl.exited
        ]
        if time.monotonic() - self.launched >= LAUNCHER_SETTLED:
            self.restarts = 0
        if self.restarts >= LAUNCHER_RESTARTS:
            log.error(
                "the job shell launcher died %d times in a row; failing the jobs it was running",
                self.restarts + 1,
            )
            self.restarts = 0
            self.rejoining.clear()
            assert self.launcher is not None
            self.launcher.close_listener()  # its shells cannot rejoin: they end their tasks
            self.track(self._fail_runs(runs))
            return
        delay = LAUNCHER_BACKOFF * 2 ** (self.restarts - 1) if self.restarts else 0.0
        self.restarts += 1
        log.error("the job shell launcher died; starting another in %g s", delay)
        self.rejoining = {shell.key for run in runs for shell in run.shells if shell.live}
        if self.launcher is not None:  # guests' shells, on sockets of their own, need not
            self.rejoining -= self.launcher.guest_keys
        self._restart = self.broker.loop.call_later(delay, self._relaunch)

    def _relaunch(self) -> None:
        """Start the launcher again and give it what was held, having ended the jobs whose
        shells will not rejoin it."""
        self._restart = None
        if self.stopping:
            return
        self._unjournalled()
        self._start_launcher()
        held, self._held = self._held, bytearray()
        if held:
            self.send_launcher(0, bytes(held))

    def _unjournalled(self) -> None:
        """End the jobs waiting to rejoin whose shells the journal does not name.

        A shell journals itself before its first task: one not there never
        started the job (its launcher died first), and will not rejoin. The
        journal is read before the new launcher, which appends to it, starts;
        it is short (the launcher compacts it), and a launcher seldom dies.
        """
        recorded = {key for key, entry in live(self.journal).items() if entry[0]}  # not Q
        for key in sorted(self.rejoining - recorded):
            self.rejoining.discard(key)
            job = self.jobs.get(wire.key_job(key))
            if job is not None and isinstance(job.impl, ShellRun):
                job.impl.shell_failed(key, wire.LAUNCHER_DIED)

    def _rejoined(self, keys: Iterable[int]) -> None:
        """Shells of a launcher that died have rejoined the new one: resume them.

        From the records job-exec has applied: those the shells sent on the dead
        launcher's socket after that are sent again. A job being taken over
        (``Takeover.resume``) is resumed as that goes on; a shell whose job is
        not running here any more is let go.
        """
        for key in keys:
            self.rejoining.discard(key)
            if self._ended_early is not None:  # job-exec is starting: the survey takes it
                self._rejoined_early.add(key)
                self._orphan_heard(key)
                continue
            self._late.discard(key)
            if key in self.leftovers:  # its start request, to come, resumes it
                self.leftovers[key].late = False
                continue
            jobid, rank = wire.key_job(key), wire.key_rank(key)
            job = self.jobs.get(jobid)
            if job is not None and not job.finalizing:
                run = job.impl
                shell = run.by_key.get(key) if isinstance(run, ShellRun) else None
                if shell is not None and shell.live and not shell.exited:
                    data = wire.record(wire.RESUME, key, b"%d" % shell.applied)
                    self.send_launcher(rank, data)
                continue
            log.warning("job %s: its shell rejoined, but the job is over", JobID(jobid))
            self.send_launcher(rank, wire.record(wire.RESUME, key, b"%d" % ALL_RECORDS))
            self.send_launcher(rank, wire.record(wire.TERMINATE, key, b"%d" % signal.SIGKILL))

    async def _fail_runs(self, runs: list[ShellRun]) -> None:
        """Kill what is left of the shells of a launcher that died, then end their jobs."""
        keys = [shell.key for run in runs for shell in run.shells]
        _, survivors = await asyncio.to_thread(kill_recorded, self.journal, keys)
        if survivors:
            log.error("processes %s of job shells survive SIGKILL", survivors)
        for run in runs:
            for shell in run.shells:  # it may have begun one
                shell.spool = os.path.join(self.spool_dir, str(shell.key))
            run.on_exit(-1, wire.LAUNCHER_DIED)

    def remote_shells(self, rank: int) -> RankShells | None:
        return self._answered.get(rank)

    def _kept(self, rank: int, msg: Message) -> None:
        """Rank ``rank``'s exec-node ran what it was told and says what it runs."""
        try:
            answer = decode(msg.topic, msg.raise_for_error(), KeepResponse)
        except RPCError as exc:
            log.error("rank %d: exec-node.keep: %s", rank, exc.errstr)
            answer = KeepResponse([], [])
        died = {jobid: status for jobid, status in answer.died}
        said = RankShells(set(answer.jobs), died, answer.incarnation, set(answer.unasked))
        self._answered[rank] = said
        for job in list(self.jobs.values()):
            if isinstance(job.impl, ShellRun):
                job.impl.rank_answered(rank, said)

    def _rank_changed(self, rank: int, info: dict[str, Any] | None) -> None:
        """A broker rank went down: every job with a shell there fails. One came up (or
        back): its exec-node hears which jobs have a shell there, and ends the others."""
        if info is not None:
            if rank and self.broker.size > 1:
                # a job still being planned or taken over may have a shell there too
                listed = [
                    job
                    for job in self.jobs.values()
                    if isinstance(job.impl, ShellRun)
                    and not job.finalizing
                    and (
                        not job.impl.shells
                        or any(s.rank == rank and not s.exited for s in job.impl.shells)
                    )
                ]
                # a guest's shell there meets exec-node running as its job's user
                guests = [(job.id, job.userid) for job in listed if job.userid != self.owner]
                request = KeepRequest([job.id for job in listed], guests)
                self.broker.send("exec-node.keep", request, partial(self._kept, rank), nodeid=rank)
            return
        self._answered.pop(rank, None)
        for job in list(self.jobs.values()):
            if isinstance(job.impl, ShellRun) and not job.finalizing:
                job.impl.rank_lost(rank)

    # --- requests -----------------------------------------------------------------------

    def _lookup(self, req: Request, jobid: int) -> ExecJob:
        job = self.jobs.get(jobid)
        if job is None:
            raise RPCError(errno.ENOENT, f"job {JobID(jobid)}: not running")
        if not req.owner and req.userid != job.userid:
            raise RPCError(errno.EPERM, f"job {JobID(jobid)}: permission denied")
        return job

    @method("start")
    def start_job(self, req: Request) -> None:
        start = decode(req.topic, req.payload, StartRequest)
        if not req.owner:
            raise RPCError(errno.EPERM, "job-exec.start: only the instance owner may start jobs")
        jobid = start.id
        if jobid in self.jobs:
            raise RPCError(errno.EEXIST, f"job {JobID(jobid)}: already started")
        job = ExecJob(
            self,
            req,
            jobid=jobid,
            userid=start.userid,
            jobspec=start.jobspec,
            R=start.R,
            reattach=start.reattach,
            J=start.J,
        )
        self.jobs[jobid] = job
        maybe_ran = jobid in self.maybe_ran
        self.maybe_ran.discard(jobid)
        left = {}
        if self.leftovers:  # only after a restart
            for key in [key for key in self.leftovers if wire.key_job(key) == jobid]:
                left[wire.key_rank(key)] = self.leftovers.pop(key)
        job.begin(left, maybe_ran=maybe_ran)

    @method("kill")
    def kill(self, req: Request) -> None:
        kill = decode(req.topic, req.payload, KillRequest)
        job = self._lookup(req, kill.id)
        if not 0 < kill.signum < signal.NSIG:
            raise RPCError(errno.EINVAL, f"kill: invalid signal number {kill.signum!r}")
        job.kill(kill.signum)
        req.respond({})

    @method("expiration")
    def expiration(self, req: Request) -> None:
        """A running job's new expiration (after its ``resource-update``), from the job manager."""
        if not req.owner:
            raise RPCError(errno.EPERM, "job-exec.expiration: only the instance owner")
        update = decode(req.topic, req.payload, ExecExpirationRequest)
        self._lookup(req, update.id).update_expiration(float(update.expiration))
        req.respond({})

    @method("exception")
    def exception(self, req: Request) -> None:
        exception = decode(req.topic, req.payload, ExceptionRequest)
        job = self.jobs.get(exception.id)
        if job is not None:
            job.on_exception(exception.type, exception.severity)
        req.respond({})

    @method("stdin", guest=True)
    def stdin(self, req: Request) -> None:
        """Standard input for a running job's tasks (``pflux job attach``), as RFC 24 data."""
        request = decode(req.topic, req.payload, StdinRequest)
        job = self._lookup(req, request.id)
        if not isinstance(job.impl, ShellRun):
            raise RPCError(errno.ENOSYS, f"job {JobID(job.id)}: takes no input")
        job.impl.stdin(req, request)

    @method("hostpids", guest=True)
    def hostpids(self, req: Request) -> None:
        """Where a running job's tasks run (``flux job hostpids``): ``host:pid`` each."""
        request = decode(req.topic, req.payload, HostpidsRequest)
        job = self._lookup(req, request.id)
        found = job.impl.hostpids() if isinstance(job.impl, ShellRun) else []
        if not found:
            raise RPCError(errno.ENOENT, f"job {JobID(job.id)}: no task processes known")
        req.respond({"hostpids": found})

    @method("winsize", guest=True)
    def winsize(self, req: Request) -> None:
        """A new size for a running job's ptys (``pflux run -o pty.interactive``)."""
        size = decode(req.topic, req.payload, WinsizeRequest)
        job = self._lookup(req, size.id)
        if not isinstance(job.impl, ShellRun):
            raise RPCError(errno.ENOSYS, f"job {JobID(job.id)}: has no pty")
        job.impl.winsize(req, size.rows, size.cols)

    @method("override")
    def override(self, req: Request) -> None:
        override = decode(req.topic, req.payload, OverrideRequest)
        job = self._lookup(req, override.jobid)
        if not isinstance(job.impl, SimulatedRun):
            raise RPCError(errno.EINVAL, "Job not in exec override mode")
        job.impl.override(override.event, override.status)
        req.respond({})
