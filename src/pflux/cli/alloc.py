"""``pflux alloc [OPTIONS] [COMMAND...]``: a nested instance over the slots asked
for, used interactively, as ``flux alloc``.

COMMAND runs as the instance's initial program (``flux broker COMMAND``,
``pflux.cli.nestjob``) and ``alloc`` exits with its status; without one, the
initial program is an interactive shell. On a terminal the job's pty becomes
this terminal (``-o pty.interactive``, as ``pflux run -o pty.interactive``);
without a terminal a shell is refused, as flux's broker refuses it. The job's
output is this process's: ``--output``, ``--error``, ``--input`` and
``--label-io`` are not alloc's options.
"""

from __future__ import annotations

import argparse
import sys

from pflux.cli import base
from pflux.errors import PfluxError, UsageError

NO_TTY = "stdin is not a tty - can't run interactive shell"


def main(argv: list[str]) -> int:
    from pflux.cli.nestjob import add_nest_options

    parser = base.parser("alloc", "Run a nested instance interactively, with COMMAND or a shell.")
    parser.usage = f"{base.PROG} alloc [OPTIONS...] --nslots=N [COMMAND...]"
    add_nest_options(parser)
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="print the job id on stderr"
    )
    args = parser.parse_args(argv)
    return base.run("alloc", lambda: _alloc(args))


def _alloc(args: argparse.Namespace) -> int:
    for option in ("input", "output", "error"):
        if getattr(args, option) is not None:
            raise UsageError(f"--{option}: not an alloc option (its I/O is this terminal's)")
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    interactive = sys.stdin.isatty()
    if not command and not interactive:
        raise PfluxError(NO_TTY)
    from pflux.cli import jobopts
    from pflux.cli.nestjob import nest_request

    if interactive:
        args.setopt = [*(args.setopt or ()), "pty.interactive"]
    request = nest_request(args, command)
    if args.dry_run:
        sys.stdout.write(jobopts.dry_run_text(request.jobspec, args.format))
        return 0
    from pflux.cli.run import submit_attached

    return submit_attached(args.uri, request, verbose=args.verbose > 0, stdin_ranks="all")
