"""Named queues and job policy from the configuration, as flux-core's (RFC 33).

``[queues.NAME]`` tables name the queues; each may say which resource
properties its jobs need (``requires``, an array of property names) and have
a ``policy`` table of its own. ``[policy]`` holds the defaults and limits of
every job (flux-config-policy(5)): ``jobspec.defaults.system.duration`` and
``.queue`` (the default queue), ``limits.duration``; a queue's ``policy``
overrides them for its jobs.

``frob`` does at submission what flux-core's job-ingest frobnicator plugins
``defaults`` and ``constraints`` do: fill in the default queue and duration,
and AND the queue's ``requires`` with the job's own constraints, so the
scheduler places the job only on ranks that have them. ``check_limits`` then
refuses a duration over the limit, as flux-core's ``limit-duration`` plugin.
Pure: the services that read the configuration call it.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

from pflux.errors import ConfigError, DurationError, SpecError
from pflux.spec import duration as fsd
from pflux.spec.jobspec import system_attributes

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, Final

__all__ = ["CONFIG_KEYS", "ConfiguredQueue", "JobPolicy", "QueueConfig"]

# the tables read here, as ``Service.config_keys`` declares them (``*``: any queue name)
CONFIG_KEYS: Final = {
    "policy": (),
    "policy.jobspec": (),
    "policy.jobspec.defaults": (),
    "policy.jobspec.defaults.system": ("duration", "queue"),
    "policy.limits": ("duration",),
    "queues": (),
    "queues.*": ("requires",),
    "queues.*.policy": (),
    "queues.*.policy.jobspec": (),
    "queues.*.policy.jobspec.defaults": (),
    "queues.*.policy.jobspec.defaults.system": ("duration",),
    "queues.*.policy.limits": ("duration",),
}
_PROPERTY_FORBIDDEN: Final = "!&'\"^`|()"


@dataclass(frozen=True)
class JobPolicy:
    """Defaults and limits of a job, in seconds (``None``: not configured)."""

    default_duration: float | None = None
    duration_limit: float | None = None

    def over(self, general: JobPolicy) -> JobPolicy:
        """This (a queue's) policy, with ``general`` where this one says nothing."""
        return JobPolicy(
            general.default_duration if self.default_duration is None else self.default_duration,
            general.duration_limit if self.duration_limit is None else self.duration_limit,
        )


@dataclass(frozen=True)
class ConfiguredQueue:
    name: str
    requires: tuple[str, ...] | None = None
    policy: JobPolicy = field(default_factory=JobPolicy)  # merged with the general one


@dataclass(frozen=True)
class QueueConfig:
    """The configured queues (none: pflux's one anonymous queue) and job policy."""

    queues: dict[str, ConfiguredQueue] = field(default_factory=dict)
    default_queue: str | None = None
    policy: JobPolicy = field(default_factory=JobPolicy)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> QueueConfig:
        """Read ``[queues]`` and ``[policy]``; ConfigError names a bad value."""
        general = _policy(config.get("policy", {}), "policy")
        system = config.get("policy", {}).get("jobspec", {}).get("defaults", {}).get("system", {})
        default = system.get("queue")
        queues: dict[str, ConfiguredQueue] = {}
        for name, table in config.get("queues", {}).items():
            where = f"queues.{name}"
            own = _policy(table.get("policy", {}), f"{where}.policy")
            queues[name] = ConfiguredQueue(name, _requires(table, where), own.over(general))
        if default is not None:
            where = "policy.jobspec.defaults.system"
            if not isinstance(default, str):
                raise ConfigError(where, "queue", f"must be a queue name, got {default!r}")
            if default not in queues:
                raise ConfigError(where, "queue", f"default queue '{default}' must be in [queues]")
        return cls(queues, default, general)

    @property
    def named(self) -> bool:
        return bool(self.queues)

    @property
    def active(self) -> bool:
        """Whether anything is configured: with nothing, jobs go as submitted."""
        return bool(self.queues) or self.policy != JobPolicy()

    def frob(self, jobspec: dict[str, Any]) -> dict[str, Any]:
        """``jobspec`` with its queue's defaults and constraints (a copy, if any changed);
        SpecError (flux-core's words) for a queue not configured, or none when one must be."""
        system = system_attributes(jobspec)
        name = system.get("queue")
        if name is not None and (not isinstance(name, str) or name not in self.queues):
            if not self.queues:
                return jobspec  # the job manager refuses it: there are no named queues
            raise SpecError(f"Invalid queue '{name}' specified")
        if name is None:
            name = self.default_queue
            if name is None and self.queues:
                raise SpecError("no queue specified")
        queue = self.queues.get(name) if name is not None else None
        policy = self.policy if queue is None else queue.policy
        requires = None if queue is None else queue.requires
        need_duration = policy.default_duration is not None and not system.get("duration")
        if name == system.get("queue") and not need_duration and not requires:
            return jobspec
        jobspec = copy.deepcopy(jobspec)
        system = jobspec.setdefault("attributes", {}).setdefault("system", {})
        if name is not None:
            system["queue"] = name
        if need_duration:
            system["duration"] = policy.default_duration
        if requires:
            _add_constraints(system, list(requires))
        return jobspec

    def check_limits(self, jobspec: dict[str, Any]) -> None:
        """SpecError, flux-core's words, if the job's duration is over its policy's limit."""
        system = system_attributes(jobspec)
        name = system.get("queue")
        queue = self.queues.get(name) if isinstance(name, str) else None
        limit = (self.policy if queue is None else queue.policy).duration_limit
        if limit is None or limit == math.inf:
            return
        requested = system.get("duration", 0)
        if not isinstance(requested, int | float) or 0 < requested <= limit:
            return
        text = "unlimited" if requested == 0 else fsd.format(requested, precision=2)
        where = f" for queue {name}" if queue is not None else ""
        raise SpecError(
            f"requested duration ({text}) exceeds policy limit of"
            f" {fsd.format(limit, precision=2)}{where}"
        )


def _add_constraints(system: dict[str, Any], requires: list[str]) -> None:
    """AND the queue's properties with the job's constraints, as flux-core's frobnicator."""
    constraints = system.get("constraints")
    wanted = {"properties": requires}
    if not constraints:
        system["constraints"] = wanted
    elif isinstance(constraints, dict) and isinstance(constraints.get("properties"), list):
        have = constraints["properties"]
        have.extend(p for p in requires if p not in have)
    elif not (isinstance(constraints, dict) and wanted in constraints.get("and", ())):
        system["constraints"] = {"and": [constraints, wanted]}


def _policy(table: dict[str, Any], where: str) -> JobPolicy:
    system = table.get("jobspec", {}).get("defaults", {}).get("system", {})
    default = _duration(system, f"{where}.jobspec.defaults.system")
    limit = _duration(table.get("limits", {}), f"{where}.limits")
    return JobPolicy(default, limit)


def _duration(table: dict[str, Any], where: str) -> float | None:
    value = table.get("duration")
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigError(where, "duration", f"must be a duration such as 1h, got {value!r}")
    try:
        seconds = fsd.parse(value)
    except DurationError as exc:
        raise ConfigError(where, "duration", str(exc)) from None
    return None if seconds == math.inf and where.endswith("system") else seconds


def _requires(table: dict[str, Any], where: str) -> tuple[str, ...] | None:
    value = table.get("requires")
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(p, str) and p for p in value):
        raise ConfigError(where, "requires", f"must be an array of property names, got {value!r}")
    for name in value:
        bad = next((c for c in name if c in _PROPERTY_FORBIDDEN), None)
        if bad is not None:
            raise ConfigError(where, "requires", f"invalid character {bad!r} in property {name!r}")
    return tuple(value)
