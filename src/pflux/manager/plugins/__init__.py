"""Job-manager plugins: the hooks through which policy reaches the state machine.

A plugin sees a job at submit (``validate``, which may refuse it), when it
enters DEPEND (``depend``, which adds dependencies through the host), after
each committed event (``event``), before its resources are freed
(``before_free``), after a restart (``restarted``) and at shutdown (``stop``).
Dependency schemes (RFC 26) are plugins that name the ``schemes`` they
handle. Priority follows urgency by flux-core's default rule
(``pflux.spec.states.priority``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import asyncio

    from pflux.manager.job import Ended, Job
    from pflux.spec.eventlog import Event


class Host(Protocol):
    """What the job manager offers its plugins."""

    owner: int

    @property
    def loop(self) -> asyncio.AbstractEventLoop: ...

    def post(self, job: Job, name: str, context: dict[str, Any] | None = None) -> None: ...

    def raise_exception(self, job: Job, etype: str, note: str, severity: int = 0) -> None: ...

    def dependency_add(self, job: Job, description: str) -> bool: ...

    def dependency_remove(self, job: Job, description: str) -> None: ...

    def lookup(self, jobid: int) -> Job | Ended | None: ...


class Plugin:
    """Base class: every hook does nothing."""

    name = ""
    schemes: tuple[str, ...] = ()  # RFC 26 dependency schemes this plugin handles
    events: frozenset[str] = frozenset()  # the event names ``event`` is called for

    def __init__(self, host: Host) -> None:
        self.host = host

    def validate(self, job: Job) -> None:
        """Raise a PfluxError to refuse ``job`` at submit; its message reaches the user."""

    def validate_dependency(self, job: Job, dependency: dict[str, Any]) -> None:
        """Check one of ``job``'s dependencies of this plugin's schemes (raise to refuse)."""

    def depend(self, job: Job, dependency: dict[str, Any]) -> None:
        """``job`` entered DEPEND (or was found there at restart) with ``dependency``, of one
        of this plugin's schemes: add it (or nothing, if it is already satisfied)."""

    def event(self, job: Job | Ended, event: Event) -> None:
        """``event``, one of ``events``, was committed to ``job``'s eventlog (an inactive
        job is an ``Ended`` by then)."""

    def before_free(self, job: Job) -> bool:
        """``job``'s resources are about to go back; True to hold them (an epilog started)."""
        return False

    def restarted(self, job: Job) -> None:
        """The instance restarted with ``job`` active (replayed, flux-restart posted)."""

    async def stop(self) -> None:
        """The instance is stopping: end whatever the plugin runs (post nothing)."""
