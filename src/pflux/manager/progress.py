"""Moving jobs on: the actions due for a job taken, a state change's bookkeeping,
and what each commit sets off.

``advance`` asks ``next_actions`` (actions.py) what is due: an internal action
(depend, priority, clean, adding dependencies) is taken at once, one that
reaches another service waits for the job's events to be committed. A commit
(events.py) publishes its entries to the journal, runs the callbacks that
waited for it (responses), tells the plugins watching its events, advances its
jobs and answers ``drain`` and ``idle`` once their condition holds. A job's
``clean`` event is committed with its record (``inactive.py``), and, once for
many jobs ended, with ``replay_from`` (``store_mark``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pflux.manager import checkpoint, inactive
from pflux.manager.actions import INTERNAL_STATES, Action, next_actions
from pflux.manager.job import Ended
from pflux.manager.submit import run_dependencies
from pflux.manager.wait import result_of
from pflux.spec.states import INACTIVE, SCHED, State, priority

if TYPE_CHECKING:
    from pflux.broker.router import Request
    from pflux.manager.events import Batch
    from pflux.manager.hosts import ProgressHost
    from pflux.manager.job import Job

# as plain names, quick to compare by identity
DEPEND, PRIORITY, CLEANUP = INTERNAL_STATES
_FREE = Action.FREE
# the masks ``check_waiters`` counts, made once: enum.Flag arithmetic is slow
_UNFINISHED = State.ACTIVE | State.NEW
_WAITING = State.PENDING | State.NEW


def advance(host: ProgressHost, job: Job) -> None:
    """Perform the actions due for ``job``; those reaching outside wait for its commit."""
    if job in host.depending:
        return
    alloc = host.alloc
    actions = next_actions(
        job,
        sched_ready=alloc.ready,
        exec_ready=host.exec.ready,
        queue_started=host.queues.started(job.jobspec),
    )
    uncommitted = host.events.uncommitted(job)
    for action in actions:
        if action in _INTERNAL:
            _INTERNAL[action](host, job)
        elif not uncommitted or (action is _FREE and alloc.ready and not host.free_hooks):
            # free is posted at once and sent once durable (AllocClient.free): with
            # no epilog to start first, it joins the batch of the job's release (once
            # the scheduler has said hello: until then, a job holding resources is one
            # it must be told of)
            _EXTERNAL[action](host, job)


def on_transition(host: ProgressHost, job: Job, old: State) -> None:
    """``job`` left state ``old``: the tables follow; an end is acted on once durable."""
    del host.by_state[old][job]
    if old is SCHED:
        host.alloc.forget(job)
    if job.state is INACTIVE:
        if job.history[-1] == "clean":  # not invalidated: that job's directory is removed
            host.events.put(inactive.put(job, job.flags))  # with the clean event
            if host.replay_mark.due(len(host.jobs)):
                store_mark(host)
        waiters, job.waiters = job.waiters, []
        host.events.after_commit(lambda: _inactive(host, job, waiters))
    else:
        host.by_state[job.state][job] = None


def store_mark(host: ProgressHost) -> None:
    """Store ``replay_from`` (checkpoint.py) again with this turn's events: the smallest
    active job's id (a job ending this turn still counts as active)."""
    mark = checkpoint.ReplayMark.of(host.jobs, host.max_jobid)
    host.replay_mark.value = mark
    host.events.add_ops(checkpoint.ops(host.queues.stored(), host.max_jobid, mark))


def _inactive(host: ProgressHost, job: Job, waiters: list[Request]) -> None:
    """The job's end is durable: answer its waiters and keep only its outcome."""
    reply = result_of(job.id, job)
    for req in waiters:
        req.respond(reply)
    if host.jobs.pop(job.id, None) is not None:  # an invalidated job is gone entirely
        ended = host.ended[job.id] = Ended.from_job(job)
        host.waits.ended(job)
        host.retention.add(ended)


def on_commit(host: ProgressHost, batch: Batch) -> None:
    """``batch``'s events are durable: tell whoever waited for them."""
    host.journal.publish(batch.entries)
    for callback in batch.callbacks:
        callback()
    watchers = host.watchers
    for jobid, event in batch.watched:
        job = host.lookup(jobid)  # an Ended one, once inactive
        if job is not None:
            for plugin in watchers.get(event.name, ()):
                plugin.event(job, event)
    for job in batch.jobs:
        if job.state is not INACTIVE:
            advance(host, job)
    check_waiters(host)


def check_waiters(host: ProgressHost) -> None:
    """Answer ``drain`` once no job is active, ``idle`` once none runs."""
    if host.drains and not host.count(_UNFINISHED):
        for req in host.drains:
            req.respond({})
        host.drains.clear()
    if host.idles and not host.count(State.RUNNING):
        pending = host.count(_WAITING)
        for req in host.idles:
            req.respond({"pending": pending})
        host.idles.clear()


def _free(host: ProgressHost, job: Job) -> None:
    if not any(plugin.before_free(job) for plugin in host.plugins):
        host.alloc.free(job)


def _post_priority(host: ProgressHost, job: Job) -> None:
    host.post(job, "priority", {"priority": priority(job.urgency)})
    if job.alloc_pending:
        host.alloc.prioritize([job])


_ActionFn = Callable[["ProgressHost", "Job"], None]

_INTERNAL: dict[Action, _ActionFn] = {
    Action.RUN_DEPENDENCIES: run_dependencies,
    Action.POST_DEPEND: lambda host, job: host.post(job, "depend"),
    Action.POST_PRIORITY: _post_priority,
    Action.POST_CLEAN: lambda host, job: host.post(job, "clean"),
}
_EXTERNAL: dict[Action, _ActionFn] = {
    Action.ALLOC: lambda host, job: host.alloc.alloc(job),
    Action.CANCEL_ALLOC: lambda host, job: host.alloc.cancel(job),
    Action.START: lambda host, job: host.exec.start(job),
    Action.KILL: lambda host, job: host.exec.exception(job),
    Action.FREE: _free,
}
