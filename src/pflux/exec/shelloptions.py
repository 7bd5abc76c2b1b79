"""The shell options job-exec applies as it plans a job: binding, limits, templates, exits.

job-ingest has checked every option (``pflux.spec.shell_options``), so here
each is turned into what the shell does with it (``Effects``), following flux-core's shell
plugins: ``cpu-affinity`` and ``gpu-affinity`` (affinity.c, gpubind.c),
``rlimit`` (rlimit.c), ``env-expand`` (env-expand.c and the mustache tags),
``exit-timeout`` and ``exit-on-error`` (doom.c), ``signal`` (signal.c, done by
job-exec, which knows the expiration), ``nosetpgrp`` and ``verbose``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any, Final, NamedTuple

from pflux.exec.output import job_tags, node_tags, render_path
from pflux.spec import shell_options as spec
from pflux.spec.fluid import JobID
from pflux.spec.layout import Layout, cpu_set

__all__ = ["LOG_DEBUG", "LOG_WARN", "Effects", "Log", "ShellOptions", "shell_options"]

LOG_WARN: Final = 4  # flux-core's shell log levels (syslog's)
LOG_DEBUG: Final = 6
TMPDIR_TAG: Final = "{{tmpdir}}"


class Log(NamedTuple):
    """One of the shell's diagnostics: a ``log`` event of the output eventlog."""

    level: int
    component: str | None
    message: str


class Effects(NamedTuple):
    """What the shell does for the job's options: the ``Description`` fields of the same
    names (``pflux.protocol.shellwire``)."""

    rlimit: list[tuple[int, int]]
    exit_timeout: float | None
    exit_on_error: bool
    nosetpgrp: bool
    task_env: list[dict[str, str]] | None
    tmpdir_env: list[str]


class ShellOptions(NamedTuple):
    """A job's shell options, read once."""

    cpu_affinity: str
    gpu_affinity: str
    rlimit: Mapping[str, int]
    env_expand: Mapping[str, str]
    exit_timeout: float | None
    exit_on_error: bool
    nosetpgrp: bool
    signal: tuple[int, float] | None
    verbose: int
    cores_per_slot: int
    slots: int
    slots_per_node: int

    def tasks(
        self, places: Layout, cpus: Sequence[int]
    ) -> list[tuple[int, int, tuple[int, ...] | None, str | None]]:
        """Per task ``(rank, local id, CPUs to bind to or None, CUDA_VISIBLE_DEVICES)``."""
        everywhere = set(cpus)
        mode = self.cpu_affinity
        cpu_sets: list[set[int] | frozenset[int] | None]
        if mode == "off":
            cpu_sets = [None] * len(places.tasks)
        elif mode == "per-task":
            cpu_sets = [cpu_set(place.cores, cpus) for place in places.tasks]
        elif mode.startswith("map:"):
            given = spec.cpu_map(mode[4:])
            cpu_sets = [given[place.local_id % len(given)] for place in places.tasks]
        else:  # on: every task gets all of the job's cores on its node
            cpu_sets = [cpu_set(_node_cores(places, place.node), cpus) for place in places.tasks]
        gpus_of = {place.node: _node_gpus(places, place.node) for place in places.tasks}
        tasks = []
        for place, want in zip(places.tasks, cpu_sets, strict=True):
            bind = tuple(sorted(want)) if want is not None and want != everywhere else None
            if self.gpu_affinity == "off":
                visible = None
            else:
                ids = place.gpus if self.gpu_affinity == "per-task" else gpus_of[place.node]
                visible = ",".join(map(str, ids)) if ids else "-1"
            tasks.append((place.rank, place.local_id, bind, visible))
        return tasks

    def effects(
        self,
        env: MutableMapping[str, str],
        *,
        jobid: JobID,
        name: str,
        places: Layout,
        hostname: str,
    ) -> Effects:
        """What the shell does for these options (fields of the job's ``Description``);
        fills ``env`` with the job-wide ``env-expand`` values."""
        task_env: list[dict[str, str]] | None = None
        tmpdir: list[str] = []
        if self.env_expand:
            tags = job_tags(jobid, name, len(places.tasks), places.nnodes)
            per_task = {k: v for k, v in self.env_expand.items() if _names_a_task(v)}
            here = {**tags, **node_tags(places.tasks[0], places, hostname)}
            for key, template in self.env_expand.items():
                if key not in per_task:
                    env[key] = render_path(template, here)
            if per_task:
                task_env = []
                for place in places.tasks:
                    mine = {**tags, **node_tags(place, places, hostname)}
                    mine.update(_task_tags(place.rank, place.local_id))
                    task_env.append({k: render_path(v, mine) for k, v in per_task.items()})
            tmpdir = [key for key, value in self.env_expand.items() if TMPDIR_TAG in value]
        return Effects(
            _rlimits(self.rlimit) if self.rlimit else [],
            self.exit_timeout,
            self.exit_on_error,
            self.nosetpgrp,
            task_env,
            tmpdir,
        )

    def logs(self, places: Layout, cpus: Sequence[int]) -> tuple[Log, ...]:
        """What the shell says about the job before it starts: rlimit warnings, ``verbose``."""
        logs = [
            Log(LOG_WARN, "rlimit", f"{key} exceeds current max, raising value to hard limit")
            for key in _over_hard_limit(self.rlimit)
        ]
        if self.verbose:
            logs.append(
                Log(
                    LOG_DEBUG,
                    None,
                    f"0: task_count={len(places.tasks)} slot_count={self.slots}"
                    f" cores_per_slot={self.cores_per_slot}"
                    f" slots_per_node={self.slots_per_node}",
                )
            )
            from pflux.spec.idset import IdSet

            for node in range(places.nnodes):
                ranks = IdSet(p.rank for p in places.tasks if p.node == node)
                many = "s" if len(ranks) > 1 else ""
                ids = ranks.encode()
                shown = f"[{ids}]" if len(ranks) > 1 else ids
                cores = IdSet(_node_cores(places, node)).encode()
                logs.append(Log(LOG_DEBUG, None, f"{node}: task{many} {shown} on cores {cores}"))
        return tuple(logs)


