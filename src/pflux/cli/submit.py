"""``pflux submit [OPTIONS] COMMAND [ARGS...]``: enqueue a job, as ``flux submit`` does.

``--dry-run`` prints the jobspec instead (JSON as flux-core prints it, YAML with
``--format=yaml``). ``--cc``/``--bcc IDSET`` submit a copy per id (``{cc}`` in
the command line and option values becomes the id). The copies are built as
they are sent, a window of them in flight (``Client.submit_each``): a million
copies cost the client a window's memory, and the first ids print while the rest
are still to be built; where no option names ``{cc}``, the jobspec is built once
and each copy differs only in its ``FLUX_JOB_CC``, and where ``{cc}`` is only in the
command, the name, ``--cwd`` or the output paths, the copies are made from one
template (``jobtemplate``). A copy whose options turn out
bad stops the submission there, the copies before it submitted (as flux-core's).
``--wait``, ``--watch`` and ``--progress`` follow the jobs to the end.
"""

from __future__ import annotations

import itertools
import sys

from pflux.cli import base, jobopts, jobtemplate, options
from pflux.cli.printable import printable
from pflux.errors import PfluxError, UsageError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections import deque
    from collections.abc import Callable, Collection, Iterable, Iterator
    from typing import Any, NamedTuple, TextIO

    from pflux import Client
    from pflux.errors import RPCError
    from pflux.spec.fluid import JobID
else:
    from _collections import deque  # without the collections package, a command's import

    from pflux.spec.typedtuple import NamedTuple


def main(argv: list[str]) -> int:
    """Entry point of ``pflux submit``."""
    args = _parser().parse_args(argv)
    return base.run("submit", lambda: _submit(args))


def _parser() -> options.OptionParser:
    parser = base.options("submit", "Enqueue a job; --dry-run prints its jobspec instead.")
    parser.usage = f"{base.PROG} submit [OPTIONS...] COMMAND [ARGS...]"
    jobopts.add_options(parser)
    add_submission_options(parser)
    return parser


def add_submission_options(parser: options.OptionParser) -> None:
    """The options of ``submit`` and ``bulksubmit`` beyond the job's own."""
    group = parser.add_argument_group("submission")
    group.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    group.add_argument("--cc", metavar="IDSET", help="submit a copy per id; {cc} is the id")
    group.add_argument("--bcc", metavar="IDSET", help="as --cc, without setting FLUX_JOB_CC")
    group.add_argument("--wait", action="store_true", help="wait for the jobs to finish")
    group.add_argument(
        "--watch", action="store_true", help="show the jobs' output (implies --wait)"
    )
    group.add_argument(
        "--progress",
        action="store_true",
        help="show the progress of submission, or of the jobs with --wait (a terminal only)",
    )
    group.add_argument("--jps", action="store_true", help="with --progress, show jobs/s")
    group.add_argument("--quiet", action="store_true", help="do not print job ids")
    group.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="with --wait or --watch, log each job's end on stderr; twice: every event",
    )
    group.add_argument(
        "--log", metavar="FILE", help="print job ids, and messages, to FILE ({cc} allowed)"
    )
    group.add_argument("--log-stderr", metavar="FILE", help="print messages to FILE ({cc} allowed)")


def _submit(args: options.Args) -> int:
    ccs = cc_list(args)
    build = jobtemplate.Templates(jobopts.Requests())
    copies = copies_of("submit", args, ccs, cc_env=bool(args.cc), build=build)
    if args.dry_run:
        for copy in copies:
            sys.stdout.write(jobopts.dry_run_text(copy.request.jobspec, args.format))
        return 0
    return submit_all("submit", args, primed(copies), len(ccs))


class Copy(NamedTuple):
    """One job to submit: its request, and its ``--log`` and ``--log-stderr`` files."""

    request: jobopts.JobRequest
    log: str | None
    log_stderr: str | None


