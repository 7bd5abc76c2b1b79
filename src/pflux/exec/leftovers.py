"""What a starting job-exec finds of the jobs an earlier one ran: shells, spools, deaths.

When the broker dies, the launcher and the job shells go on (see
``pflux.shell.launcher``). The next job-exec takes the launcher over, if it
still runs, and learns which jobs' shells run and which died unheard (LIVE).
If it died too, its shells wait for the next job-exec, which starts a
launcher for them to rejoin and hears which did (``ExecService._adopt_orphans``);
with no shell running, the journal says which shells died, and any shell it
still names is killed, as nobody could resume it. The shells that
ended while no job-exec was there left their records in spool files
(``exec/spool/<shell key>``). All of it is per shell (a job has one per rank
of its R), by the shell's key (``pflux.protocol.shellwire.shell_key``).

A shell the launcher had given the job (journalled ``P``) but that ended
before it recorded itself never started a task, nor did a job that job-exec
asked a launcher for (``Q``) and that no launcher gave a shell: its leftover
says so (``unstarted``), and the job may be started again
(``Takeover.resume``). A shell on another broker's rank that job-exec had asked
for (``Q`` with that rank's exec-node's incarnation) is ``asked``: that rank
says whether it ever had it. A
shell that runs but has not rejoined when job-exec goes on is ``late``: it is
resumed once it rejoins.

Each such shell is a ``Leftover``, kept for the ``start`` request the
job-manager sends for every job in RUN, which takes it over instead of
starting the job again. The job manager, started before job-exec, says which
jobs are in RUN (``job-manager.running``). A leftover whose job is not in RUN
any more (a fatal exception was raised on it while it ran, or it ended) will
get no start request: it is let go now, its shell killed and its spool
removed, so nothing of it runs on resources the job-manager frees.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pflux.errors import RPCError
from pflux.protocol import shelljournal as journal
from pflux.protocol import shellwire as wire
from pflux.protocol.kvs import NamespaceRemoveRequest
from pflux.protocol.manager import Empty
from pflux.protocol.shellwire import ALL_RECORDS, EXITED_SPOOLED, EXITED_UNSTARTED
from pflux.spec.fluid import JobID

if TYPE_CHECKING:
    from pflux.exec.host import LeftoverHost
    from pflux.exec.link import Survivors

__all__ = ["Leftover", "survey"]

log = logging.getLogger("pflux.job-exec")


@dataclass(slots=True)
class Leftover:
    """What is left of one shell of a job."""

    key: int  # the shell's key: its job id and rank
    running: bool = False  # its shell runs, under the launcher taken over
    died: int | None = None  # the wait status of a shell that died unheard
    spool: str | None = None  # the records its shell spooled
    unstarted: bool = False  # its shell was given the job, and ended before any task started
    late: bool = False  # its shell runs, but has not rejoined the launcher yet
    # on another rank, asked for: the incarnation of the exec-node asked (0: not known)
    asked: int | None = None

    def ended(self, exited: bytes, spool_dir: str) -> None:
        """Its shell ended before the job's start request came (the launcher's EXITED)."""
        self.running = self.late = False
        status = int(exited.split()[0])
        if status == EXITED_SPOOLED:
            self.spool = os.path.join(spool_dir, str(self.key))
        elif status == EXITED_UNSTARTED:
            self.unstarted = True
        elif status > 0:
            self.died = status


async def survey(
    service: LeftoverHost, survivors: Survivors | None
) -> tuple[dict[int, Leftover], set[int]]:
    """The leftovers of the shells of jobs in RUN, by shell key, the others' let go; and the
    jobs in RUN, any of which may have run, even to its end, with nothing left of it but
    its guest keys."""
    recorded, died = await asyncio.to_thread(journal.entries, service.journal)
    # another rank's, asked for (Q): that rank says what became of it
    asked = {key: e[1] for key, e in recorded.items() if not e[0] and _remote(service, key)}
    for key in asked:
        del recorded[key]
    # asked for (Q) and given to no shell (no P): none will be; this job-exec has asked none
    unstarted = {key for key, entry in recorded.items() if not entry[0]}
    if survivors is None:  # no shell runs: those given a job and gone never started it
        unstarted |= {key for key, entry in recorded.items() if entry[3]}
        found, lasting = await asyncio.to_thread(journal.kill_recorded, service.journal)
        if found:
            log.warning("killed job shells whose launcher had died: %s", found)
        if lasting:
            log.error("processes %s of earlier job shells survive SIGKILL", lasting)
        running: set[int] = set()
    else:
        running, died = survivors.running, survivors.died
    spools = await asyncio.to_thread(_spools, service.spool_dir)
    left = {
        key: Leftover(key, key in running, died.get(key), spools.get(key), key in unstarted)
        for key in running | died.keys() | spools.keys() | unstarted
    }
    left.update((key, Leftover(key, asked=incarnation)) for key, incarnation in asked.items())
    running_jobs = await _running_jobs(service)
    kept = {}
    for key, leftover in left.items():
        if wire.key_job(key) in running_jobs:
            kept[key] = leftover
        else:
            _let_go(service, leftover)
    if kept:
        jobs = sorted({wire.key_job(key) for key in kept})
        log.info("jobs to take over: %s", ", ".join(str(JobID(j)) for j in jobs))
    return kept, running_jobs


def _remote(service: LeftoverHost, key: int) -> bool:
    """Shell ``key`` is another broker's (not one of R's ranks this broker runs)."""
    return wire.key_rank(key) != 0 and service.broker.size > 1


def _spools(directory: str) -> dict[int, str]:
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return {}
    return {int(name): os.path.join(directory, name) for name in names if name.isdigit()}


async def _running_jobs(service: LeftoverHost) -> set[int]:
    """The jobs in RUN, which the job manager will send start requests for."""
    try:
        reply = await service.broker.call("job-manager.running", Empty())
    except RPCError as exc:  # no job manager: no start request will come
        log.error("job-manager.running: %s", exc)
        return set()
    return {jobid for jobid, _started in reply["jobs"]}


def _let_go(service: LeftoverHost, leftover: Leftover) -> None:
    key = leftover.key
    jobid, rank = wire.key_job(key), wire.key_rank(key)
    log.warning("job %s is not running any more: ending what is left of it", JobID(jobid))
    if leftover.running:
        service.send_launcher(rank, wire.record(wire.RESUME, key, b"%d" % ALL_RECORDS))
        service.send_launcher(rank, wire.record(wire.TERMINATE, key, b"%d" % signal.SIGKILL))
    if leftover.asked is not None:
        service.journal_ended([key])
    if leftover.spool is not None:
        try:
            os.unlink(leftover.spool)
        except OSError as exc:
            log.error("%s: %s", leftover.spool, exc)
    service.broker.send("kvs.namespace-remove", NamespaceRemoveRequest(f"job-{jobid}"))
