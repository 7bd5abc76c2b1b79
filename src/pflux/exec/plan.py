"""What a job shell runs, planned by job-exec: the shell's description and the job's output.

A shell is forked per job, and every page it writes after the fork costs a
page fault (about 5 us here): reading a jobspec and R in the shell cost more
than the rest of its work. So job-exec, a process that never forks, reads
them here (about 40 us) and sends the shell a ready-made ``Description``
(its fields, and how it travels, are in ``pflux.protocol.shellwire``). A job has one
shell per execution target (broker rank) of R, as in flux-core: each gets
its own description, with that rank's tasks (and their files, variables and
CPUs) and its own ``FLUX_JOB_TMPDIR`` name; the rest (the command, the
environment, the RFC 34 task map PMI serves) is the job's, whole. PMI-1 is on
(``pmi_enabled``) unless the ``pmi`` shell option turns it off or, unset,
the job has one task.

Jobs submitted alike (``submit --cc``, an executor's) have equal jobspecs,
but for the ``--cc`` index in ``FLUX_JOB_CC``: a ``PlanMemo`` keeps the last
few plans whose descriptions differ from job to job only in the job's id
(its variables and ``FLUX_JOB_TMPDIR``: no ``env-expand``, no output file),
and a job whose jobspec (its index, digits, aside), R's ``R_lite`` (all of R
a plan reads: R's times differ for every job) and settings equal one of
theirs is planned from it, the id's parts and the index put in, at about a
quarter of the work.

Shell options that job-exec acts on itself come back in the Plan
(``signal``), and so do the shell's diagnostics (``logs``: ``rlimit``
warnings, ``verbose``), which job-exec writes as ``log`` events of the
output eventlog, where flux-core's shell writes them.

The jobspec and R were validated by job-ingest and the scheduler, so only
what is needed is read, and anything unexpected is a PfluxError naming the
problem, which job-exec raises as the job's exception.
"""

from __future__ import annotations

import marshal
import os
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from pflux.errors import PfluxError
from pflux.exec.input import InputConfig, input_config
from pflux.exec.output import (
    DEFAULT_LIMIT,
    OutputConfig,
    StreamConfig,
    output_config,
    output_paths,
)
from pflux.exec.shelloptions import TMPDIR_TAG, Log, ShellOptions, shell_options
from pflux.exec.terminal import pty_ranks
from pflux.fluxshim import ShimEnv
from pflux.protocol.shellwire import Description
from pflux.spec import jsontext
from pflux.spec.files import decode_files
from pflux.spec.fluid import JobID
from pflux.spec.jobspec import JobspecView
from pflux.spec.layout import Layout, layout, targets

__all__ = ["STREAMS", "Plan", "PlanMemo", "plan", "pmi_enabled"]

STREAMS = ("stdout", "stderr")
CC_VARIABLE = "FLUX_JOB_CC"  # ``submit --cc``'s index, one job's of those submitted alike
_CC_MARK = "#"  # in a memo's key, where a job's index stands


class Plan(NamedTuple):
    """A job's shell description, and what job-exec needs to build its output eventlog."""

    shells: tuple[tuple[int, bytes], ...]  # (broker rank, its shell's description) per rank
    layout: Layout
    output: OutputConfig
    input: InputConfig
    redirects: tuple[tuple[str, str], ...]  # (stream, path) of each stream sent to one file
    signal: tuple[int, float] | None  # (signal, seconds before the expiration) to send it
    logs: tuple[Log, ...]  # the shell's diagnostics, for the output eventlog
    ptys: tuple[int, ...]  # the ranks of the tasks on a pty

    @property
    def ntasks(self) -> int:
        return len(self.layout.tasks)


class _Kept(NamedTuple):
    """A job's plan as ``PlanMemo`` keeps it for the jobs like it."""

    fields: dict[str, Any]  # the description's, its job's id in ``env``
    plan: Plan


class PlanMemo:
    """The last ``SIZE`` plans that another job's id can be put in (module docstring).

    Each is found by its jobspec and R as JSON text, and plan()'s other
    arguments: a jobspec changed in place since is another jobspec.
    """

    SIZE = 8

    __slots__ = ("_kept",)

    def __init__(self) -> None:
        self._kept: dict[tuple[bytes, tuple[Any, ...]], _Kept] = {}

    def find(self, key: tuple[bytes, tuple[Any, ...]]) -> _Kept | None:
        return self._kept.get(key)

    def keep(self, key: tuple[bytes, tuple[Any, ...]], kept: _Kept) -> None:
        kept_now = self._kept
        kept_now[key] = kept
        if len(kept_now) > self.SIZE:
            del kept_now[next(iter(kept_now))]  # the oldest


