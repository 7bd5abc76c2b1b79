"""``pflux alloc [OPTIONS] [COMMAND...]``: a nested instance over the slots asked
for, used interactively, as ``flux alloc``.

COMMAND runs as the instance's initial program (``flux broker COMMAND``,
``pflux.cli.nestjob``) and ``alloc`` exits with its status; without one, the
initial program is an interactive shell. On a terminal the job's pty becomes
this terminal (``-o pty.interactive``, as ``pflux run -o pty.interactive``);
without a terminal a shell is refused, as flux's broker refuses it. The job's
output is this process's: ``--output``, ``--error``, ``--input`` and
``--label-io`` are not alloc's options. ``--bg`` attaches to nothing: it waits
until the instance answers, prints the job id and exits, leaving the instance
(without COMMAND, one with no initial program) to run until ``pflux shutdown
JOBID``, a cancel or its time limit, as flux's.
"""

from __future__ import annotations

import sys

from pflux.cli import base, options
from pflux.errors import PfluxError, UsageError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

NO_TTY = "stdin is not a tty - can't run interactive shell"


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    return base.run("alloc", lambda: _alloc(args))


def _parser() -> options.OptionParser:
    from pflux.cli.nestjob import add_nest_options

    parser = base.options("alloc", "Run a nested instance interactively, with COMMAND or a shell.")
    parser.usage = f"{base.PROG} alloc [OPTIONS...] --nslots=N [COMMAND...]"
    add_nest_options(parser)
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="print the job id on stderr"
    )
    parser.add_argument(
        "--bg",
        action="store_true",
        help="wait for the new instance to start, but do not attach to it",
    )
    return parser


def _alloc(args: options.Args) -> int:
    for option in ("input", "output", "error"):
        if getattr(args, option) is not None:
            raise UsageError(f"--{option}: not an alloc option (its I/O is this terminal's)")
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    interactive = sys.stdin.isatty() and not args.bg
    if not command and not interactive and not args.bg:
        raise PfluxError(NO_TTY)
    from pflux.cli import jobopts
    from pflux.cli.nestjob import nest_request

    if interactive:
        args.setopt = [*(args.setopt or ()), "pty.interactive"]
    request = nest_request(args, command)
    if args.dry_run:
        sys.stdout.write(jobopts.dry_run_text(request.jobspec, args.format))
        return 0
    if args.bg:
        return _background(args.uri, request, verbose=args.verbose > 0)
    from pflux.cli.run import submit_attached

    return submit_attached(args.uri, request, verbose=args.verbose > 0, stdin_ranks="all")


def _background(uri: str | None, request: Any, *, verbose: bool) -> int:
    """Submit the instance, wait until it answers, print its job id (``--bg``)."""
    import time

    from pflux import Client

    def log(jobid: Any, t0: float, message: str) -> None:
        print(f"{jobid}: {time.time() - t0:6.3f}s: {message}", file=sys.stderr, flush=True)

    with Client(uri) as client:
        jobid = client.submit(
            request.jobspec,
            urgency=request.urgency,
            waitable="waitable" in request.flags,
            debug="debug" in request.flags,
        )
        t0 = time.time()
        if verbose:
            log(jobid, t0, "waiting for resources")
        try:
            nested = _posted(
                client, jobid, (lambda message: log(jobid, t0, message)) if verbose else None
            )
            if nested is None:  # it ended first: what it said tells why
                _say_why(client, jobid)
                raise PfluxError(f"{jobid}: unexpectedly exited")
            if verbose:
                log(jobid, t0, "waiting for instance")
            try:
                Client(nested).close()  # it answers: it takes jobs
            except PfluxError as exc:
                raise PfluxError(f"Unable to connect to {jobid}: {exc}") from None
        except KeyboardInterrupt:
            print(f"\r{jobid}: Interrupt: canceling job", file=sys.stderr)
            client.cancel(jobid)
            return 1
        if verbose:
            log(jobid, t0, "ready")
    print(jobid)
    return 0


def _posted(client: Any, jobid: Any, log: Any) -> str | None:
    """The URI the job's instance posts (its ``memo``); None if the job finishes first.
    ``log`` hears when the job's resources are allocated."""
    for event in client.events(jobid):
        context = event.context or {}
        if event.name == "alloc" and log is not None:
            log("resources allocated")
        elif event.name == "memo" and isinstance(context.get("uri"), str):
            uri: str = context["uri"]
            return uri
        elif event.name == "finish":
            return None
    return None


def _say_why(client: Any, jobid: Any) -> None:
    """A job that ended before its instance was up: its output and exception on stderr."""
    for event in client.events(jobid, path="guest.output", follow=False):
        data = (event.context or {}).get("data")
        if event.name == "data" and isinstance(data, str):
            sys.stderr.write(data)
    for event in client.events(jobid, follow=False):
        if event.name == "exception":
            note = (event.context or {}).get("note", "")
            sys.stderr.write(f"{jobid}: exception: {note}\n")
