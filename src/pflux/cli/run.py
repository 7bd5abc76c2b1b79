"""``pflux run [OPTIONS] COMMAND [ARGS...]``: submit a job and attach to it, as ``flux run``.

The exit code is the job's: the largest task exit code, 128+signal for a task
killed by a signal, 1 after a fatal exception. Standard input goes to the
tasks, all of them or those ``--input=RANKS`` names (``--input=FILE`` makes
them read the file instead). Signals and the status line are those of
``pflux job attach``; ``-o pty.interactive`` makes this terminal the job's
(``attach_terminal``).
"""

from __future__ import annotations

from pflux.cli import base, jobopts

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from pflux.cli import options


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    return base.run("run", lambda: _run(args))


def _parser() -> options.OptionParser:
    parser = base.options("run", "Run a job interactively: submit it and follow its output.")
    parser.usage = f"{base.PROG} run [OPTIONS...] COMMAND [ARGS...]"
    jobopts.add_options(parser)
    parser.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    parser.add_argument(
        "-E", "--show-events", action="store_true", help="print the job's events on stderr"
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="print the job id on stderr; twice: the job's events too (as -E)",
    )
    return parser


def _run(args: options.Args) -> int:
    import sys

    if args.verbose > 2:
        from pflux.errors import UsageError

        raise UsageError("-v: at most twice (-vv shows the job's events)")
    request = jobopts.request_for(args)
    if args.dry_run:
        sys.stdout.write(jobopts.dry_run_text(request.jobspec, args.format))
        return 0
    # stdin goes to the tasks --input names (all by default), unless they read a file
    reads_file = args.input is not None and request.input_ranks is None
    return submit_attached(
        args.uri,
        request,
        verbose=args.verbose > 0,
        label_io=args.label_io,
        show_events=args.show_events or args.verbose > 1,
        stdin_ranks=None if reads_file else request.input_ranks or "all",
    )


def submit_attached(
    uri: str | None, request: jobopts.JobRequest, *, verbose: bool, **options: Any
) -> int:
    """Submit the job and attach to it (``run``, ``alloc``): its exit code.

    Signals are caught from before the submission, so none ends the client and
    leaves the job it submitted unattended. ``options`` are ``attach``'s.
    """
    import sys

    from pflux import Client
    from pflux.cli.attach_terminal import asks_interactive
    from pflux.cli.job_attach import attach, catching
    from pflux.cli.requires import refuse_unmet

    with Client(uri) as client, catching(True) as signals:
        refuse_unmet(client, [request.jobspec])
        jobid = client.submit(
            request.jobspec,
            urgency=request.urgency,
            waitable="waitable" in request.flags,
            debug="debug" in request.flags,
        )
        if verbose:
            print(f"jobid: {jobid}", file=sys.stderr, flush=True)
        interactive = asks_interactive(request.jobspec)
        return attach(client, jobid, signals=signals, interactive=interactive, **options)
