"""What ``batch`` and ``alloc`` share: their options, and the job that runs a nested
instance (``flux broker [BROKER-OPTS] COMMAND``) over the slots they ask for.

As flux-core's, they ask for slots (``-n/--nslots`` of ``-c`` cores and ``-g``
GPUs each, or ``-N`` whole nodes) and the instance runs one broker on the first
node. pflux's instance spans one host, so the job has one task (a ``total``
task count of 1, where flux-core runs a broker per node): the broker's nested
instance manages the job's resources on that node (``pflux.cli.nested``).
``--broker-opts`` are checked against what ``pflux start`` honours
(``pflux.cli.start.check_broker_options``) before anything is submitted.
"""

from __future__ import annotations

import argparse
from typing import Any

from pflux.cli import jobopts
from pflux.errors import UsageError

__all__ = ["add_nest_options", "nest_request"]


def add_nest_options(parser: argparse.ArgumentParser) -> None:
    """The job options, by slots, with ``--broker-opts``, ``--conf`` and ``--uri``."""
    jobopts.add_options(parser, slots=True)
    group = parser.add_argument_group("instance")
    group.add_argument(
        "--broker-opts",
        "--broker-opt",
        dest="broker_opts",
        action="append",
        metavar="OPTS",
        help="options of the instance's broker, comma-separated (-Sstatedir=DIR, -v, ...)",
    )
    group.add_argument(
        "--conf",
        action="append",
        metavar="CONF",
        help="configuration of the instance (refused: pflux takes --broker-opts=-cFILE)",
    )
    group.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")


def nest_request(args: argparse.Namespace, command: list[str]) -> jobopts.JobRequest:
    """The request of a job whose one task is ``flux broker [OPTS] COMMAND``, sized by
    ``args``' slots (flux's rule: ``-N`` without ``-n`` is a slot per whole node)."""
    if args.conf:
        raise UsageError(
            f"--conf={args.conf[0]}: not supported by pflux"
            " (a configuration file may be given as --broker-opts=-cFILE)"
        )
    if args.ntasks is None and args.nodes is None:
        raise UsageError("Number of slots to allocate must be specified")
    from pflux.cli.start import check_broker_options

    broker_opts = [opt for value in args.broker_opts or () for opt in value.split(",") if opt]
    check_broker_options(broker_opts)
    args.command = ["flux", "broker", *broker_opts, *command]
    request = jobopts.request_for(args)
    jobspec: dict[str, Any] = request.jobspec
    jobspec["tasks"][0]["count"] = {"total": 1}
    return request
