"""The job-manager service: jobs move through RFC 21's states by events it posts.

The pure parts are RFC 21's transition table, shared with every service
(``pflux.spec.states``), and beside this file the job record (job.py) and the
choice of what to do next (actions.py). This module holds the RPC methods, each
decoding its request and handing the work to the module of its concern, and the
wiring between those modules: the submit path (submit.py), moving jobs on and
what a commit sets off (progress.py), event posting (events.py), the scheduler
protocol (alloc.py), the execution protocol (start.py), the journal
(journal.py), restart (restart.py) and plugins.
"""

from __future__ import annotations

import asyncio
import errno
import logging
from functools import partial
from typing import Any, ClassVar

from pflux.broker.config import Declared
from pflux.broker.requests import check_urgency
from pflux.broker.router import Broker, Request, Service, method
from pflux.errors import RPCError
from pflux.manager import (
    checkpoint,
    interventions,
    progress,
    purge,
    restart,
    snapshot,
    submit,
)
from pflux.manager.actions import INTERNAL_STATES
from pflux.manager.alloc import AllocClient
from pflux.manager.events import EventPoster
from pflux.manager.history import History
from pflux.manager.job import Ended, Job
from pflux.manager.journal import Journal
from pflux.manager.plugins import Plugin, perilog
from pflux.manager.plugins.builtin import builtin
from pflux.manager.purge import Retention
from pflux.manager.queues import Queues
from pflux.manager.quiescent import Quiescence
from pflux.manager.start import StartClient
from pflux.manager.update import check_updates, update_job
from pflux.manager.wait import ANY, Waits, result_of
from pflux.protocol.decode import decode
from pflux.protocol.manager import (
    Empty,
    HistoryRequest,
    JobIdRequest,
    JobKillRequest,
    MemoRequest,
    PurgeIdRequest,
    PurgeRequest,
    QueueEnableRequest,
    QueueStartRequest,
    QueueStatusRequest,
    RaiseAllRequest,
    RaiseRequest,
    SetFlagsRequest,
    SubmitBatch,
    SubmitReply,
    UpdateRequest,
    UrgencyRequest,
)
from pflux.spec.fluid import JobID
from pflux.spec.queues import CONFIG_KEYS as QUEUE_KEYS
from pflux.spec.queues import QueueConfig
from pflux.spec.states import State

log = logging.getLogger("pflux.job-manager")

# as plain names, quick to compare by identity (``post``)
_DEPEND, _PRIORITY, _CLEANUP = INTERNAL_STATES
_INACTIVE_BIT = int(State.INACTIVE)