def plan(
    jobid: int,
    jobspec: dict[str, Any],
    R: Mapping[str, Any],  # noqa: N803 (R is the RFC's name)
    *,
    uri: str,
    namespace: str,
    tmp_parents: Sequence[str],
    hostname: str,
    cpus: Sequence[int],
    output_limit: str = DEFAULT_LIMIT,
    shim: ShimEnv | None = None,
    jobid_path: str = "/",
    memo: PlanMemo | None = None,
) -> Plan:
    """Plan job ``jobid``; PfluxError naming the problem if it cannot be run.

    ``tmp_parents`` are the directories ``FLUX_JOB_TMPDIR`` may be made in,
    best first; ``cpus`` those R's core ids map onto; ``output_limit`` the
    KVS output limit unless the job sets ``output.limit``; ``shim`` the flux
    shim's paths for the tasks' PATH and PYTHONPATH (None: left as they are);
    ``jobid_path`` the instance's ``jobid-path`` attribute (``/`` at the root);
    ``memo`` the plans of earlier jobs to plan this one from, if it is like one.
    """
    key = None
    if memo is not None:
        setting = (uri, tuple(tmp_parents), hostname, tuple(cpus), output_limit, shim, jobid_path)
        index = _cc_index(jobspec)
        key = _memo_key(jobspec, R, index, setting)
        kept = None if key is None else memo.find(key)
        if kept is not None:
            return _again(kept, jobid, namespace, jobid_path, tmp_parents, index=index)
    try:
        spec = JobspecView(jobspec)
        places = layout(spec, targets(R))
        given = spec.shell_options
        config = output_config(given.get("output", {}), output_limit)
        stdin = input_config(given.get("input", {}))
        pmi = pmi_enabled(given.get("pmi"), len(places.tasks))
        ptys = pty_ranks(given.get("pty"), len(places.tasks))
        argv = list(spec.command)
        env = dict(spec.environment)
        cwd = spec.cwd
        name = spec.name
        options: ShellOptions = shell_options(given, spec)
        files = spec.data["attributes"]["system"].get("files")
        written = [] if files is None else decode_files(files)
    except PfluxError as exc:
        raise PfluxError(f"invalid job: {exc}") from None
    except (LookupError, TypeError, ValueError, AttributeError, ArithmeticError) as exc:
        raise PfluxError(f"invalid job: {exc!r}") from None
    if not argv:
        raise PfluxError("invalid job: the command is empty")
    fluid = JobID(jobid)
    f58 = fluid.f58
    env["FLUX_JOB_ID"] = f58
    env["FLUX_JOB_SIZE"] = str(len(places.tasks))
    env["FLUX_JOB_NNODES"] = str(places.nnodes)
    env["PFLUX_URI"] = env["FLUX_URI"] = uri
    _set_job_env(env, f58, namespace, jobid_path)
    if shim is not None:
        shim.apply(env)
    if "HOSTNAME" in env:
        env["HOSTNAME"] = hostname
    tasks = options.tasks(places, cpus)
    effects = options.effects(env, jobid=fluid, name=name, places=places, hostname=hostname)
    logs = options.logs(places, cpus)
    redirects, outputs = _outputs(config, fluid, name, places, hostname)
    fields: dict[str, Any] = dict(
        argv=argv,
        env=env,
        tasks=tasks,
        cwd=cwd,
        tmpdirs=(),
        host=hostname,
        stdin=stdin.path,
        stdout=outputs[0],
        stderr=outputs[1],
        pmi=(len(places.tasks), places.blocks) if pmi else None,
        rlimit=effects.rlimit,
        exit_timeout=effects.exit_timeout,
        exit_on_error=effects.exit_on_error,
        task_env=effects.task_env,
        tmpdir_env=effects.tmpdir_env,
        ptys=ptys,
        nosetpgrp=effects.nosetpgrp,
        files=written,
        tmpdir_argv=any(TMPDIR_TAG in arg for arg in argv),
    )
    planned = Plan((), places, config, stdin, tuple(redirects), options.signal, logs, ptys)
    # a description that names the job elsewhere than its variables and directory is its own
    reusable = not options.env_expand and not any(map(_is_file, outputs))
    if key is not None and memo is not None and reusable:
        memo.keep(key, _Kept(dict(fields), planned))
    return planned._replace(shells=_per_rank(fields, places, f58, tmp_parents))


def _outputs(
    config: OutputConfig, jobid: JobID, name: str, places: Layout, hostname: str
) -> tuple[list[tuple[str, str]], list[tuple[tuple[str, ...], bool, bool] | bool]]:
    """(the streams sent to one file, and that file; the description's ``stdout`` and
    ``stderr``: files, or whether the KVS's is line-buffered)."""
    redirects = []
    outputs: list[tuple[tuple[str, ...], bool, bool] | bool] = []
    for stream in STREAMS:
        conf: StreamConfig = getattr(config, stream)
        if conf.type == "file" and conf.path is not None:
            paths = output_paths(
                conf.path, stream, jobid=jobid, name=name, places=places, hostname=hostname
            )
            if paths and paths.count(paths[0]) == len(paths):
                # one file: said in the output eventlog, and sent once; a file per task
                # or node is not announced there, as in flux-core
                paths = paths[:1]
                redirects.append((stream, paths[0]))
            outputs.append((paths, conf.mode == "append", conf.label))
        else:
            outputs.append(conf.buffer == "line")
    return redirects, outputs


