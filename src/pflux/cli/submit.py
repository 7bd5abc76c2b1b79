"""``pflux submit [OPTIONS] COMMAND [ARGS...]``: enqueue a job, as ``flux submit`` does.

``--dry-run`` prints the jobspec instead (JSON as flux-core prints it, YAML with
``--format=yaml``). ``--cc``/``--bcc IDSET`` submit a copy per id (``{cc}`` in
the command line and option values becomes the id); all copies are in flight
at once. ``--wait``, ``--watch`` and ``--progress`` follow the jobs to the end.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from typing import TYPE_CHECKING, Any

from pflux.cli import base, jobopts
from pflux.errors import PfluxError, UsageError

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import TextIO

    from pflux.api import Client
    from pflux.errors import RPCError
    from pflux.spec.fluid import JobID


def main(argv: list[str]) -> int:
    """Entry point of ``pflux submit``."""
    parser = base.parser("submit", "Enqueue a job; --dry-run prints its jobspec instead.")
    parser.usage = f"{base.PROG} submit [OPTIONS...] COMMAND [ARGS...]"
    jobopts.add_options(parser)
    add_submission_options(parser)
    args = parser.parse_args(argv)
    return base.run("submit", lambda: _submit(args))


def add_submission_options(parser: argparse.ArgumentParser) -> None:
    """The options of ``submit`` and ``bulksubmit`` beyond the job's own."""
    group = parser.add_argument_group("submission")
    group.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    group.add_argument("--cc", metavar="IDSET", help="submit a copy per id; {cc} is the id")
    group.add_argument("--bcc", metavar="IDSET", help="as --cc, without setting FLUX_JOB_CC")
    group.add_argument("--wait", action="store_true", help="wait for the jobs to finish")
    group.add_argument(
        "--watch", action="store_true", help="show the jobs' output (implies --wait)"
    )
    group.add_argument("--progress", action="store_true", help="show a progress bar with jobs/s")
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


def _submit(args: argparse.Namespace) -> int:
    copies = cc_list(args)
    each = [with_cc(args, cc) for cc in copies]
    requests = [jobopts.request_for(one) for one in each]
    refuse_input_ranks("submit", requests)
    if args.cc:
        for cc, request in zip(copies, requests, strict=True):
            set_cc(request, cc)
    if args.dry_run:
        for request in requests:
            sys.stdout.write(jobopts.dry_run_text(request.jobspec, args.format))
        return 0
    return submit_all("submit", args, requests, [(one.log, one.log_stderr) for one in each])


def refuse_input_ranks(prog: str, requests: list[jobopts.JobRequest]) -> None:
    """``--input=RANKS`` feeds stdin at attach, which only ``run`` does."""
    for request in requests:
        if request.input_ranks is not None:
            raise UsageError(
                f"--input={request.input_ranks}: per-task input is not supported by {prog}"
            )


def set_cc(request: jobopts.JobRequest, cc: int | None) -> None:
    """``FLUX_JOB_CC=cc`` in the job's environment (``--cc``, not ``--bcc``)."""
    system = request.jobspec["attributes"]["system"]
    system.setdefault("environment", {})["FLUX_JOB_CC"] = str(cc)


def submit_all(
    prog: str,
    args: argparse.Namespace,
    requests: list[jobopts.JobRequest],
    logs: list[tuple[str | None, str | None]],
) -> int:
    """Submit every request at once, print each id (unless ``--quiet``) or refusal in
    order, then follow the jobs as ``--wait``, ``--watch`` and ``--progress`` ask.

    ``logs`` are each request's ``--log`` and ``--log-stderr`` files (None: stdout,
    stderr): the job's id, messages and watched output go there. The exit code is 1
    if a submission was refused, else the largest job exit code when the jobs were
    waited for, else 0."""
    from pflux.api import Client
    from pflux.errors import RPCError

    streams = _Streams()
    where = [streams.pair(log, log_stderr) for log, log_stderr in logs]

    follow = args.wait or args.watch
    with Client(args.uri) as client:
        from pflux.cli.requires import refuse_unmet

        refuse_unmet(client, (request.jobspec for request in requests))
        bar: Any = None
        if args.progress and not follow:
            from tqdm import tqdm

            bar = tqdm(total=len(requests), unit="job", dynamic_ncols=True)
        failed = 0
        jobids = []
        followed = []
        for answer, (out, err) in zip(_submitted(client, requests), where, strict=True):
            if bar is not None:
                bar.update(1)
            if isinstance(answer, RPCError):
                print(f"{base.PROG}-{prog}: ERROR: {answer}", file=err)
                failed += 1
                continue
            if not args.quiet:
                print(answer, file=out)
            jobids.append(answer)
            followed.append((out, err))
        streams.flush()
        if bar is not None:
            bar.close()
        code = 0
        if follow:
            from pflux.cli.watcher import Watcher

            watcher = Watcher(
                watch=args.watch,
                progress=args.progress,
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


def _submitted(client: Client, requests: list[jobopts.JobRequest]) -> Iterator[JobID | RPCError]:
    """Each request's job id or refusal, in order, every request in flight at once
    (copies differ in urgency only where ``--urgency`` names ``{cc}``)."""
    answers = [
        client.submit_each(
            [request.jobspec for request in same],
            urgency=urgency,
            waitable="waitable" in flags,
            debug="debug" in flags,
        )
        for (urgency, flags), same in _runs(requests)
    ]
    return itertools.chain.from_iterable(answers)


def _runs(
    requests: list[jobopts.JobRequest],
) -> Iterator[tuple[tuple[int, frozenset[str]], list[jobopts.JobRequest]]]:
    """The requests in order, in runs of the same urgency and flags."""
    for key, same in itertools.groupby(requests, lambda r: (r.urgency, r.flags)):
        yield key, list(same)


def cc_list(args: argparse.Namespace) -> list[int | None]:
    if args.cc and args.bcc:
        raise UsageError("specify only one of --cc or --bcc")
    text = args.cc or args.bcc
    if not text:
        return [None]
    from pflux.spec.idset import IdSet

    return list(IdSet.decode(text))


def with_cc(args: argparse.Namespace, cc: int | None) -> argparse.Namespace:
    """``args`` with every ``{cc}`` replaced by ``cc`` (flux substitutes in all arguments)."""
    if cc is None:
        return args
    values = {key: _replace(value, str(cc)) for key, value in vars(args).items()}
    return argparse.Namespace(**values)


def _replace(value: Any, cc: str) -> Any:
    if isinstance(value, str):
        return value.replace("{cc}", cc)
    if isinstance(value, list):
        return [_replace(item, cc) for item in value]
    if isinstance(value, tuple):
        return tuple(_replace(item, cc) for item in value)
    return value
