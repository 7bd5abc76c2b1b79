"""``pflux job attach ID``: follow a job's output and events until it ends, as ``flux job attach``.

Output comes from the job's guest ``output`` eventlog, exceptions and the exit
status from its eventlog; the exit code is the job's (the largest task exit
code, 128+signal for a signalled task, 1 after a fatal exception).

Standard input is forwarded to the job's tasks (all of them, or those
``--stdin-ranks`` names) once they run, as ``job-exec.stdin`` requests that
job-exec appends to the guest ``input`` eventlog; the end of stdin closes the
tasks' stdin. With ``--stdin-ranks``, the other tasks' stdin is closed at
once, as flux-core does; ``--read-only`` forwards nothing and catches no
signals (``attach_signals``). At a terminal, a job with ``-o pty.interactive``
takes the terminal over (``attach_terminal``), as with ``pflux run``.
"""

from __future__ import annotations

import sys

from pflux.cli import base
from pflux.cli.printable import printable

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from contextlib import AbstractContextManager
    from typing import Any

    from pflux import Client, LogFollow
    from pflux.cli.attach_signals import Signals
    from pflux.cli.attach_terminal import RawTerminal
    from pflux.cli.statusline import StatusLine
    from pflux.errors import RPCError
    from pflux.spec.eventlog import Event

# bytes read from stdin at a time: Client.send_stdin sends them as pieces of 64 KiB,
# all in flight at once
STDIN_CHUNK = 1 << 18
# the logs followed, by their index in follow_logs: the exec eventlog only when needed
LOGS = ("eventlog", "guest.output", "guest.exec.eventlog")
EVENTLOG, OUTPUT, EXEC = range(3)
# labels of the shell's log levels (syslog's), as flux-core's attach prints them
_LOG_LEVELS = ("FATAL", "FATAL", "FATAL", "ERROR", " WARN", None, "DEBUG", "TRACE")


def main(argv: list[str]) -> int:
    parser = base.parser("job attach", "Follow a job's output until it ends.")
    parser.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    parser.add_argument(
        "-l", "--label-io", action="store_true", help="prefix output with task rank"
    )
    parser.add_argument(
        "-E", "--show-events", action="store_true", help="print the job's events on stderr"
    )
    parser.add_argument(
        "-i",
        "--stdin-ranks",
        metavar="RANKS",
        default="all",
        help="send standard input to only RANKS (default: all)",
    )
    parser.add_argument(
        "-r", "--read-only", action="store_true", help="do not forward standard input"
    )
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="print none of the shell's messages (its log, where output was redirected)",
    )
    parser.add_argument("jobid", help="job id (any encoding)")
    args = parser.parse_args(argv)

    def body() -> int:
        from pflux import Client
        from pflux.spec.fluid import JobID

        jobid = JobID.parse(args.jobid)
        stdin_ranks = None if args.read_only else _ranks(args.stdin_ranks)
        with Client(args.uri) as client, catching(not args.read_only) as signals:
            interactive = False
            if not args.read_only and sys.stdin.isatty():
                from pflux.cli.attach_terminal import looked_up

                interactive = looked_up(client, jobid)
            return attach(
                client,
                jobid,
                label_io=args.label_io,
                show_events=args.show_events,
                stdin_ranks=stdin_ranks,
                signals=signals,
                interactive=interactive,
                quiet=args.quiet,
            )

    return base.run("job attach", body)


def catching(wanted: bool) -> AbstractContextManager[Signals | None]:
    """The attach signals caught (``attach_signals``) while in the block, or None if not wanted."""
    if not wanted:
        import contextlib

        return contextlib.nullcontext()
    from pflux.cli.attach_signals import Signals

    return Signals()


def _ranks(text: str) -> str:
    """``all`` or an idset, checked here rather than by the job."""
    if text == "all":
        return text
    from pflux.errors import IdsetError, UsageError
    from pflux.spec.idset import IdSet

    try:
        return IdSet.decode(text).encode()
    except IdsetError as exc:
        raise UsageError(f"--stdin-ranks: {exc}") from None


def shown_event(event: Any, t0: float, prefix: str = "job") -> str:
    """``-E``'s line for an event, as flux's: ``0.012s: job.start {"key":value}``."""
    import json

    line = f"{event.timestamp - t0:.3f}s: {prefix}.{event.name}"
    if event.context:
        line += " " + json.dumps(event.context, separators=(",", ":"), ensure_ascii=False)
    return line