def shell_options(options: Mapping[str, Any], jobspec: Any = None) -> ShellOptions:
    """Read a (valid) jobspec's shell options; ``jobspec`` (a JobspecView) gives the slot
    counts that ``verbose`` reports."""
    timeout = options.get("exit-timeout", spec.DEFAULT_EXIT_TIMEOUT)
    signal = options.get("signal")
    slots = cores = per_node = 0
    if jobspec is not None and options.get("verbose"):
        slots, cores = jobspec.nslots, jobspec.cores_per_slot
        per_node = jobspec.slots_per_node if jobspec.nnodes is not None else -1
    return ShellOptions(
        cpu_affinity=options.get("cpu-affinity", "on"),
        gpu_affinity=options.get("gpu-affinity", "on"),
        rlimit=options.get("rlimit", {}),
        env_expand=options.get("env-expand", {}),
        exit_timeout=spec.exit_timeout(timeout),
        exit_on_error="exit-on-error" in options,
        nosetpgrp="nosetpgrp" in options,
        signal=None if signal is None else spec.signal_option(signal),
        verbose=min(int(options.get("verbose", 0)), 2),
        cores_per_slot=cores,
        slots=slots,
        slots_per_node=per_node,
    )


def _node_cores(places: Layout, node: int) -> list[int]:
    return sorted({core for p in places.tasks if p.node == node for core in p.cores})


def _node_gpus(places: Layout, node: int) -> list[int]:
    return sorted({gpu for p in places.tasks if p.node == node for gpu in p.gpus})


def _names_a_task(template: str) -> bool:
    from pflux.exec.output import template_scope

    return template_scope(template) == "task"


def _task_tags(rank: int, local_id: int) -> dict[str, str]:
    text, local = str(rank), str(local_id)
    return {
        "taskid": text,
        "task.id": text,
        "task.rank": text,
        "task.index": local,
        "task.localid": local,
    }


_RESOURCES: dict[str, int] = {}


def _resource(name: str) -> int:
    """The RLIMIT_ number of a flux-core limit name (``ofile`` is ``nofile``)."""
    if not _RESOURCES:
        import resource

        for symbol in vars(resource):
            if symbol.startswith("RLIMIT_"):
                _RESOURCES[symbol[7:].lower()] = getattr(resource, symbol)
        _RESOURCES["ofile"] = resource.RLIMIT_NOFILE
    return _RESOURCES.get(name, -1)


def _clamped(name: str, value: int) -> tuple[int, int, bool]:
    """(resource, the soft limit to set, whether it was cut to the hard limit)."""
    import resource

    number = _resource(name)
    soft = resource.RLIM_INFINITY if value == -1 else value
    hard = _own_limits(number)[1]
    if hard != resource.RLIM_INFINITY and (soft == resource.RLIM_INFINITY or soft > hard):
        return number, hard, True
    return number, soft, False


def _rlimits(limits: Mapping[str, int]) -> list[tuple[int, int]]:
    """The (resource, soft limit) pairs the shell must set: those that are not job-exec's.

    The launcher and its shells have job-exec's limits (they are its
    children), so a limit equal to job-exec's needs no system call per job.
    """
    wanted = []
    for name, value in limits.items():
        number, soft, _ = _clamped(name, value)
        if number >= 0 and _own_limits(number)[0] != soft:
            wanted.append((number, soft))
    return wanted


@functools.cache
def _own_limits(number: int) -> tuple[int, int]:
    """job-exec's (soft, hard) limit ``number``, read once: pflux never changes its own
    limits, and every job submitted from a shell passes on about ten of them."""
    import resource

    return resource.getrlimit(number)


def _over_hard_limit(limits: Mapping[str, int]) -> list[str]:
    return [name for name, value in limits.items() if _clamped(name, value)[2]]
