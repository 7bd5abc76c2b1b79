"""``exec [OPTIONS] COMMAND...``: run a command on ranks of the instance, outside any job.

Each rank's ``rexec`` service runs the command (as the instance owner, in this
command's working directory and environment) and streams its output back; this
command's standard input goes to every rank (``-n``: none), its signals (SIGINT,
SIGTERM) to every process. The exit code is flux's: the largest of the commands'
(128+N for signal N; 127 a command not found, 126 one not permitted, 68 a rank
unreachable), and ``[RANKS]: Exit N`` on stderr for each code above 0 (``-q``: not).

``--bg`` starts the processes and prints ``RANK: PID`` for each once it has started,
leaving them to run (their output is the broker's); ``--waitable`` keeps each once
ended until ``sproc wait`` takes its status. ``--label`` names the processes (for
``sproc``, in the foreground too). ``-j/--jobid``
runs on the ranks of a running job of the instance owner's, ``-r``/``-x`` counting
the job's ranks from 0.
"""

from __future__ import annotations

import argparse
import errno
import os
import selectors
import signal
import sys

from pflux.cli import base
from pflux.errors import PfluxError, RPCError, UsageError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from pflux import Client, Remote

CHUNK = 65536


def parser() -> argparse.ArgumentParser:
    p = base.parser("exec", "Run a command on ranks of the instance, outside any job.")
    p.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    p.add_argument("-r", "--rank", default="all", metavar="IDSET", help="ranks (default: all)")
    p.add_argument("-x", "--exclude", metavar="IDSET", help="ranks to leave out")
    p.add_argument("-d", "--dir", metavar="PATH", help="working directory (default: this one)")
    p.add_argument("-l", "--label-io", action="store_true", help="prefix output with its rank")
    p.add_argument("-n", "--noinput", action="store_true", help="the commands read /dev/null")
    p.add_argument(
        "-v", "--verbose", action="store_true", help="say when each process starts and ends"
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no summary of failed ranks")
    p.add_argument("--bg", action="store_true", help="run the processes in the background")
    p.add_argument(
        "--waitable", action="store_true", help="keep each once ended until its status is taken"
    )
    p.add_argument("--label", metavar="LABEL", help="a name for the processes")
    p.add_argument("-j", "--jobid", metavar="JOBID", help="run on the ranks of this job")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the command and its arguments")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    return base.run("exec", lambda: _exec(args))


def _ranks(args: argparse.Namespace, targets: list[int]) -> list[int]:
    """``--rank`` less ``--exclude``, as indices into ``targets`` (the instance's ranks,
    or a job's), every one named checked against them."""
    from pflux.errors import IdsetError
    from pflux.spec.idset import IdSet

    size = len(targets)
    try:
        chosen = set(range(size)) if args.rank == "all" else set(IdSet.decode(args.rank))
        excluded = set(IdSet.decode(args.exclude)) if args.exclude else set()
    except IdsetError as exc:
        raise UsageError(f"--rank/--exclude: {exc}") from None
    if any(rank >= size for rank in chosen):
        raise PfluxError(f"One or more invalid --ranks specified: {args.rank}")
    ranks = [targets[index] for index in sorted(chosen - excluded)]
    if not ranks:
        raise PfluxError("No targets specified")
    return ranks


def _job_ranks(client: Client, text: str, owner: int) -> list[int]:
    """The broker ranks of running job ``text``, which must be the instance owner's."""
    from pflux.spec.fluid import JobID
    from pflux.spec.idset import IdSet
    from pflux.spec.states import State

    try:
        jobid = JobID.parse(text)
    except ValueError:
        raise PfluxError(f'error parsing jobid: "{text}"') from None
    try:
        job = client.job_info(jobid, ["state", "ranks", "userid"])
    except RPCError as exc:
        if exc.errnum == errno.ENOENT:
            raise PfluxError(f"job {text} not found") from None
        raise PfluxError(f"unable to get info for job {text}: {exc.errstr}") from None
    if job.state != State.RUN:
        raise PfluxError(f"job {text} is not currently running")
    if job.userid != owner:
        raise PfluxError(f"job {text}: --jobid is only for jobs of the instance owner")
    if not job.ranks:
        raise PfluxError(f"failed to get assigned ranks for {text}")
    return list(IdSet.decode(job.ranks))


class _Process:
    """One rank's process as this command follows it."""

    def __init__(self, rank: int) -> None:
        self.rank = rank
        self.pid = 0
        self.done = False
        self.code = 0
        self.why = ""  # "Exit N" or the signal's name, for the summary
        self.partial = {"stdout": b"", "stderr": b""}  # a line not ended yet, with -l


class _Exec:
    """What the processes say, as flux exec prints it."""

    def __init__(self, args: argparse.Namespace, ranks: list[int]) -> None:
        self.args = args
        self.procs = {rank: _Process(rank) for rank in ranks}

    def on(self, rank: int, entry: dict[str, Any] | RPCError | None) -> None:
        proc = self.procs[rank]
        if entry is None or isinstance(entry, RPCError):
            if isinstance(entry, RPCError):
                self._failed(proc, entry.errnum, entry.errstr)
            proc.done = True
            self._flush(proc)
            return
        kind = entry.get("type")
        if kind == "started":
            proc.pid = entry["pid"]
            if self.args.verbose:
                print(f"{proc.rank}: started pid {proc.pid}", file=sys.stderr)
        elif kind == "output":
            data = entry["data"]
            raw = _b64(data) if entry.get("encoding") == "base64" else data.encode()
            self._output(proc, entry["stream"], raw)
        elif kind == "finished":
            self._finished(proc, entry["status"])

    def _failed(self, proc: _Process, errnum: int, errstr: str) -> None:
        command = self.args.command[0]
        print(f"{base.PROG}-exec: Error: rank {proc.rank}: {command}: {errstr}", file=sys.stderr)
        codes = {errno.EPERM: 126, errno.EACCES: 126, errno.ENOENT: 127, errno.EHOSTUNREACH: 68}
        proc.code = codes.get(errnum, 1)

    def _finished(self, proc: _Process, status: int) -> None:
        signum = status & 0x7F
        if signum:
            proc.code = 128 + signum
            proc.why = signal.strsignal(signum) or f"Signal {signum}"
        else:
            proc.code = (status >> 8) & 0xFF
            proc.why = f"Exit {proc.code}" if proc.code else ""
        if self.args.verbose:
            print(f"{proc.rank}: pid {proc.pid} ended: status={status}", file=sys.stderr)

    def _output(self, proc: _Process, stream: str, data: bytes) -> None:
        out = sys.stderr if stream == "stderr" else sys.stdout
        if self.args.label_io:
            data = proc.partial[stream] + data
            lines = data.split(b"\n")
            proc.partial[stream] = lines.pop()
            data = b"".join(f"{proc.rank}: ".encode() + line + b"\n" for line in lines)
        out.flush()
        out.buffer.write(data)
        out.buffer.flush()

    def _flush(self, proc: _Process) -> None:
        """A last line with no newline, labelled."""
        for stream, rest in proc.partial.items():
            if rest:
                proc.partial[stream] = b""
                out = sys.stderr if stream == "stderr" else sys.stdout
                out.buffer.write(f"{proc.rank}: ".encode() + rest)
                out.buffer.flush()

    def summary(self) -> int:
        from pflux.spec.idset import IdSet

        if not self.args.quiet:
            by_reason: dict[str, list[int]] = {}
            for proc in self.procs.values():
                if proc.why:
                    by_reason.setdefault(proc.why, []).append(proc.rank)
            for why, ranks in by_reason.items():
                print(f"{IdSet(ranks).encode(brackets=True)}: {why}", file=sys.stderr)
        return max((proc.code for proc in self.procs.values()), default=0)


def _b64(text: str) -> bytes:
    import base64

    return base64.b64decode(text)


def _exec(args: argparse.Namespace) -> int:
    from pflux import Client

    if not args.command:
        raise UsageError("COMMAND: required")
    if args.waitable and not args.bg:
        raise UsageError("--waitable can only be used with --bg")
    cwd = args.dir or os.getcwd()
    stdin = not args.noinput
    with Client(args.uri) as client:
        attrs = client.attrs()
        if args.jobid is not None:
            targets = _job_ranks(client, args.jobid, int(attrs["security.owner"]))
        else:
            targets = list(range(int(attrs["size"])))
        ranks = _ranks(args, targets)
        if args.bg:
            return _background(client, args, ranks, cwd)
        run = _Exec(args, ranks)
        if args.label is None:
            remote = client.rexec(ranks, args.command, env=os.environ, cwd=cwd, stdin=stdin)
        else:  # Client.rexec's request, with the label
            from pflux import Remote

            payload = {"cmd": args.command, "env": dict(os.environ), "cwd": cwd, "stdin": stdin}
            remote = Remote(client.handle, ranks, {**payload, "label": args.label})
        caught: list[int] = []
        handlers = {
            signum: signal.signal(signum, lambda signum, _frame: caught.append(signum))
            for signum in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            _follow(run, remote, stdin, caught)
        finally:
            for signum, handler in handlers.items():
                signal.signal(signum, handler)
    return run.summary()


def _background(client: Client, args: argparse.Namespace, ranks: list[int], cwd: str) -> int:
    """Start the command on each rank, printing ``RANK: PID`` for each, in rank order."""
    started = client.rexec_background(
        ranks,
        args.command,
        env=os.environ,
        cwd=cwd,
        waitable=args.waitable,
        label=args.label,
    )
    code = 0
    for rank, pid in zip(ranks, started, strict=True):
        if isinstance(pid, RPCError):
            print(
                f"{base.PROG}-exec: Error: rank {rank}: {args.command[0]}: {pid.errstr}",
                file=sys.stderr,
            )
            code = 1
        else:
            print(f"{rank}: {pid}", flush=True)
    return code


def _follow(run: _Exec, remote: Remote, stdin: bool, caught: list[int]) -> None:
    """Follow the processes to their end, feeding them stdin once each has started."""
    selector = selectors.DefaultSelector()
    selector.register(remote.fileno(), selectors.EVENT_READ, "remote")
    reading = False
    while remote.running:
        if stdin and not reading and remote.running <= remote.pids.keys():
            reading = True
            try:
                selector.register(sys.stdin.fileno(), selectors.EVENT_READ, "stdin")
            except PermissionError:  # a file (epoll takes none): always readable, read it all
                while data := os.read(sys.stdin.fileno(), CHUNK):
                    remote.write(data)
                remote.write(b"", eof=True)
                stdin = False
        for key, _ in selector.select(1.0):
            if key.data == "stdin":
                data = os.read(sys.stdin.fileno(), CHUNK)
                remote.write(data, eof=not data)
                if not data:
                    selector.unregister(sys.stdin.fileno())
                    stdin = False
        while caught:
            remote.kill(caught.pop(0))
        for rank, entry in remote.poll():
            run.on(rank, entry)