class _Stdin:
    """Forwarding standard input to the job, a chunk at a time (a few requests in flight)."""

    def __init__(self, client: Client, jobid: int, ranks: str) -> None:
        self.client = client
        self.jobid = jobid
        self.ranks = ranks
        self.reading = False  # the job runs and stdin is open
        self.sent_data = False
        self.refused = False  # a request was refused: forward nothing more
        self.error: str | None = None

    def begin(self, ntasks: int | None) -> None:
        """The tasks run: close the stdin of those not named, then forward."""
        if ntasks is not None and self.ranks != "all":
            from pflux.spec.idset import IdSet

            named = IdSet.decode(self.ranks)
            others = IdSet.range(0, ntasks - 1) - named if ntasks else IdSet()
            if others:
                self._send(others.encode(), b"", eof=True)
            if not named & IdSet.range(0, max(ntasks - 1, 0)):
                return  # none of the named tasks exists: nothing to forward to
        self.reading = not self.refused

    def read(self) -> None:
        """Stdin is readable: send what it holds, or its end."""
        import os

        try:
            data = os.read(0, STDIN_CHUNK)
        except OSError:
            data = b""
        if not data:
            self.reading = False
        else:
            self.sent_data = True
        self._send(self.ranks, data, eof=not data)

    def _send(self, ranks: str, data: bytes, *, eof: bool) -> None:
        import errno

        from pflux.errors import RPCError

        try:
            self.client.send_stdin(self.jobid, data, ranks=ranks, eof=eof)
        except RPCError as exc:
            self.reading = False
            self.refused = True
            if exc.errnum in (errno.ENOSYS, errno.EPIPE, errno.ENOENT):
                if self.sent_data:  # an end nobody takes is no loss; data is (flux-core)
                    self.error = "stdin not accepted by job"
            elif self.error is None:
                self.error = exc.errstr


class _Attach:
    """What the job's logs, followed at once, do: its eventlog, its output and, when
    stdin goes to some ranks, its exec eventlog."""

    def __init__(self, jobid: int, label_io: bool, show_events: bool, stdin: _Stdin | None) -> None:
        from pflux.spec.fluid import JobID

        self.jobid = JobID(jobid)
        self.status: StatusLine | None = None
        self.terminal: RawTerminal | None = None  # the job's pty is interactive
        self.signals: Signals | None = None
        if not show_events and sys.stderr.isatty():
            from pflux.cli import statusline

            if statusline.wanted(show_events):
                self.status = statusline.StatusLine(self.jobid.f58)
        self.label_io = label_io
        self.show_events = show_events
        self.stdin = stdin
        self.t0 = 0.0
        self.exit_code = 0
        self.fatal = False
        self.error: Exception | None = None
        self.quiet = False  # the shell's messages are not printed

    def on(self, log: int, item: Event | RPCError | None) -> None:
        """An item of log ``log`` (one of ``LOGS``): an event, its end, or its error."""
        if item is None:
            return
        if isinstance(item, Exception):
            if self.error is None:
                self.error = item
        elif log == EVENTLOG:
            self.on_event(item)
        elif log == OUTPUT:
            self.on_output(item)
        else:
            self.on_exec_event(item)

    def on_event(self, event: Event) -> None:
        from pflux.spec.results import exit_code, waitstatus_text

        if not self.t0:
            self.t0 = event.timestamp
        context = event.context or {}
        self._terminal(event.name, event.timestamp, context)
        if event.name == "exception":
            if self.status is not None:
                self.status.before_text()
            sys.stderr.write(
                f"{event.timestamp - self.t0:.3f}s: job.exception {self.jobid}"
                f" type={context.get('type')} severity={context.get('severity')}"
                f" {printable(str(context.get('note', '')))}\n"
            )
            self.fatal = self.fatal or context.get("severity") == 0
        elif event.name == "finish":
            status = int(context.get("status", 0))
            self.exit_code = exit_code(status)
            if self.exit_code:
                sys.stderr.write(f"{base.PROG}-job: {waitstatus_text(status)}\n")
        if self.show_events and event.name != "exception":
            sys.stderr.write(shown_event(event, self.t0) + "\n")
        if event.name == "start" and self.stdin is not None and self.stdin.ranks == "all":
            self.stdin.begin(None)
        elif event.name in ("finish", "clean") and self.stdin is not None:
            self.stdin.reading = False

    def _terminal(self, name: str, timestamp: float, context: dict[str, Any]) -> None:
        """What an event does to the terminal: the status line, an interactive pty's mode."""
        if self.status is not None:
            fatal = name == "exception" and context.get("severity") == 0
            self.status.event(name, timestamp, fatal)
        if self.terminal is None:
            return
        if name == "finish" or (name == "exception" and context.get("severity") == 0):
            self.terminal.end()  # before the job's last words
        elif name == "start":
            self._raw()

    def _raw(self) -> None:
        """The job runs: an interactive pty takes this terminal over (once)."""
        terminal = self.terminal
        if terminal is not None and not terminal.began:
            terminal.begin()
            if self.signals is not None:
                self.signals.on_winch(terminal.resize)

    def on_exec_event(self, event: Event) -> None:
        """The exec eventlog, watched for ``shell.start`` when stdin goes to some ranks."""
        if event.name == "shell.start" and self.stdin is not None:
            taskmap = (event.context or {}).get("taskmap", {})
            blocks = taskmap.get("map", [])  # RFC 34: [node, nodes, tasks per node, repeat]
            ntasks = sum(block[1] * block[2] * block[3] for block in blocks)
            self.stdin.begin(ntasks)

    def on_output(self, event: Event) -> None:
        out = sys.stdout
        self._raw()  # what the pty shows may come before the start event
        context = event.context or {}
        data = context.get("data")
        if event.name == "log":
            if not self.quiet:
                self._log(event.timestamp, context)
            return
        if event.name == "redirect" and self.quiet:
            return
        if event.name == "redirect":
            # where a stream went instead, as flux job attach tells it
            out.flush()
            path = context.get("path")
            where = f" to {path}" if isinstance(path, str) else ""
            line = (
                f"{context.get('rank', '0')}: {context.get('stream', 'stdout')} redirected{where}"
            )
            sys.stderr.write(f"{printable(line)}\n")
            return
        if event.name != "data" or not isinstance(data, str):
            return
        stream = sys.stderr if context.get("stream") == "stderr" else out
        if context.get("encoding") == "base64":
            import base64

            stream.flush()
            stream.buffer.write(base64.b64decode(data))
            stream.buffer.flush()
            return
        if self.label_io:
            rank = context.get("rank", "0")
            data = "".join(f"{rank}: {line}" for line in data.splitlines(keepends=True))
        stream.write(data)

    def _log(self, timestamp: float, context: dict[str, Any]) -> None:
        """A diagnostic of the job's shell, printed as flux-core's ``flux job attach`` does."""
        out = f"{timestamp - (self.t0 or timestamp):.3f}s: flux-shell"
        rank = context.get("rank", -1)
        if isinstance(rank, int) and rank >= 0:
            out += f"[{rank}]"
        level = context.get("level")
        label = _LOG_LEVELS[level] if isinstance(level, int) and 0 <= level < 8 else None
        if label:
            out += f": {label}"
        if context.get("component"):
            out += f": {context['component']}"
        sys.stdout.flush()
        sys.stderr.write(f"{out}: {printable(str(context.get('message', '')))}\n")