class JobManager(Service):
    """Owns every job's state; the only writer of job eventlogs."""

    name = "job-manager"
    config_keys: ClassVar[Declared] = {
        "job-manager": purge.KEYS,
        "job-manager.prolog": perilog.KEYS,
        "job-manager.epilog": perilog.KEYS,
        "job-manager.perilog": ("log-ignore",),
        **QUEUE_KEYS,
    }

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker)
        self.owner = broker.owner
        self.jobs: dict[int, Job] = {}  # active (and NEW) jobs
        self.ended: dict[int, Ended] = {}  # inactive jobs, kept small
        self.history = History()  # each user's job ids, for `pflux job last`
        self.by_state: dict[State, dict[Job, None]] = {
            state: {} for state in (State(1 << i) for i in range(7))
        }
        # a mask's dicts of by_state (never replaced), for ``count``, which every
        # commit asks while anyone waits for a drain or an idle queue
        self._counted: dict[int, tuple[dict[Job, None], ...]] = {}
        self.watchers: dict[str, list[Plugin]] = {}  # event name -> plugins that want it
        self.events = EventPoster(
            broker,
            partial(progress.on_transition, self),
            partial(progress.on_commit, self),
            self.watchers,
        )
        self.alloc: AllocClient = AllocClient(self)
        self.exec: StartClient = StartClient(self)
        self.quiescence: Quiescence = Quiescence(self)
        self.journal: Journal = Journal(self)
        self.waits = Waits()
        # a bad [job-manager] limit stops start-up
        self.retention = Retention(broker.loop, self.ended, self.purge_jobs, broker.config)
        self.plugins: list[Plugin] = []
        self.schemes: dict[str, Plugin] = {}
        self.queue_config = QueueConfig.from_config(broker.config)
        self.queues = Queues(self.queue_config.queues)
        self.max_jobid = 0
        self.replay_mark = checkpoint.ReplayMark()
        self.drains: list[Request] = []
        self.idles: list[Request] = []
        self.depending: set[Job] = set()  # jobs whose dependencies are being added
        self.free_hooks = False  # a plugin may hold resources back (an epilog)
        for plugin in builtin(self, broker.config):
            self.add_plugin(plugin)

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self.broker.loop

    def add_plugin(self, plugin: Plugin) -> None:
        self.plugins.append(plugin)
        if type(plugin).before_free is not Plugin.before_free:
            self.free_hooks = True
        for scheme in plugin.schemes:
            self.schemes[scheme] = plugin
        for name in plugin.events:
            self.watchers.setdefault(name, []).append(plugin)

    # --- life cycle -------------------------------------------------------------------

    async def start(self) -> None:
        await restart.restore(self)

    async def stop(self) -> None:
        self.retention.stop()
        self.events.cancel_retry()  # events not stored were never acted on or answered
        for plugin in self.plugins:
            await plugin.stop()
        if self.broker.attrs.get("state-dir-temporary") != "1":  # else nothing restarts
            await snapshot.save(self.broker, self.events, self.ended, self.waits.inactive)

    # --- counting and lookup --------------------------------------------------------------

    def count(self, mask: State) -> int:
        bits = int(mask)  # plain ints: enum.Flag arithmetic is slow
        dicts = self._counted.get(bits)
        if dicts is None:
            dicts = tuple(jobs for state, jobs in self.by_state.items() if state & bits)
            self._counted[bits] = dicts
        count = sum(map(len, dicts))
        return count + (len(self.ended) if bits & _INACTIVE_BIT else 0)

    def lookup(self, jobid: int) -> Job | Ended | None:
        return self.jobs.get(jobid) or self.ended.get(jobid)

    def _job_for(self, req: Request, jobid: int) -> Job | Ended:
        """The job a request names, if the requester may act on it."""
        job = self.lookup(jobid)
        if job is None:
            raise RPCError(errno.ENOENT, f"job {JobID(jobid)} not found")
        if not req.owner and req.userid != job.userid:
            raise RPCError(errno.EPERM, f"job {JobID(jobid)}: permission denied")
        return job

    def _active_job(self, req: Request, jobid: int) -> Job:
        """As ``_job_for``, for requests that need the job still active."""
        job = self._job_for(req, jobid)
        if not isinstance(job, Job):
            raise RPCError(errno.EINVAL, f"job {JobID(jobid)} is inactive")
        return job

    # --- posting and acting -----------------------------------------------------------

    def post(self, job: Job, name: str, context: dict[str, Any] | None = None) -> None:
        """Post an event to ``job`` and do at once whatever needs no one outside.

        Only in ``INTERNAL_STATES`` can such an action be due; in any other state
        everything due waits for the commit, and asking ``next_actions`` is wasted.
        """
        if self.events.post(job, name, context):
            state = job.state
            if state is _DEPEND or state is _PRIORITY or state is _CLEANUP:
                self.advance(job)

    def raise_exception(
        self,
        job: Job,
        etype: str,
        note: str,
        severity: int = 0,
        userid: int | None = None,
    ) -> None:
        context: dict[str, Any] = {"type": etype, "severity": severity}
        if userid is not None and userid != self.owner:
            context["userid"] = userid
        context["note"] = note
        self.post(job, "exception", context)

    def annotate(self, job: Job, annotations: dict[str, Any]) -> None:
        self.journal.annotations(job, annotations)

    def advance(self, job: Job) -> None:
        """Perform the actions due for ``job`` (progress.py)."""
        progress.advance(self, job)

    def advance_state(self, state: State) -> None:
        for job in list(self.by_state[state]):
            progress.advance(self, job)

    # --- dependencies, for plugins (RFC 26 event semantics) -------------------------------

    def dependency_add(self, job: Job, description: str) -> bool:
        """Add a dependency; False (and nothing posted) if it is already outstanding."""
        if description in job.dependencies:
            return False
        if description in job.satisfied:
            raise RPCError(errno.EEXIST, f"dependency {description} was already satisfied")
        self.post(job, "dependency-add", {"description": description})
        return True

    def dependency_remove(self, job: Job, description: str) -> None:
        if description in job.dependencies:
            self.post(job, "dependency-remove", {"description": description})

    # --- submission (from job-ingest) ----------------------------------------------------

    @method("submit")
    def submit(self, req: Request) -> None:
        """Take jobs that job-ingest has committed; refuse those a plugin rejects."""
        req.require_internal("job-ingest")
        batch = decode("job-manager.submit", req.payload, SubmitBatch)
        req.payload = None  # a long jobspec's text: parsed once here, then let go
        errors = submit.take(self, batch)
        self.events.after_commit(lambda: req.respond(SubmitReply(errors)))

    # --- job requests -------------------------------------------------------------------

    @method("raise", guest=True)
    def raise_(self, req: Request) -> None:
        request = decode("job-manager.raise", req.payload, RaiseRequest)
        job = self._active_job(req, request.id)
        self.raise_exception(job, request.type, request.note, request.severity, req.userid)
        self.events.after_commit(lambda: req.respond({}))

    @method("raiseall", guest=True)
    def raiseall(self, req: Request) -> None:
        request = decode("job-manager.raiseall", req.payload, RaiseAllRequest)
        interventions.raise_all(self, req, request)

    @method("kill", guest=True)
    async def kill(self, req: Request) -> None:
        request = decode("job-manager.kill", req.payload, JobKillRequest)
        await interventions.kill(self, req, self._active_job(req, request.id), request.signum)

    @method("urgency", guest=True)
    def urgency(self, req: Request) -> None:
        request = decode("job-manager.urgency", req.payload, UrgencyRequest)
        urgency = check_urgency(request.urgency, owner=req.owner)
        interventions.set_urgency(self, req, self._active_job(req, request.id), urgency)

    @method("memo", guest=True)
    def memo(self, req: Request) -> None:
        """A memo event, or annotations alone (``interventions.memo``)."""
        interventions.memo(self, req, decode("job-manager.memo", req.payload, MemoRequest))

    @method("set-flags", guest=True)
    def set_flags(self, req: Request) -> None:
        request = decode("job-manager.set-flags", req.payload, SetFlagsRequest)
        job = self._active_job(req, request.id)
        self.post(job, "set-flags", {"flags": request.flags})
        self.events.after_commit(lambda: req.respond({}))

    @method("update", guest=True)
    async def update(self, req: Request) -> None:
        """Update a job's jobspec (see ``update.py``): a pending job's, or a running job's
        duration, which moves its expiration (``resource-update``)."""
        request = decode("job-manager.update", req.payload, UpdateRequest)
        updates = check_updates(request.updates)
        job = self._active_job(req, request.id)
        await update_job(self, req, job, updates)

    @method("wait")
    def wait(self, req: Request) -> None:
        """flux's wait: a waitable job's result, taken once (``wait.py``)."""
        jobid = decode("job-manager.wait", req.payload, JobIdRequest).id
        self.waits.request(req, jobid, None if jobid == ANY else self.jobs.get(jobid))

    @method("result", guest=True)
    def result(self, req: Request) -> None:
        """Any job's result once it is inactive, as often as asked (``pflux.api``'s wait)."""
        job = self._job_for(req, decode("job-manager.result", req.payload, JobIdRequest).id)
        if job.state is not State.INACTIVE:
            assert isinstance(job, Job)
            job.waiters.append(req)
            return
        # inactive, perhaps not yet durably: answer once everything posted so far is
        reply = result_of(job.id, job)
        self.events.after_commit(lambda: req.respond(reply))

    @method("history.get", guest=True)
    def history_get(self, req: Request) -> None:
        """The requester's job ids, most recent first, sliced (flux-core's history plugin)."""
        text = decode("job-manager.history.get", req.payload, HistoryRequest).slice
        req.respond({"jobs": self.history.get(req.userid, text)})

    # --- the queues (queues.py) ---------------------------------------------------------

    @method("queue-list", guest=True)
    def queue_list(self, req: Request) -> None:
        """The named queues (flux-core's ``{queues: [NAME]}``); none for the anonymous one."""
        decode("job-manager.queue-list", _or_empty(req.payload), Empty)
        req.respond({"queues": list(self.queues.named)})

    @method("queue-status", guest=True)
    def queue_status(self, req: Request) -> None:
        name = decode("job-manager.queue-status", _or_empty(req.payload), QueueStatusRequest).name
        req.respond(self.queues.lookup(name).status())

    @method("queue-enable")
    def queue_enable(self, req: Request) -> None:
        request = decode("job-manager.queue-enable", req.payload, QueueEnableRequest)
        self._require_owner(req)
        for queue in self.queues.targets(request.name, request.all):
            queue.set_enable(request.enable, request.reason)
        self._checkpoint(req)

    @method("queue-start")
    def queue_start(self, req: Request) -> None:
        """Start or stop scheduling a queue's jobs; ``nocheckpoint`` (flux-core's, for a
        shutdown): a stop that is not stored, so a restart finds the queue as before it."""
        request = decode("job-manager.queue-start", req.payload, QueueStartRequest)
        self._require_owner(req)
        for queue in self.queues.targets(request.name, request.all):
            queue.set_start(request.start, request.reason, request.nocheckpoint)
        if request.nocheckpoint and not request.start:
            req.respond({})
        else:
            self._checkpoint(req)
        self.advance_state(State.SCHED)

    def _checkpoint(self, req: Request) -> None:
        """Store the queues' state with this turn's events; answer once it is durable."""
        mark = self.replay_mark.value
        self.events.add_ops(checkpoint.ops(self.queues.stored(), self.max_jobid, mark))
        self.events.after_commit(lambda: req.respond({}))

    @method("alloc-query")
    def alloc_query(self, req: Request) -> None:
        """How the queue stands with the scheduler (``pflux queue status -v``)."""
        decode("job-manager.alloc-query", _or_empty(req.payload), Empty)
        req.respond(
            {
                "queue_length": len(self.alloc.waiting),
                "alloc_pending": self.alloc.outstanding,
                "running": self.count(State.RUN),
            }
        )

    @method("drain")
    def drain(self, req: Request) -> None:
        decode("job-manager.drain", req.payload, Empty)
        self.drains.append(req)
        progress.check_waiters(self)

    @method("idle")
    def idle(self, req: Request) -> None:
        decode("job-manager.idle", req.payload, Empty)
        self.idles.append(req)
        progress.check_waiters(self)

    def _require_owner(self, req: Request, what: str = "control the queue") -> None:
        if not req.owner:
            raise RPCError(errno.EPERM, f"only the instance owner may {what}")

    # --- retention (purge.py) --------------------------------------------------------------

    @method("purge")
    def purge_request(self, req: Request) -> None:
        request = decode("job-manager.purge", req.payload, PurgeRequest)
        self._require_owner(req, "purge jobs")
        purge.purge_request(self, self.retention, req, request)

    @method("purge-id")
    def purge_id_request(self, req: Request) -> None:
        request = decode("job-manager.purge-id", req.payload, PurgeIdRequest)
        self._require_owner(req, "purge jobs")
        purge.purge_id_request(self, req, request)

    def purge_jobs(self, jobs: list[Ended]) -> None:
        """Forget inactive ``jobs`` now, and remove them with this turn's events (purge.py)."""
        purge.remove(self, jobs)

    # --- other services -----------------------------------------------------------------

    @method("getinfo")
    def getinfo(self, req: Request) -> None:
        """The largest job id ever seen, so job-ingest never issues one again."""
        decode("job-manager.getinfo", req.payload, Empty)
        req.respond({"max_jobid": self.max_jobid})

    @method("events-journal")
    def events_journal(self, req: Request) -> None:
        self.journal.subscribe(req)

    @method("journal-sync")
    def journal_sync(self, req: Request) -> None:
        self.journal.sync(req)

    @method("journal-history")
    async def journal_history(self, req: Request) -> None:
        await self.journal.history(req)

    @method("exec-hello")
    def exec_hello(self, req: Request) -> None:
        self.exec.hello(req)

    @method("running")
    def running(self, req: Request) -> None:
        """The jobs in RUN and whether each started: what a starting job-exec may take over."""
        decode("job-manager.running", req.payload, Empty)
        if not req.owner:
            raise RPCError(errno.EPERM, "running: only the instance owner may ask")
        jobs = [[job.id, job.started] for job in self.jobs.values() if job.state is State.RUN]
        req.respond({"jobs": jobs})

    @method("quiescent")
    def quiescent(self, req: Request) -> None:
        """Answer once nothing is in flight (a simulation's step, see quiescent.py)."""
        decode("job-manager.quiescent", req.payload, Empty)
        if not req.owner:
            raise RPCError(errno.EPERM, "quiescent: only the instance owner may ask")
        self.quiescence.request(req)

    @method("sched-hello")
    def sched_hello(self, req: Request) -> None:
        req.require_internal("the scheduler")
        decode("job-manager.sched-hello", req.payload, Empty)
        self.alloc.hello(req)

    @method("sched-ready")
    def sched_ready(self, req: Request) -> None:
        req.require_internal("the scheduler")
        self.alloc.sched_ready(req)


def _or_empty(payload: Any) -> Any:
    """A request with no payload is one with ``{}`` (flux-queue sends some so)."""
    return {} if payload is None else payload
