"""What a job and its run use of job-exec and of each other, and what leftovers use.

A job (``ExecJob``) is made by the service and makes its run (``ShellRun``,
or ``SimulatedRun`` in test mode); the run calls back into the job, into the
service's launcher and into the guest-key writes (``GuestWrites``); the
survey of an earlier job-exec's leftovers calls into the service. Each sees
only these few methods and attributes, so none of them imports the service
(nor the job its run): the service imports them. The real objects are
passed: attribute access is as direct as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable, Coroutine

    from pflux.broker.router import Broker
    from pflux.exec.plan import PlanMemo
    from pflux.fluxshim import ShimEnv
    from pflux.protocol.exec import ExecResponse
    from pflux.protocol.shellwire import Record

RunT_contra = TypeVar("RunT_contra", contravariant=True)  # the run whose guest keys are written


class RankShells(NamedTuple):
    """What another rank's exec-node said of the jobs job-exec runs with a shell there."""

    running: set[int]  # the jobs whose shells run there
    died: dict[int, int]  # the wait statuses of those whose shells died unheard
    incarnation: int  # the exec-node's number (``pflux.exec.node``)
    unasked: set[int]  # the jobs whose shell it was never asked for since it started


class Launching(Protocol):
    """The launcher's side of job-exec: what both shell runs and leftovers need."""

    @property
    def broker(self) -> Broker: ...

    @property
    def spool_dir(self) -> str: ...

    def send_launcher(self, rank: int, data: bytes) -> None: ...


class LeftoverHost(Launching, Protocol):
    """What the survey of an earlier job-exec's leftovers uses of job-exec."""

    @property
    def journal(self) -> str: ...

    def journal_ended(self, keys: list[int]) -> None:
        """Journal the end of a job whose shells ``keys`` are over, its end stored."""


class ShellHost(Launching, Protocol[RunT_contra]):
    """What a shell run uses of job-exec: the shells' host, the launcher, the guest keys."""

    @property
    def owner(self) -> int: ...

    @property
    def uri(self) -> str: ...

    @property
    def hostname(self) -> str: ...

    @property
    def cpus(self) -> tuple[int, ...]: ...

    @property
    def tmp_parents(self) -> tuple[str, ...]: ...

    @property
    def shim(self) -> ShimEnv | None: ...

    @property
    def jobid_path(self) -> str: ...

    @property
    def plans(self) -> PlanMemo:
        """The last jobs' plans, for the jobs like them (``pflux.exec.plan``)."""

    @property
    def imp(self) -> str | None:
        """The privileged helper's socket, through which guests' jobs run (None: they do not)."""

    def on_records(self, records: list[Record], from_shell: bool) -> None: ...

    def journal_asked(self, keys: list[int]) -> None:
        """Journal that launchers are asked for shells ``keys``, before they are."""

    def journal_ended(self, keys: list[int]) -> None: ...

    def remote_shells(self, rank: int) -> RankShells | None:
        """What rank ``rank``'s exec-node said since it last joined; None until it has
        (``pflux.exec.node``)."""

    def track(self, coro: Coroutine[Any, Any, None]) -> None: ...

    @property
    def writes(self) -> GuestKeys[RunT_contra]: ...


class GuestKeys(Protocol[RunT_contra]):
    """What a run uses of job-exec's guest-key writes (``pflux.exec.writes``)."""

    def create_namespace(self, run: RunT_contra) -> None: ...

    def append(self, run: RunT_contra, name: str, text: str, *, new: bool = False) -> None: ...

    def remove_namespace(self, run: RunT_contra) -> None: ...

    def after_commit(self, callback: Callable[[], None]) -> None: ...

    def committed(self) -> asyncio.Future[None]: ...

    def after_flush(self, fn: Callable[[], None]) -> None: ...


class JobHost(ShellHost[Any], Protocol):
    """What a job (``ExecJob``) uses of job-exec: its run's host, the kill settings,
    and forgetting the job once it has answered its end."""

    kill_timeout: float
    term_signal: int
    kill_signal: int

    def ended(self, jobid: int) -> None: ...


class RunJob(Protocol):
    """What a run uses of its job (RFC 32's side of it): its identity and its ending."""

    id: int
    userid: int
    jobspec: dict[str, Any]
    R: dict[str, Any]
    reattach: bool  # its start request says it had started
    J: str | None  # a guest's J, as its start request carried it (None: in the KVS alone)
    started: bool
    running: bool
    finalizing: bool
    warning: tuple[int, float] | None

    @property
    def service(self) -> ShellHost[Any]: ...

    @property
    def loop(self) -> asyncio.AbstractEventLoop: ...

    def respond(self, kind: ExecResponse, data: dict[str, Any]) -> None: ...

    def set_running(self, *, after_writes: bool = False) -> None: ...

    def release(self, ranks: str) -> None: ...

    def raise_exception(self, kind: str, severity: int, note: str) -> None: ...

    def fatal(self, note: str, kind: str = "exec") -> None: ...

    def complete(self, status: int) -> None: ...

    def finalize(self) -> None: ...