def attach(
    client: Client,
    jobid: int,
    *,
    label_io: bool = False,
    show_events: bool = False,
    stdin_ranks: str | None = None,
    signals: Signals | None = None,
    interactive: bool = False,
    quiet: bool = False,
) -> int:
    """Follow job ``jobid`` with ``client`` until it is inactive; return its exit code.

    ``stdin_ranks`` (``all`` or an idset): forward this process's stdin to
    those tasks; None forwards nothing. ``signals``: the signals caught for
    the job (``catching``); detaching with Ctrl-C Ctrl-Z returns 1 at once,
    as ``flux job attach`` does. ``interactive``: the job's pty becomes this
    terminal once it runs (``attach_terminal``). ``quiet``: the shell's messages (its
    log, where output was redirected) are not printed.
    """
    stdin = _Stdin(client, jobid, stdin_ranks) if stdin_ranks is not None else None
    state = _Attach(jobid, label_io, show_events, stdin)
    state.signals = signals
    state.quiet = quiet
    if interactive:
        from pflux.cli.attach_terminal import RawTerminal

        state.terminal = RawTerminal(client, jobid)
    # the exec eventlog says how many tasks there are, for stdin sent to some of them
    logs = LOGS if stdin is not None and stdin_ranks != "all" else LOGS[:EXEC]
    follow = client.follow_logs([(jobid, path) for path in logs])
    try:
        _loop(client, follow, state, signals)
    finally:
        if state.terminal is not None:
            state.terminal.end()
    if signals is not None and signals.detached:
        return 1
    if state.error is not None:
        raise state.error
    if stdin is not None and stdin.error is not None:
        from pflux.errors import PfluxError

        raise PfluxError(stdin.error)
    if state.fatal and state.exit_code == 0:
        return 1
    return state.exit_code


def _loop(client: Client, follow: LogFollow, state: _Attach, signals: Signals | None) -> None:
    """Follow the logs until they end (or the client detaches), reading stdin
    whenever it can be sent, acting on caught signals and drawing the status line."""
    import select

    stdin = state.stdin
    status = state.status
    conn = follow.fileno()
    _take(follow, state)
    while follow.following and not (signals is not None and signals.detached):
        fds = [conn]
        if signals is not None:
            fds.append(signals.fd)
        if stdin is not None and stdin.reading:
            fds.append(0)
        timeout = status.timeout() if status is not None else None
        ready, _, _ = select.select(fds, [], [], timeout)
        if status is not None:
            status.tick()
        if signals is not None:
            # read even when select did not name it: a signal that came as select
            # returned for stdin was noted since, and goes before the keys typed after it
            signals.handle(client, state.jobid)
        # what arrived goes first: the job's end stops its input
        _take(follow, state)
        if 0 in ready and stdin is not None and stdin.reading:
            stdin.read()
            _take(follow, state)  # what arrived while the input was sent
    if status is not None:
        status.end()


def _take(follow: LogFollow, state: _Attach) -> None:
    """Act on what the logs have brought, without waiting.

    Acting may send a request (a terminal's size) whose wait reads on the
    connection: what arrived meanwhile is taken too, since the connection
    will not be readable for it again.
    """
    while items := follow.poll():
        for log, item in items:
            state.on(log, item)
    sys.stdout.flush()