def copies_of(
    prog: str,
    args: options.Args,
    ccs: Collection[int | None],
    *,
    cc_env: bool,
    build: Callable[[options.Args], jobopts.JobRequest],
) -> Iterator[Copy]:
    """A copy of the job ``args`` describe per id of ``ccs``, each built by ``build`` as
    it is taken (``cc_env``: with ``FLUX_JOB_CC`` set, as ``--cc`` and not ``--bcc``
    does). Where no option names ``{cc}`` the copies differ only in that variable: the
    request is built once, here, so bad options are refused before anything is sent."""
    dests = _cc_dests(args) if _copied(ccs) else []
    if not dests:
        request = refuse_input_ranks(prog, build(args))
        return (
            Copy(_with_cc_env(request, cc) if cc_env else request, args.log, args.log_stderr)
            for cc in ccs
        )
    return _built_each(prog, args, ccs, dests=dests, cc_env=cc_env, build=build)


def _built_each(
    prog: str,
    args: options.Args,
    ccs: Collection[int | None],
    *,
    dests: Collection[str],
    cc_env: bool,
    build: Callable[[options.Args], jobopts.JobRequest],
) -> Iterator[Copy]:
    for cc in ccs:
        one = _with_cc_in(args, dests, cc)
        request = refuse_input_ranks(prog, build(one))
        yield Copy(_with_cc_env(request, cc) if cc_env else request, one.log, one.log_stderr)


def _copied(ccs: Collection[int | None]) -> bool:
    """Whether ``ccs`` (``cc_list``) are ids, with ``{cc}`` to replace, rather than the
    one job of a submission without ``--cc`` or ``--bcc``."""
    return not (len(ccs) == 1 and None in ccs)


def _cc_dests(args: options.Args) -> list[str]:
    """The options (``args``' names) whose values hold ``{cc}``."""
    return [dest for dest, value in vars(args).items() if _holds_cc(value)]


def _holds_cc(value: Any) -> bool:
    if isinstance(value, str):
        return "{cc}" in value
    if isinstance(value, (list, tuple)):
        return any(_holds_cc(item) for item in value)
    return False


def refuse_input_ranks(prog: str, request: jobopts.JobRequest) -> jobopts.JobRequest:
    """``request``, unless it asks ``--input=RANKS``: that feeds stdin at attach, which
    only ``run`` does."""
    if request.input_ranks is not None:
        raise UsageError(
            f"--input={request.input_ranks}: per-task input is not supported by {prog}"
        )
    return request


def _with_cc_env(request: jobopts.JobRequest, cc: int | None) -> jobopts.JobRequest:
    """``request`` with ``FLUX_JOB_CC=cc`` in the job's environment, sharing the rest
    of its jobspec (copies of a large environment would cost a copy each)."""
    jobspec = request.jobspec
    attributes = jobspec["attributes"]
    system = attributes["system"]
    environment = {**system.get("environment", {}), "FLUX_JOB_CC": str(cc)}
    system = {**system, "environment": environment}
    jobspec = {**jobspec, "attributes": {**attributes, "system": system}}
    return request._replace(jobspec=jobspec)


def primed(copies: Iterator[Copy]) -> Iterator[Copy]:
    """``copies`` with the first one built now: options bad for every copy are refused
    before the instance is asked anything."""
    first = next(copies, None)
    return copies if first is None else itertools.chain((first,), copies)


