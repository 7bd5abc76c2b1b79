"""The public API's typed answers: a job as job-list lists it, the queue's status,
the job manager's allocation counts. Users import them from ``pflux``.

Each is built from its RPC's reply as docs/interfaces.md describes it; a field
the reply leaves out is None (job-list answers an attribute only once it means
something, and only those asked for). They are named tuples, as ``JobResult`` is,
rather than dataclasses: ``dataclasses`` loads ``inspect``, about 10 ms of every
``pflux jobs``. A listing keeps its state as the int job-list answered, and makes
it a ``State`` when ``state`` is read: the states' enum (with the state machine
that defines it) is a fifth of ``pflux jobs``, which prints from the reply.
"""

from __future__ import annotations

from pflux.spec.fluid import JobID

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Mapping
    from types import MappingProxyType
    from typing import Any, NamedTuple

    from pflux.spec.states import State
else:
    from pflux.spec.typedtuple import NamedTuple

    MappingProxyType = type(type.__dict__)  # types' own definition, without types


class JobListing(NamedTuple):
    """One job's job-list attributes (``list_jobs``, ``job_info``); None: not answered.
    ``answered`` (the reply itself) takes no part in comparisons nor in the repr."""

    id: JobID
    userid: int | None = None
    urgency: int | None = None
    priority: int | None = None
    t_submit: float | None = None
    t_depend: float | None = None
    t_priority: float | None = None
    t_sched: float | None = None
    t_run: float | None = None
    t_cleanup: float | None = None
    t_inactive: float | None = None
    state: State | None = None
    name: str | None = None
    cwd: str | None = None
    queue: str | None = None
    project: str | None = None
    bank: str | None = None
    ntasks: int | None = None
    ncores: int | None = None
    duration: float | None = None
    nnodes: int | None = None
    ranks: str | None = None
    nodelist: str | None = None
    success: bool | None = None
    exception_occurred: bool | None = None
    exception_type: str | None = None
    exception_severity: int | None = None
    exception_note: str | None = None
    result: int | None = None
    expiration: float | None = None
    annotations: dict[str, Any] | None = None
    waitstatus: int | None = None
    dependencies: list[str] | None = None
    answered: Mapping[str, Any] = MappingProxyType({})

    @classmethod
    def from_reply(cls, job: Mapping[str, Any]) -> JobListing:
        """The listing of one job object of a job-list reply."""
        known = {name: job[name] for name in _LISTED if name in job}
        known["id"] = JobID(job["id"])
        return cls(**known, answered=job)

    def to_dict(self) -> dict[str, Any]:
        """The attributes as job-list answered them (``pflux jobs --json`` prints them)."""
        return dict(self.answered)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not JobListing:
            return NotImplemented
        return self[:-1] == other[:-1]

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash(self[:-1])

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in _LISTED)
        return f"JobListing({shown})"


_LISTED = JobListing._fields[:-1]
_STATE = JobListing._fields.index("state")


class _StateItem:
    """``JobListing.state``: the tuple's item, read as a ``State`` (a subclass of int,
    so listings compare and hash alike either way)."""

    def __get__(self, listing: JobListing | None, owner: object = None) -> Any:
        if listing is None:
            return self
        state: Any = listing[_STATE]  # an int from a reply, or the State given
        if state is None:
            return None
        from pflux.spec.states import State

        return State(state)


if not TYPE_CHECKING:  # the type checker reads the field's declared type
    JobListing.state = _StateItem()


class QueueStatus(NamedTuple):
    """Whether the queue accepts submissions (``enable``) and schedules (``start``), and
    why not ("" when no reason was given or it is on)."""

    enable: bool
    start: bool
    disable_reason: str = ""
    stop_reason: str = ""

    @classmethod
    def from_reply(cls, reply: Mapping[str, Any]) -> QueueStatus:
        """The status of a ``job-manager.queue-status`` reply."""
        return cls(
            bool(reply["enable"]),
            bool(reply["start"]),
            str(reply.get("disable_reason", "")),
            str(reply.get("stop_reason", "")),
        )


class AllocCounts(NamedTuple):
    """The job manager's allocation counts: requests queued, requests the scheduler has
    and not answered, and jobs running."""

    queue_length: int
    alloc_pending: int
    running: int

    @classmethod
    def from_reply(cls, reply: Mapping[str, Any]) -> AllocCounts:
        """The counts of a ``job-manager.alloc-query`` reply."""
        return cls(int(reply["queue_length"]), int(reply["alloc_pending"]), int(reply["running"]))
