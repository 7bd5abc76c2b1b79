"""exec-node: job-exec's agent on a broker of rank > 0, where the rank's shells run.

job-exec (at rank 0) plans every shell of a job; the records for rank r's shells
go to rank r's launcher as ``exec-node.send`` (addressed to rank r, the records
as raw bytes, no response), which this service writes to its launcher as they
are. What the launcher and its shells send back goes up as ``job-exec.records``
(to rank 0, a byte saying whether the shells sent them, then the records), which
job-exec reads as it reads its own launcher's. The records carry each shell's
key (job id and rank), so nothing here knows a job.

The launcher is this rank's (``<rundir>/exec``: its listening socket, journal and
spool), started at once or taken over from a broker of this rank that died.
Its tasks are told this broker's URI (``shellwire.RANK_URI``), so that commands in
a job talk to the broker of their node. A launcher that dies is started again on
the same listening socket, and its shells rejoin it, as job-exec does for its own.

Whenever this rank (re)joins, job-exec says which jobs it runs with a shell here
(``exec-node.keep``); every other shell this rank still runs is killed and let go
of. So a shell whose job failed while its rank was cut off (the kill could not
reach it), or whose job a restarted rank 0 could not take over, never goes on
beside a job given its cores. The shells running are those sent SPAWN (or SPAWN_AS,
a guest's) less those
that said EXITED, and those a launcher taken over still had.

A guest's shell here is told where to meet the next exec-node (RENDEZVOUS, in this
rank's ``exec/guests``: ``pflux.exec.rendezvous``), as rank 0's guests are told where
to meet a restarted job-exec. Taking the launcher over again ends its socket too:
exec-node then listens for it at its rendezvous (``keep`` names the guests' jobs and
their userids, which their shells must run as), until the rejoin timeout, holding what
job-exec sends it (its RESUME) until it has met, then sending that on the socket it
met with.

So that a restarted rank 0 can tell a shell this rank was never asked for from
one that ran and ended, exec-node remembers every shell it was sent SPAWN for
until job-exec says the job's end is journalled (``exec-node.forget``), and
answers ``keep`` with the listed jobs it was never asked for since it started
and its ``incarnation``, a random number of its own: job-exec journals that
number with each shell it asks this rank for, so a restart believes "never
asked" only from the exec-node that was there when the shell was asked for.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import secrets
import subprocess
from pathlib import Path
from typing import Final

from pflux.broker import private
from pflux.broker.router import Broker, Request, Service, method
from pflux.errors import RPCError
from pflux.exec.config import imp_socket, rejoin_timeout
from pflux.exec.link import LauncherLink, Survivors
from pflux.exec.rendezvous import guests_shells
from pflux.protocol import shellwire as wire
from pflux.protocol.decode import decode
from pflux.protocol.exec import ForgetRequest, KeepRequest, KeepResponse
from pflux.protocol.shellwire import IMP_SOCKET, RANK_URI, REJOIN_TIMEOUT
from pflux.spec.fluid import JobID

__all__ = ["ExecNodeService"]

log = logging.getLogger("pflux.exec-node")

RESTART_DELAY: Final = 0.5  # seconds before a launcher that died is started again
FROM_SHELLS: Final = b"s"  # job-exec.records' first byte: the shells sent these
FROM_LAUNCHER: Final = b"l"  # ... the launcher did


class ExecNodeService(Service):
    """The launcher of this rank, and the records to and from it (module docstring)."""

    name = "exec-node"

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker)
        self.exec_dir = os.path.join(broker.attrs["rundir"], "exec")
        self.rejoin_timeout = rejoin_timeout(broker)
        env = {RANK_URI: broker.attrs["uri"], REJOIN_TIMEOUT: repr(self.rejoin_timeout)}
        imp = imp_socket(broker)  # guests' shells run through this rank's own helper
        if imp is not None:
            env[IMP_SOCKET] = imp
        self.launcher = LauncherLink(
            broker,
            self.exec_dir,
            self._up,
            self._lost,
            env=env,
            rejoin_timeout=self.rejoin_timeout,
            on_rejoined=self._guest_met,
        )
        self.stopping = False
        self._restart: asyncio.TimerHandle | None = None
        # guests' shells listened for at their rendezvous: the records held for each
        self._meeting: dict[int, bytearray] = {}
        self._meeting_ends: asyncio.TimerHandle | None = None
        self.live: set[int] = set()  # the keys of the shells running here
        self.asked: set[int] = set()  # the jobs sent SPAWN here, until job-exec says forget
        self.incarnation = secrets.randbits(52) + 1  # this exec-node's, never 0 (none known)
        self._detached: list[subprocess.Popen[bytes]] = []  # our launcher, let go of once

    async def start(self) -> None:
        private.directory(Path(self.exec_dir))
        survivors = await self.launcher.attach(self.broker.loop)
        if survivors is not None:
            log.info("took over this rank's job shell launcher (pid %s)", self.launcher.pid)
            self.live.update(survivors.running)  # job-exec's keep, as this rank joins, sorts them
        else:
            self.launcher.start(self.broker.loop)

    async def stop(self) -> None:
        self.stopping = True
        if self._restart is not None:
            self._restart.cancel()
        if self._meeting_ends is not None:
            self._meeting_ends.cancel()
        await self.launcher.stop()
        for proc in self._detached:  # the launcher taken over again: its end, to reap
            await asyncio.to_thread(proc.wait)

    @method("send")
    def send(self, req: Request) -> None:
        """Records from job-exec for this rank's launcher and shells."""
        req.require_internal("job-exec")
        if not isinstance(req.payload, bytes):
            raise RPCError(errno.EPROTO, "exec-node.send: the payload must be records (bytes)")
        for kind, key, _ in wire.split(req.payload)[0]:
            if kind in (wire.SPAWN, wire.SPAWN_AS):
                self.live.add(key)
                self.asked.add(wire.key_job(key))
        self.launcher.send(self._hold(req.payload) if self._meeting else req.payload)

    @method("keep")
    async def keep(self, req: Request) -> None:
        """The jobs job-exec runs with a shell here (this rank has just joined): end every
        other shell, and answer which of those jobs' shells run, and which died unheard.

        With shells running, the launcher is let go of and taken over again, as a new
        job-exec takes over a launcher: its shells then send on a new socket, so that
        nothing they sent before job-exec resumes them is read after."""
        req.require_internal("job-exec")
        request = decode(req.topic, req.payload, KeepRequest)
        jobs = set(request.jobs)
        died: dict[int, int] = {}
        self._meeting.clear()  # held for an earlier job-exec: this one says what it wants
        self._stop_meeting()
        if self.live:
            survivors = await self._take_over_again()
            if survivors is not None:
                died = {wire.key_job(key): status for key, status in survivors.died.items()}
        for key in sorted(self.live):
            jobid = wire.key_job(key)
            if jobid not in jobs:
                log.warning("job %s: job-exec does not run its shell here: killed", JobID(jobid))
                self.launcher.send(wire.let_go(key))
                self.live.discard(key)
        await self._meet_guests(dict(request.guests))
        running = sorted({wire.key_job(key) for key in self.live})
        died_listed = [(j, s) for j, s in died.items() if j in jobs]
        unasked = sorted(jobs - self.asked)
        req.respond(KeepResponse(running, died_listed, self.incarnation, unasked))

    @method("forget")
    def forget(self, req: Request) -> None:
        """job-exec has journalled these jobs' end: no restart will ask about them."""
        req.require_internal("job-exec")
        self.asked.difference_update(decode(req.topic, req.payload, ForgetRequest).jobs)

    async def _take_over_again(self) -> Survivors | None:
        """Let go of the launcher and attach to it again (a new socket for its shells)."""
        proc = self.launcher.detach()
        if proc is not None:
            self._detached.append(proc)
        survivors = await self.launcher.attach(self.broker.loop)
        if survivors is None:  # it had no shell left, and exited: start another
            self.live.clear()
            self.launcher.start(self.broker.loop)
            return None
        self.live = set(survivors.running)
        return survivors

    async def _meet_guests(self, guests: dict[int, int]) -> None:
        """Listen for the shells running here of ``guests`` (job id to userid) at their
        rendezvous, for the rejoin timeout (then they have given up); what job-exec sends
        one is held until it has met this exec-node (``_guest_met``)."""
        keys = {key for key in self.live if wire.key_job(key) in guests}
        if not keys:
            return
        shells = await asyncio.to_thread(guests_shells, self.launcher.journal, keys)
        met = {key: (entry, guests[wire.key_job(key)]) for key, entry in shells.items()}
        if not met or self.stopping:
            return
        self._meeting = {key: bytearray() for key in met}
        self.launcher.meet(self.broker.loop, met)
        names = ", ".join(wire.key_name(key) for key in sorted(met))
        log.info("listening for guests' job shells at their rendezvous: %s", names)
        self._meeting_ends = self.broker.loop.call_later(self.rejoin_timeout, self._stop_meeting)

    def _hold(self, data: bytes) -> bytes:
        """Keep the records for the guests' shells not met yet until they are; the rest."""
        rest = bytearray()
        for kind, key, payload in wire.split(data)[0]:
            held = self._meeting.get(key)
            (rest if held is None else held).extend(wire.record(kind, key, payload))
        return bytes(rest)

    def _guest_met(self, key: int) -> None:
        """A guest's shell has met this exec-node, on a socket of its own: what job-exec
        sent it meanwhile (its RESUME) goes on that socket."""
        log.info("job %s: its guest's shell rejoined", JobID(wire.key_job(key)))
        held = self._meeting.pop(key, None)
        if held:
            self.launcher.send(bytes(held))

    def _stop_meeting(self) -> None:
        """Listen for no guest's shell any more; what was held for those not met goes to
        the launcher (which ends a guest's shell it is told to)."""
        if self._meeting_ends is not None:
            self._meeting_ends.cancel()
            self._meeting_ends = None
        self.launcher.forget_meetings()
        held = b"".join(self._meeting.values())
        self._meeting.clear()
        if held:
            self.launcher.send(held)

    def _up(self, records: list[wire.Record], from_shell: bool) -> None:
        for kind, key, payload in records:
            if kind == wire.EXITED:
                self.live.discard(key)
                held = self._meeting.pop(key, None)
                if held:  # a guest's shell that gave up, or died, before it met this one
                    self.launcher.send(bytes(held))
            elif kind == wire.LIVE and not from_shell:  # shells of a launcher that died
                self.live.update(Survivors(payload).running)
        data = b"".join(wire.record(kind, key, payload) for kind, key, payload in records)
        first = FROM_SHELLS if from_shell else FROM_LAUNCHER
        self.broker.send("job-exec.records", first + data, nodeid=0)

    def _lost(self) -> None:
        if self.stopping:
            return
        log.error("this rank's job shell launcher died; starting another")
        self._restart = self.broker.loop.call_later(RESTART_DELAY, self._relaunch)

    def _relaunch(self) -> None:
        self._restart = None
        if not self.stopping:
            self.launcher.start(self.broker.loop)
