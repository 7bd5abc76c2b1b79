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
from typing import TYPE_CHECKING, Any

from pflux.cli import base

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from pflux.api import Client
    from pflux.cli.attach_signals import Signals
    from pflux.cli.attach_terminal import RawTerminal
    from pflux.cli.statusline import StatusLine

STDIN_CHUNK = 1 << 16  # bytes read from stdin, and sent, at a time
STDIN_IN_FLIGHT = 4  # stdin requests unanswered before reading stops
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
    parser.add_argument("jobid", help="job id (any encoding)")
    args = parser.parse_args(argv)

    def body() -> int:
        from pflux.api import Client
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
    """Forwarding standard input to the job, a chunk at a time, a few in flight."""

    def __init__(self, handle: Any, jobid: int, ranks: str) -> None:
        self.handle = handle
        self.jobid = jobid
        self.ranks = ranks
        self.reading = False  # the job runs and stdin is open
        self.in_flight = 0
        self.sent_data = False
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
        self.reading = True

    def wanted(self) -> bool:
        return self.reading and self.in_flight < STDIN_IN_FLIGHT

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
        from pflux.shell.input import data_context

        payload = {"id": int(self.jobid), **data_context(ranks, data, eof)}
        self.in_flight += 1
        self.handle.rpc("job-exec.stdin", payload).then(self._answered)

    def _answered(self, msg: Any) -> None:
        import errno

        self.in_flight -= 1
        if not msg.errnum:
            return
        self.reading = False
        if msg.errnum in (errno.ENOSYS, errno.EPIPE, errno.ENOENT):
            if self.sent_data:  # an end nobody takes is no loss; data is (flux-core)
                self.error = "stdin not accepted by job"
        elif self.error is None:
            self.error = msg.errstr


class _Attach:
    """The job's streams at once on one connection: its eventlog and output, and stdin."""

    def __init__(self, jobid: int, label_io: bool, show_events: bool, stdin: _Stdin | None) -> None:
        from pflux.spec.eventlog import EventlogReader
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
        self.events = EventlogReader()
        self.output = EventlogReader()
        self.exec_events = EventlogReader()
        self.t0 = 0.0
        self.exit_code = 0
        self.fatal = False
        self.open = 2
        self.error: Exception | None = None

    def on_event(self, msg: Any) -> None:
        from pflux.spec.results import exit_code, waitstatus_text

        if self._ended(msg):
            return
        for event in self.events.feed(msg.payload["data"]):
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
                    f" {context.get('note', '')}\n"
                )
                self.fatal = self.fatal or context.get("severity") == 0
            elif event.name == "finish":
                status = int(context.get("status", 0))
                self.exit_code = exit_code(status)
                if self.exit_code:
                    sys.stderr.write(f"pflux-job: {waitstatus_text(status)}\n")
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

    def on_exec_event(self, msg: Any) -> None:
        """The exec eventlog, watched for ``shell.start`` when stdin goes to some ranks."""
        if self._ended(msg):
            return
        for event in self.exec_events.feed(msg.payload["data"]):
            if event.name == "shell.start" and self.stdin is not None:
                taskmap = (event.context or {}).get("taskmap", {})
                blocks = taskmap.get("map", [])  # RFC 34: [node, nodes, tasks per node, repeat]
                ntasks = sum(block[1] * block[2] * block[3] for block in blocks)
                self.stdin.begin(ntasks)

    def on_output(self, msg: Any) -> None:
        if self._ended(msg):
            return
        out = sys.stdout
        self._raw()  # what the pty shows may come before the start event
        for event in self.output.feed(msg.payload["data"]):
            context = event.context or {}
            data = context.get("data")
            if event.name == "log":
                self._log(event.timestamp, context)
                continue
            if event.name != "data" or not isinstance(data, str):
                continue
            stream = sys.stderr if context.get("stream") == "stderr" else out
            if context.get("encoding") == "base64":
                import base64

                stream.flush()
                stream.buffer.write(base64.b64decode(data))
                stream.buffer.flush()
                continue
            if self.label_io:
                rank = context.get("rank", "0")
                data = "".join(f"{rank}: {line}" for line in data.splitlines(keepends=True))
            stream.write(data)
        out.flush()

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
        sys.stderr.write(f"{out}: {context.get('message', '')}\n")

    def _ended(self, msg: Any) -> bool:
        import errno

        from pflux.broker.message import RPCError

        if not msg.errnum:
            return False
        self.open -= 1
        if msg.errnum != errno.ENODATA and self.error is None:
            self.error = RPCError(msg.errnum, msg.errstr)
        return True


def attach(
    client: Client,
    jobid: int,
    *,
    label_io: bool = False,
    show_events: bool = False,
    stdin_ranks: str | None = None,
    signals: Signals | None = None,
    interactive: bool = False,
) -> int:
    """Follow job ``jobid`` with ``client`` until it is inactive; return its exit code.

    ``stdin_ranks`` (``all`` or an idset): forward this process's stdin to
    those tasks; None forwards nothing. ``signals``: the signals caught for
    the job (``catching``); detaching with Ctrl-C Ctrl-Z returns 1 at once,
    as ``flux job attach`` does. ``interactive``: the job's pty becomes this
    terminal once it runs (``attach_terminal``).
    """
    handle = client.handle
    stdin = _Stdin(handle, jobid, stdin_ranks) if stdin_ranks is not None else None
    state = _Attach(jobid, label_io, show_events, stdin)
    state.signals = signals
    if interactive:
        from pflux.cli.attach_terminal import RawTerminal

        state.terminal = RawTerminal(handle, jobid)
    watch = "job-info.eventlog-watch"
    handle.rpc(watch, {"id": int(jobid), "path": "eventlog"}, streaming=True, wait=True).then(
        state.on_event
    )
    handle.rpc(watch, {"id": int(jobid), "path": "guest.output"}, streaming=True, wait=True).then(
        state.on_output
    )
    if stdin is not None and stdin_ranks != "all":
        state.open += 1
        handle.rpc(
            watch, {"id": int(jobid), "path": "guest.exec.eventlog"}, streaming=True, wait=True
        ).then(state.on_exec_event)
    try:
        _loop(handle, state, signals)
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


def _loop(handle: Any, state: _Attach, signals: Signals | None) -> None:
    """Serve the streams until they end (or the client detaches), reading stdin
    whenever it can be sent, acting on caught signals and drawing the status line."""
    import select

    stdin = state.stdin
    status = state.status
    conn = handle.fileno()
    while state.open and not (signals is not None and signals.detached):
        handle.flush()
        fds = [conn]
        if signals is not None:
            fds.append(signals.fd)
        if stdin is not None and stdin.wanted():
            fds.append(0)
        timeout = status.timeout() if status is not None else None
        ready, _, _ = select.select(fds, [], [], timeout)
        if status is not None:
            status.tick()
        if signals is not None:
            # read even when select did not name it: a signal that came as select
            # returned for stdin was noted since, and goes before the keys typed after it
            signals.handle(handle, state.jobid)
        if conn in ready:
            handle.process(None)
        if 0 in ready and stdin is not None and stdin.wanted():
            stdin.read()
    if status is not None:
        status.end()