def submit_all(prog: str, args: options.Args, copies: Iterable[Copy], total: int) -> int:
    """Submit the ``total`` copies as they are built, a window in flight, print each id
    (unless ``--quiet``) or refusal in order, then follow the jobs as ``--wait``,
    ``--watch`` and ``--progress`` ask.

    A copy's ``log`` and ``log_stderr`` (None: stdout, stderr) are where its id,
    messages and watched output go. The exit code is 1 if a submission was refused,
    else the largest job exit code when the jobs were waited for, else 0."""
    from pflux import Client
    from pflux.errors import RPCError

    streams = _Streams()
    follow = args.wait or args.watch
    with Client(args.uri) as client:
        from pflux.cli.requires import UnmetCheck

        unmet = UnmetCheck(client)
        where: deque[tuple[TextIO, TextIO]] = deque()  # the streams of the copies in flight

        def requests() -> Iterator[jobopts.JobRequest]:
            for copy in copies:
                unmet.check(copy.request.jobspec)
                where.append(streams.pair(copy.log, copy.log_stderr))
                yield copy.request

        progress = False
        bar = None
        if args.progress:  # the bar's module (and its datetime) only where asked for
            from pflux.cli import progressbar

            progress = progressbar.wanted(args.progress)
            if progress and not follow:
                bar = progressbar.ProgressBar(total, jps=args.jps, counts=False).start()
        failed = 0
        jobids = []
        followed = []
        for answer in _submitted(client, requests()):
            out, err = where.popleft()
            if bar is not None:
                bar.update(1)
            if isinstance(answer, RPCError):
                print(f"{base.PROG}-{prog}: ERROR: {printable(str(answer))}", file=err)
                failed += 1
                continue
            if not args.quiet:
                out.write(f"{answer}\n")
            if follow:
                jobids.append(answer)
                followed.append((out, err))
        streams.flush()
        if bar is not None:
            bar.stop()
        code = 0
        if follow:
            from pflux.cli.watcher import Watcher

            watcher = Watcher(
                watch=args.watch,
                progress=progress,
                jps=args.jps,
                total=len(jobids),
                prog=prog,
                verbose=args.verbose,
            )
            code = watcher.run(client, jobids, followed)
        streams.close()
        return max(code, 1 if failed else 0)


class _Streams:
    """The files ``--log`` and ``--log-stderr`` name, each opened once (line-buffered,
    as they are read while jobs run), and this process's stdout and stderr."""

    def __init__(self) -> None:
        self.files: dict[str, TextIO] = {}

    def pair(self, log: str | None, log_stderr: str | None) -> tuple[TextIO, TextIO]:
        out = self.open(log) if log else sys.stdout
        err = self.open(log_stderr) if log_stderr else out if log else sys.stderr
        return out, err

    def open(self, path: str) -> TextIO:
        if path not in self.files:
            try:
                self.files[path] = open(path, "w", buffering=1, encoding="utf-8")  # noqa: SIM115
            except OSError as exc:
                raise PfluxError(f"{path}: {exc.strerror or exc}") from None
        return self.files[path]

    def flush(self) -> None:
        sys.stdout.flush()
        for file in self.files.values():
            file.flush()

    def close(self) -> None:
        sys.stdout.flush()
        for file in self.files.values():
            file.close()


def _submitted(
    client: Client, requests: Iterator[jobopts.JobRequest]
) -> Iterator[JobID | RPCError]:
    """Each request's job id or refusal, in order, a window in flight, in runs of the same
    urgency and flags (copies differ in urgency only where ``--urgency`` names ``{cc}``)."""
    for (urgency, flags), same in itertools.groupby(requests, lambda r: (r.urgency, r.flags)):
        yield from client.submit_each(
            (request.jobspec for request in same),
            urgency=urgency,
            waitable="waitable" in flags,
            debug="debug" in flags,
        )


def cc_list(args: options.Args) -> Collection[int | None]:
    """The ids of ``--cc`` or ``--bcc`` (an IdSet: a million of them cost nothing until
    taken), else one copy, None."""
    if args.cc and args.bcc:
        raise UsageError("specify only one of --cc or --bcc")
    text = args.cc or args.bcc
    if not text:
        return [None]
    from pflux.spec.idset import IdSet

    return IdSet.decode(text)


def _with_cc_in(args: options.Args, dests: Collection[str], cc: int | None) -> options.Args:
    """``args`` with every ``{cc}`` replaced by ``cc`` (flux substitutes in all arguments);
    ``dests`` (``_cc_dests``) are the options that hold one."""
    if cc is None:
        return args
    one = options.Args()
    values = vars(one)
    values.update(vars(args))
    text = str(cc)
    for dest in dests:
        values[dest] = _replace(values[dest], text)
    return one


def _replace(value: Any, cc: str) -> Any:
    if isinstance(value, str):
        return value.replace("{cc}", cc)
    if isinstance(value, list):
        return [_replace(item, cc) for item in value]
    if isinstance(value, tuple):
        return tuple(_replace(item, cc) for item in value)
    return value