def _memo_key(
    jobspec: dict[str, Any],
    R: Mapping[str, Any],  # noqa: N803
    index: str | None,
    setting: tuple[Any, ...],
) -> tuple[bytes, tuple[Any, ...]] | None:
    """What a ``PlanMemo`` finds a job's plan by (None: what JSON cannot hold, never kept):
    the jobspec with its ``--cc`` ``index`` marked, R's ``R_lite`` (``targets`` reads no
    more of R), and the setting with whether an index was marked (a jobspec whose own
    value is the mark is another)."""
    try:
        placed = R["execution"]["R_lite"]
    except (LookupError, TypeError):
        placed = R  # not a plan's to judge here: plan() says what is wrong with it
    if index is not None:
        system = jobspec["attributes"]["system"]
        environment = {**system["environment"], CC_VARIABLE: _CC_MARK}
        system = {**system, "environment": environment}
        jobspec = {**jobspec, "attributes": {**jobspec["attributes"], "system": system}}
    try:
        return jsontext.dumps([jobspec, placed]), (index is not None, *setting)
    except jsontext.EncodeError:
        return None


def _cc_index(jobspec: Mapping[str, Any]) -> str | None:
    """The job's ``--cc`` index (``FLUX_JOB_CC`` in its environment, if digits), or None."""
    try:
        index = jobspec["attributes"]["system"]["environment"].get(CC_VARIABLE)
    except (LookupError, TypeError, AttributeError):
        return None
    return index if type(index) is str and index.isascii() and index.isdigit() else None


def _again(
    kept: _Kept,
    jobid: int,
    namespace: str,
    jobid_path: str,
    tmp_parents: Sequence[str],
    *,
    index: str | None,
) -> Plan:
    """Job ``jobid``'s plan, from the kept plan of a job like it (``index``: its ``--cc``
    index, where the kept job had one)."""
    fields = dict(kept.fields)
    fields["env"] = env = dict(fields["env"])
    if index is not None:
        env[CC_VARIABLE] = index
    f58 = JobID(jobid).f58
    _set_job_env(env, f58, namespace, jobid_path)
    return kept.plan._replace(shells=_per_rank(fields, kept.plan.layout, f58, tmp_parents))


def _set_job_env(env: dict[str, str], f58: str, namespace: str, jobid_path: str) -> None:
    """The tasks' variables that name their job (all that a ``PlanMemo`` changes)."""
    env["FLUX_JOB_ID"] = f58
    env["PFLUX_KVS_NAMESPACE"] = env["FLUX_KVS_NAMESPACE"] = namespace
    env["FLUX_JOB_ID_PATH"] = f"{'' if jobid_path == '/' else jobid_path}/{f58}"


def _is_file(output: Any) -> bool:
    """An output of the description that names files (their names may hold the job's id)."""
    return isinstance(output, tuple)


def _per_rank(
    fields: dict[str, Any], places: Layout, f58: str, parents: Sequence[str]
) -> tuple[tuple[int, bytes], ...]:
    """Each rank's shell description: the job's ``fields`` less other ranks' tasks, and
    its own ``FLUX_JOB_TMPDIR`` (``jobtmp-RANK-ID``, as flux-core names it) in ``parents``.
    A rank of R with no task (a batch job's whole nodes, one broker on the first) has
    no shell: it is the job's until the end, released with the last.
    """
    if places.nnodes == 1:
        rank = places.tasks[0].broker_rank
        fields["tmpdirs"] = tuple(os.path.join(p, f"jobtmp-{rank}-{f58}") for p in parents)
        # marshal takes no tuple subclass
        return ((rank, marshal.dumps(tuple(Description(**fields)))),)
    shells = []
    for node in range(places.nnodes):
        mine = [i for i, place in enumerate(places.tasks) if place.node == node]
        if not mine:
            continue
        rank = places.tasks[mine[0]].broker_rank
        own = dict(fields)
        own["tasks"] = [fields["tasks"][i] for i in mine]
        if fields["task_env"] is not None:
            own["task_env"] = [fields["task_env"][i] for i in mine]
        for stream in ("stdout", "stderr"):
            target = fields[stream]
            if isinstance(target, tuple) and len(target[0]) > 1:  # a file per task
                own[stream] = (tuple(target[0][i] for i in mine), *target[1:])
        own["tmpdirs"] = tuple(os.path.join(p, f"jobtmp-{rank}-{f58}") for p in parents)
        shells.append((rank, marshal.dumps(tuple(Description(**own)))))
    return tuple(shells)


def pmi_enabled(value: str | None, ntasks: int) -> bool:
    """Whether the ``pmi`` shell option (a name, or a comma-separated list, checked at
    ingest by ``pflux.spec.shell_options``) asks for PMI-1.

    Unset, it does for a job of more than one task: a one-task MPI program
    starts as a singleton without it (MPICH's does), and the socket pair,
    polled and read to its end, is a cost every job would pay. ``off`` turns
    it off; every other name is this shell's simple PMI-1.
    """
    if value is None:
        return ntasks > 1
    return any(name != "off" for name in value.split(","))
