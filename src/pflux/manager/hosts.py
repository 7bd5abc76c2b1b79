"""What the job manager offers each of its parts: one narrow view per part.

The scheduler client (alloc.py), the execution client (start.py), the journal
(journal.py), quiescence (quiescent.py), jobspec updates (update.py), purging
(purge.py), the submit path (submit.py), moving jobs on (progress.py), a user's
interventions (interventions.py) and restart (restart.py) call back into the job manager;
each is given only the few methods and attributes it uses, as the plugins are
(``pflux.manager.plugins.Host``), so none of them imports the service and the
service's surface stays its own. The ``JobManager`` is passed as each view:
attribute access is as direct as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pflux.broker.router import Broker, Request
    from pflux.manager.checkpoint import ReplayMark
    from pflux.manager.events import EventPoster
    from pflux.manager.history import History
    from pflux.manager.job import Ended, Job
    from pflux.manager.plugins import Plugin
    from pflux.manager.queues import Queues
    from pflux.manager.wait import Waits
    from pflux.spec.queues import QueueConfig
    from pflux.spec.states import State


class Pokeable(Protocol):
    """Quiescence as its neighbours see it: told when something it depends on changed."""

    def poke(self) -> None: ...


class Releaser(Protocol):
    """The scheduler client as the execution client sees it."""

    def release(self, job: Job, ranks: str) -> None: ...


class Canceler(Protocol):
    """The scheduler client as an update sees it: a pending alloc asked again."""

    def cancel(self, job: Job) -> None: ...


class ExpirationSetter(Protocol):
    """The execution client as an update sees it: told a running job's new expiration."""

    def expiration(self, job: Job, expiration: float) -> None: ...


class ReadyFlag(Protocol):
    """The scheduler client as quiescence sees it."""

    ready: bool


class StartsInFlight(Protocol):
    """The execution client as quiescence sees it."""

    unstarted: dict[Job, None]


class SchedClient(Protocol):
    """The scheduler client as moving jobs on sees it: what each action asks of it."""

    ready: bool

    def alloc(self, job: Job) -> None: ...

    def cancel(self, job: Job) -> None: ...

    def free(self, job: Job) -> None: ...

    def forget(self, job: Job) -> None: ...

    def prioritize(self, jobs: list[Job]) -> None: ...


class ExecClient(Protocol):
    """The execution client as moving jobs on sees it."""

    @property
    def ready(self) -> bool: ...

    def start(self, job: Job) -> None: ...

    def exception(self, job: Job) -> None: ...


class Retained(Protocol):
    """Retention (purge.py) as a job's end and a restart see it."""

    def add(self, job: Ended) -> None: ...

    def rebuilt(self, ended: dict[int, Ended]) -> None: ...


class Publisher(Protocol):
    """The journal as a commit sees it: committed entries, to its subscribers."""

    def publish(self, entries: list[dict[str, Any]]) -> None: ...


class Poster(Protocol):
    """Posting events and moving jobs on: what both protocol clients need."""

    @property
    def broker(self) -> Broker: ...

    @property
    def events(self) -> EventPoster: ...

    @property
    def quiescence(self) -> Pokeable: ...

    def post(self, job: Job, name: str, context: dict[str, Any] | None = None) -> None: ...

    def raise_exception(
        self,
        job: Job,
        etype: str,
        note: str,
        severity: int = 0,
        userid: int | None = None,
    ) -> None: ...

    def advance(self, job: Job) -> None: ...

    def advance_state(self, state: State) -> None: ...


class AllocHost(Poster, Protocol):
    """What the scheduler client (RFC 27) uses of the job manager."""

    @property
    def jobs(self) -> dict[int, Job]: ...

    def count(self, mask: State) -> int: ...

    def annotate(self, job: Job, annotations: dict[str, Any]) -> None: ...


class StartHost(Poster, Protocol):
    """What the execution client (RFC 32) uses of the job manager."""

    @property
    def alloc(self) -> Releaser: ...


