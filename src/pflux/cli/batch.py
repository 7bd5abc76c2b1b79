"""``pflux batch [OPTIONS] SCRIPT [ARGS...]`` (or ``--wrap CMD...``): submit a script
that runs as the initial program of a nested instance, as ``flux batch``.

The script (a file, or stdin without one; ``--wrap`` makes one of the command
line, or of stdin, under ``#!/bin/sh``) travels in the jobspec
(``attributes.system.files.script``, mode 0700); the job's shell writes it into
the job's ``FLUX_JOB_TMPDIR`` and the job runs ``flux broker {{tmpdir}}/script
ARGS`` (``pflux.cli.nestjob``), so the script's ``flux run`` and ``flux submit``
go to the nested instance and the job exits with the script's status. RFC 36
directives (``#flux: -N2``, ``pflux.spec.directives``) in the script apply
first, the command line's options over them. Output goes to
``flux-{{id}}.out`` in this directory unless ``--output`` says otherwise; the
job id alone is printed.
"""

from __future__ import annotations

import sys

from pflux.cli import base, options
from pflux.errors import PfluxError, SpecError, UsageError

SCRIPT_MODE = 0o100700  # a regular file, rwx for its owner (flux's)
DEFAULT_OUTPUT = "flux-{{id}}.out"


def _parser() -> options.OptionParser:
    from pflux.cli.nestjob import add_nest_options

    parser = base.options("batch", "Submit a batch script to run in a nested instance.")
    parser.usage = f"{base.PROG} batch [OPTIONS...] --nslots=N SCRIPT [ARGS...]"
    parser.add_argument(
        "--wrap",
        action="store_true",
        help="wrap the arguments (or stdin) in a /bin/sh script",
    )
    add_nest_options(parser)
    return parser


def main(argv: list[str]) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    return base.run("batch", lambda: _batch(parser, args, argv))


def _batch(parser: options.OptionParser, args: options.Args, argv: list[str]) -> int:
    _drop_separator(args)
    name, script = _script(args)
    if not args.wrap or not args.command:
        args = _with_directives(parser, name, script, argv)
        _drop_separator(args)
    if args.wrap:
        script = f"#!/bin/sh\n{script}"
    elif not script.startswith("#!"):
        raise UsageError(f"{name} does not appear to start with '#!'")
    if args.job_name is None:
        args.job_name = args.command[0] if args.command else "batch"
    if args.output is None:
        args.output = DEFAULT_OUTPUT
    from pflux.cli import jobopts
    from pflux.cli.nestjob import nest_request
    from pflux.cli.submit import Copy, refuse_input_ranks, submit_all

    script_args = [] if args.wrap else args.command[1:]
    request = nest_request(args, ["{{tmpdir}}/script", *script_args])
    refuse_input_ranks("batch", request)
    system = request.jobspec["attributes"]["system"]
    files = system.setdefault("files", {})
    files["script"] = {"mode": SCRIPT_MODE, "encoding": "utf-8", "data": script}
    from pflux.spec.jobspec import validate

    validate(request.jobspec)
    if args.dry_run:
        sys.stdout.write(jobopts.dry_run_text(request.jobspec, args.format))
        return 0
    for option in ("cc", "bcc", "wait", "watch", "progress", "quiet", "log", "log_stderr"):
        setattr(args, option, getattr(args, option, None))
    return submit_all("batch", args, [Copy(request, None, None)], 1)


def _drop_separator(args: options.Args) -> None:
    """``--`` between the options and the script (or ``--wrap``'s command) is no argument."""
    if args.command[:1] == ["--"]:
        del args.command[0]


def _script(args: options.Args) -> tuple[str, str]:
    """The script's name (its path, or ``stdin``) and text."""
    if args.wrap and args.command:
        return "wrap", " ".join(args.command) + "\n"
    if not args.command:
        return "stdin", _decode("stdin", sys.stdin.buffer.read())
    path = args.command[0]
    try:
        with open(path, "rb") as file:
            return path, _decode(path, file.read())
    except OSError as exc:
        raise PfluxError(f"{path}: {exc.strerror}") from None


def _decode(name: str, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(
            f"{name} does not appear to be a script, or failed to encode as utf-8"
        ) from None


def _with_directives(
    parser: options.OptionParser, name: str, script: str, argv: list[str]
) -> options.Args:
    """The options of the script's directives, then the command line's over them."""
    from pflux.spec.directives import parse_directives

    try:
        directives = parse_directives(script.splitlines())
    except SpecError as exc:
        raise UsageError(f"{name}: {exc}") from None
    args = None
    for directive in directives:
        try:
            args = parser.parse_args(directive.args, namespace=args)
        except SystemExit:
            print(
                f"{base.PROG}-batch: ERROR: argument parsing failed at {name}"
                f" line {directive.lineno}",
                file=sys.stderr,
            )
            raise
    return parser.parse_args(argv, namespace=args)
