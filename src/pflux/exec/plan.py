"""What a job shell runs, planned by job-exec: the shell's description and the job's output.

A shell is forked per job, and every page it writes after the fork costs a
page fault (about 5 us here): reading a jobspec and R in the shell cost more
than the rest of its work. So job-exec, a process that never forks, reads
them here (about 40 us) and sends the shell a ready-made description,
``marshal``-encoded (the launcher runs the same interpreter, and marshal
needs no import): a tuple

    (argv, env, tasks, cwd, tmpdirs, host, stdin, stdout, stderr, extra, pmi)

- ``argv``: the command; ``env``: the environment every task shares (the
  jobspec's, with ``FLUX_JOB_ID``, ``FLUX_JOB_SIZE``, ``FLUX_JOB_NNODES``,
  ``PFLUX_URI``, ``FLUX_URI`` (the same) and ``PFLUX_KVS_NAMESPACE``; the shell adds
  ``FLUX_JOB_TMPDIR``);
- ``tasks``: per task ``(rank, local id, cpus, gpus)``: the CPUs to bind it
  to (None: all of the instance's; ``cpu-affinity``: by default every task
  gets all of the job's cores, as in flux-core) and its
  ``CUDA_VISIBLE_DEVICES`` (None: left alone, ``gpu-affinity=off``);
- ``cwd`` (None: the launcher's); ``tmpdirs``: where ``FLUX_JOB_TMPDIR``
  may be made, best first; ``host``: the host name that notes give;
- ``stdin``: the file each task reads its stdin from, or None for a pipe
  the shell feeds from the job's ``input`` (``pflux.shell.input``);
- ``stdout``, ``stderr``: ``(paths, append, label)`` for a stream written
  to files, ``paths`` one per task (or one for all of them); for one
  captured in the KVS, whether it is line-buffered (the shell sends whole
  lines, so that job-exec keeps no partial one);
- ``extra``: what only some jobs need, by name (absent when unused):
  ``rlimit``, ``(resource, soft limit)`` pairs to set while the tasks are
  spawned (those that differ from job-exec's, which the launcher shares);
  ``exit-timeout``, seconds after the first task exits for the rest to
  exit (flux-core's default 30); ``exit-on-error``, True; ``task-env``, per
  task the variables of ``env-expand`` templates that name the task;
  ``tmpdir-env``, the names of variables whose ``{{tmpdir}}`` the shell
  fills in; ``ptys``, the ranks of the tasks that run on a pty
  (``pflux.shell.terminal``);
- ``pmi``: ``(ntasks, RFC 34 task map blocks)`` for the PMI-1 server
  (``pflux.shell.pmi``), or None where the ``pmi`` shell option turns it off
  or, unset, the job has one task (``pmi_enabled``).

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
from pflux.exec.shelloptions import Log, ShellOptions, shell_options
from pflux.shell.input import InputConfig, input_config
from pflux.shell.layout import Layout, layout, targets
from pflux.shell.output import (
    DEFAULT_LIMIT,
    OutputConfig,
    StreamConfig,
    output_config,
    output_paths,
)
from pflux.shell.terminal import pty_ranks
from pflux.spec.fluid import JobID
from pflux.spec.jobspec import JobspecView
from pflux.spec.shell_options import PMI_NAMES

__all__ = ["STREAMS", "Plan", "plan", "pmi_enabled"]

STREAMS = ("stdout", "stderr")


class Plan(NamedTuple):
    """A job's shell description, and what job-exec needs to build its output eventlog."""

    description: bytes
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
) -> Plan:
    """Plan job ``jobid``; PfluxError naming the problem if it cannot be run.

    ``tmp_parents`` are the directories ``FLUX_JOB_TMPDIR`` may be made in,
    best first; ``cpus`` those R's core ids map onto; ``output_limit`` the
    KVS output limit unless the job sets ``output.limit``.
    """
    try:
        spec = JobspecView(jobspec)
        places = layout(spec, targets(R))
        config = output_config(spec.shell_options.get("output", {}), output_limit)
        stdin = input_config(spec.shell_options.get("input", {}))
        pmi = pmi_enabled(spec.shell_options.get("pmi"), len(places.tasks))
        ptys = pty_ranks(spec.shell_options.get("pty"), len(places.tasks))
        argv = list(spec.command)
        env = dict(spec.environment)
        cwd = spec.cwd
        name = spec.name
        options: ShellOptions = shell_options(spec.shell_options, spec)
    except PfluxError as exc:
        raise PfluxError(f"invalid job: {exc}") from None
    except (LookupError, TypeError, ValueError, AttributeError, ArithmeticError) as exc:
        raise PfluxError(f"invalid job: {exc!r}") from None
    if not argv:
        raise PfluxError("invalid job: the command is empty")
    fluid = JobID(jobid)
    env["FLUX_JOB_ID"] = fluid.f58
    env["FLUX_JOB_SIZE"] = str(len(places.tasks))
    env["FLUX_JOB_NNODES"] = str(places.nnodes)
    env["PFLUX_URI"] = env["FLUX_URI"] = uri
    env["PFLUX_KVS_NAMESPACE"] = namespace
    if "HOSTNAME" in env:
        env["HOSTNAME"] = hostname
    tmp_name = f"jobtmp-0-{fluid.f58}"
    tmpdirs = tuple(os.path.join(parent, tmp_name) for parent in tmp_parents)
    tasks = options.tasks(places, cpus)
    extra = options.extra(env, jobid=fluid, name=name, places=places, hostname=hostname)
    logs = options.logs(places, cpus)
    redirects = []
    files: list[tuple[tuple[str, ...], bool, bool] | bool] = []
    for stream in STREAMS:
        conf: StreamConfig = getattr(config, stream)
        if conf.type == "file" and conf.path is not None:
            paths = output_paths(
                conf.path, stream, jobid=fluid, name=name, places=places, hostname=hostname
            )
            if paths and paths.count(paths[0]) == len(paths):
                # one file: said in the output eventlog, and sent once; a file per task
                # or node is not announced there, as in flux-core
                paths = paths[:1]
                redirects.append((stream, paths[0]))
            files.append((paths, conf.mode == "append", conf.label))
        else:
            files.append(conf.buffer == "line")
    if ptys:
        extra["ptys"] = ptys
    simple = (len(places.tasks), places.blocks) if pmi else None
    description = (
        argv, env, tasks, cwd, tmpdirs, hostname, stdin.path, files[0], files[1], extra, simple
    )  # fmt: skip
    return Plan(
        marshal.dumps(description),
        places,
        config,
        stdin,
        tuple(redirects),
        options.signal,
        logs,
        ptys,
    )


def pmi_enabled(value: object, ntasks: int) -> bool:
    """Whether the ``pmi`` shell option (a name, or a comma-separated list) asks for PMI-1.

    Unset, it does for a job of more than one task: a one-task MPI program
    starts as a singleton without it (MPICH's does), and the socket pair,
    polled and read to its end, is a cost every job would pay. ``off`` turns
    it off; any other name is refused, since this shell serves no other PMI.
    """
    if value is None:
        return ntasks > 1
    if not isinstance(value, str):
        raise PfluxError("shell option pmi must be a string")
    names = value.split(",")
    for name in names:
        if name not in PMI_NAMES:
            choices = ", ".join(PMI_NAMES)
            raise PfluxError(f"shell option pmi: unknown value '{name}' (one of {choices})")
    return any(name != "off" for name in names)
