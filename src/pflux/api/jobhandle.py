"""A future for one job: what ``Client.job`` and ``submit_job`` return.

As flux's ``submit_async`` future and ``concurrent.futures.Future``, it asks the
instance about its job and acts on it: ``status()``, ``done()``, ``result()``,
``cancel()``, ``events()``. It holds only the client and the id, so handles are
cheap and any number may refer to one job.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from pflux.spec.fluid import JobID

if TYPE_CHECKING:
    from pflux.api.replies import JobListing
    from pflux.api.submission import JobResult
    from pflux.spec.eventlog import Event
    from pflux.spec.states import State


class Jobs(Protocol):
    """What a JobHandle asks of its client (``Client``), so that neither module
    imports the other."""

    def job_info(self, jobid: int, attrs: Sequence[str] = ...) -> JobListing: ...
    def wait(self, jobid: int, timeout: float | None = ...) -> JobResult: ...
    def cancel(self, jobid: int, note: str = ...) -> None: ...
    def events(self, jobid: int, *, path: str = ..., follow: bool = ...) -> Iterator[Event]: ...
    def wait_event(
        self, jobid: int, name: str, *, match: Mapping[str, Any] | None = ..., path: str = ...
    ) -> Event: ...


class AsyncJobs(Protocol):
    """What an AsyncJobHandle asks of its client (``AsyncClient``)."""

    async def job_info(self, jobid: int, attrs: Sequence[str] = ...) -> JobListing: ...
    async def wait(self, jobid: int, timeout: float | None = ...) -> JobResult: ...
    async def cancel(self, jobid: int, note: str = ...) -> None: ...
    def events(
        self, jobid: int, *, path: str = ..., follow: bool = ...
    ) -> AsyncIterator[Event]: ...
    async def wait_event(
        self, jobid: int, name: str, *, match: Mapping[str, Any] | None = ..., path: str = ...
    ) -> Event: ...


def _state(job: JobListing) -> State:
    assert job.state is not None  # asked for
    return job.state


class JobHandle:
    """One job of a blocking Client."""

    __slots__ = ("client", "id")

    def __init__(self, client: Jobs, jobid: int) -> None:
        self.client = client
        self.id = JobID(jobid)

    def __repr__(self) -> str:
        return f"JobHandle({self.id})"

    def status(self) -> State:
        """The job's state now (``State.SCHED``, ``State.INACTIVE``, ...)."""
        return _state(self.client.job_info(self.id, ["state"]))

    def done(self) -> bool:
        """Whether the job is inactive: its result is there to take."""
        state = self.status()
        return state == state.INACTIVE

    def result(self, timeout: float | None = None) -> JobResult:
        """Wait until the job is inactive and return how it ended; RPCTimeout after
        ``timeout`` seconds (None: no limit)."""
        return self.client.wait(self.id, timeout)

    def cancel(self, note: str = "") -> None:
        """Cancel the job (a ``cancel`` exception); RPCError if it is inactive already."""
        self.client.cancel(self.id, note)

    def events(self, *, path: str = "eventlog", follow: bool = True) -> Iterator[Event]:
        """The job's events, as ``Client.events``."""
        return self.client.events(self.id, path=path, follow=follow)

    def wait_event(
        self, name: str, *, match: Mapping[str, Any] | None = None, path: str = "eventlog"
    ) -> Event:
        """The job's first event named ``name``, as ``Client.wait_event``."""
        return self.client.wait_event(self.id, name, match=match, path=path)


class AsyncJobHandle:
    """One job of an AsyncClient: JobHandle's methods, awaited."""

    __slots__ = ("client", "id")

    def __init__(self, client: AsyncJobs, jobid: int) -> None:
        self.client = client
        self.id = JobID(jobid)

    def __repr__(self) -> str:
        return f"AsyncJobHandle({self.id})"

    async def status(self) -> State:
        """The job's state now."""
        return _state(await self.client.job_info(self.id, ["state"]))

    async def done(self) -> bool:
        """Whether the job is inactive."""
        state = await self.status()
        return state == state.INACTIVE

    async def result(self, timeout: float | None = None) -> JobResult:
        """Wait until the job is inactive and return how it ended, as JobHandle's."""
        return await self.client.wait(self.id, timeout)

    async def cancel(self, note: str = "") -> None:
        """Cancel the job."""
        await self.client.cancel(self.id, note)

    def events(self, *, path: str = "eventlog", follow: bool = True) -> AsyncIterator[Event]:
        """The job's events, as ``AsyncClient.events``."""
        return self.client.events(self.id, path=path, follow=follow)

    async def wait_event(
        self, name: str, *, match: Mapping[str, Any] | None = None, path: str = "eventlog"
    ) -> Event:
        """The job's first event named ``name``."""
        return await self.client.wait_event(self.id, name, match=match, path=path)
