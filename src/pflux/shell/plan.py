"""What a job shell runs, planned by job-exec: the shell's description and the job's output.

A shell is forked per job, and every page it writes after the fork costs a
page fault (about 5 us here): reading a jobspec and R in the shell cost more
than the rest of its work. So job-exec, a process that never forks, reads
them here (about 40 us) and sends the shell a ready-made description,
``marshal``-encoded (the launcher runs the same interpreter, and marshal
needs no import): a tuple

    (argv, env, tasks, cwd, tmpdirs, host, stdin, stdout, stderr)

- ``argv``: the command; ``env``: the environment every task shares (the
  jobspec's, with ``FLUX_JOB_ID``, ``FLUX_JOB_SIZE``, ``FLUX_JOB_NNODES``,
  ``PFLUX_URI``, ``FLUX_URI`` (the same) and ``PFLUX_KVS_NAMESPACE``; the shell adds
  ``FLUX_JOB_TMPDIR``);
- ``tasks``: per task ``(rank, local id, cpus, gpus)``: the CPUs to bind it
  to (None: all of the instance's) and its ``CUDA_VISIBLE_DEVICES``;
- ``cwd`` (None: the launcher's); ``tmpdirs``: where ``FLUX_JOB_TMPDIR``
  may be made, best first; ``host``: the host name that notes give;
- ``stdin``: the file each task reads its stdin from, or None for a pipe
  the shell feeds from the job's ``input`` (``pflux.shell.input``);
- ``stdout``, ``stderr``: ``(paths, append, label)`` for a stream written
  to files, ``paths`` one per task (or one for all of them); for one
  captured in the KVS, whether it is line-buffered (the shell sends whole
  lines, so that job-exec keeps no partial one).

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
from pflux.shell.input import InputConfig, input_config
from pflux.shell.layout import Layout, cpu_set, layout, targets
from pflux.shell.output import (
    DEFAULT_LIMIT,
    OutputConfig,
    StreamConfig,
    output_config,
    output_paths,
)
from pflux.spec.fluid import JobID
from pflux.spec.jobspec import Jobspec

__all__ = ["STREAMS", "Plan", "plan"]

STREAMS = ("stdout", "stderr")


class Plan(NamedTuple):
    """A job's shell description, and what job-exec needs to build its output eventlog."""

    description: bytes
    layout: Layout
    output: OutputConfig
    input: InputConfig
    redirects: tuple[tuple[str, str], ...]  # (stream, path) of each stream sent to one file

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
        spec = Jobspec(jobspec)
        places = layout(spec, targets(R))
        config = output_config(spec.shell_options.get("output", {}), output_limit)
        stdin = input_config(spec.shell_options.get("input", {}))
        argv = list(spec.command)
        env = dict(spec.environment)
        cwd = spec.cwd
        name = spec.name
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
    everywhere = set(cpus)
    tasks = []
    for place in places.tasks:
        want = cpu_set(place.cores, cpus)
        bind = tuple(sorted(want)) if want != everywhere else None
        gpus = ",".join(map(str, place.gpus)) if place.gpus else "-1"
        tasks.append((place.rank, place.local_id, bind, gpus))
    tmp_name = f"jobtmp-0-{fluid.f58}"
    tmpdirs = tuple(os.path.join(parent, tmp_name) for parent in tmp_parents)
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
    description = (argv, env, tasks, cwd, tmpdirs, hostname, stdin.path, files[0], files[1])
    return Plan(marshal.dumps(description), places, config, stdin, tuple(redirects))