class JournalHost(Protocol):
    """What the journal uses of the job manager: its jobs and the KVS."""

    @property
    def broker(self) -> Broker: ...

    @property
    def jobs(self) -> dict[int, Job]: ...

    @property
    def ended(self) -> dict[int, Ended]: ...

    def lookup(self, jobid: int) -> Job | Ended | None: ...


class QuiescenceHost(Protocol):
    """What quiescence looks at: pending commits, the scheduler and starts in flight."""

    @property
    def broker(self) -> Broker: ...

    @property
    def events(self) -> EventPoster: ...

    @property
    def alloc(self) -> ReadyFlag: ...

    @property
    def exec(self) -> StartsInFlight: ...


class Killer(Protocol):
    """The execution client as a signal sees it: ``signum`` to a running job's tasks."""

    async def kill(self, job: Job, signum: int) -> None: ...


class InterventionHost(Poster, Protocol):
    """What a user's raise, kill, urgency and memo (interventions.py) use."""

    @property
    def by_state(self) -> dict[State, dict[Job, None]]: ...

    @property
    def exec(self) -> Killer: ...

    def lookup(self, jobid: int) -> Job | Ended | None: ...

    def annotate(self, job: Job, annotations: dict[str, Any]) -> None: ...


class UpdateHost(Poster, Protocol):
    """What a jobspec update (update.py) uses of the job manager."""

    @property
    def queues(self) -> Queues: ...

    @property
    def queue_config(self) -> QueueConfig: ...

    @property
    def alloc(self) -> Canceler: ...

    @property
    def exec(self) -> ExpirationSetter: ...


class PurgeHost(Protocol):
    """What purging (purge.py) uses of the job manager: the tables a purged job leaves."""

    @property
    def jobs(self) -> dict[int, Job]: ...

    @property
    def ended(self) -> dict[int, Ended]: ...

    @property
    def waits(self) -> Waits: ...

    @property
    def history(self) -> History: ...

    @property
    def queues(self) -> Queues: ...

    @property
    def max_jobid(self) -> int: ...

    @property
    def replay_mark(self) -> ReplayMark: ...

    @property
    def events(self) -> EventPoster: ...


class SubmitHost(Protocol):
    """What the submit path (submit.py) uses: the tables a job joins, and its checks."""

    jobs: dict[int, Job]
    by_state: dict[State, dict[Job, None]]
    max_jobid: int
    replay_mark: ReplayMark
    depending: set[Job]  # jobs whose dependencies are being added: not advanced meanwhile

    @property
    def events(self) -> EventPoster: ...

    @property
    def queues(self) -> Queues: ...

    @property
    def plugins(self) -> list[Plugin]: ...

    @property
    def schemes(self) -> dict[str, Plugin]: ...

    @property
    def waits(self) -> Waits: ...

    @property
    def history(self) -> History: ...

    def post(self, job: Job, name: str, context: dict[str, Any] | None = None) -> None: ...

    def advance(self, job: Job) -> None: ...


class RestartHost(SubmitHost, Protocol):
    """What restart (restart.py) fills in: every table, from the KVS."""

    ended: dict[int, Ended]

    @property
    def broker(self) -> Broker: ...

    @property
    def retention(self) -> Retained: ...


class ProgressHost(SubmitHost, Protocol):
    """What moving jobs on (progress.py) uses: the protocol clients and the waiters."""

    free_hooks: bool  # a plugin may hold resources back (an epilog)
    drains: list[Request]
    idles: list[Request]

    @property
    def ended(self) -> dict[int, Ended]: ...

    @property
    def alloc(self) -> SchedClient: ...

    @property
    def exec(self) -> ExecClient: ...

    @property
    def retention(self) -> Retained: ...

    @property
    def journal(self) -> Publisher: ...

    @property
    def watchers(self) -> dict[str, list[Plugin]]: ...

    def count(self, mask: State) -> int: ...

    def lookup(self, jobid: int) -> Job | Ended | None: ...
