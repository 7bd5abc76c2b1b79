"""``pflux job attach ID``: follow a job's output and events until it ends, as ``flux job attach``.

Output comes from the job's guest ``output`` eventlog, exceptions and the exit
status from its eventlog; the exit code is the job's (the largest task exit
code, 128+signal for a signalled task, 1 after a fatal exception).
"""

from __future__ import annotations

import sys
from typing import Any

from pflux.cli import base


def main(argv: list[str]) -> int:
    parser = base.parser("job attach", "Follow a job's output until it ends.")
    parser.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    parser.add_argument(
        "-l", "--label-io", action="store_true", help="prefix output with task rank"
    )
    parser.add_argument(
        "-E", "--show-events", action="store_true", help="print the job's events on stderr"
    )
    parser.add_argument("jobid", help="job id (any encoding)")
    args = parser.parse_args(argv)

    def body() -> int:
        from pflux.client.handle import Handle
        from pflux.spec.fluid import JobID

        jobid = JobID.parse(args.jobid)
        with Handle(args.uri) as handle:
            return attach(handle, jobid, label_io=args.label_io, show_events=args.show_events)

    return base.run("job attach", body)


class _Attach:
    """Two streams at once on one connection: the eventlog and the output eventlog."""

    def __init__(self, jobid: int, label_io: bool, show_events: bool) -> None:
        from pflux.spec.eventlog import EventlogReader
        from pflux.spec.fluid import JobID

        self.jobid = JobID(jobid)
        self.label_io = label_io
        self.show_events = show_events
        self.events = EventlogReader()
        self.output = EventlogReader()
        self.t0 = 0.0
        self.exit_code = 0
        self.fatal = False
        self.open = 2
        self.error: Exception | None = None

    def on_event(self, msg: Any) -> None:
        from pflux.manager.job import exit_code, waitstatus_text

        if self._ended(msg):
            return
        for event in self.events.feed(msg.payload["data"]):
            if not self.t0:
                self.t0 = event.timestamp
            context = event.context or {}
            if event.name == "exception":
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
            elif self.show_events:
                from pflux.spec.eventlog import format_text

                sys.stderr.write(format_text(event, time_format="offset", t0=self.t0) + "\n")

    def on_output(self, msg: Any) -> None:
        if self._ended(msg):
            return
        for event in self.output.feed(msg.payload["data"]):
            context = event.context or {}
            data = context.get("data")
            if event.name != "data" or not isinstance(data, str):
                continue
            stream = sys.stderr if context.get("stream") == "stderr" else sys.stdout
            if self.label_io:
                rank = context.get("rank", "0")
                data = "".join(f"{rank}: {line}" for line in data.splitlines(keepends=True))
            stream.write(data)
        sys.stdout.flush()

    def _ended(self, msg: Any) -> bool:
        import errno

        from pflux.broker.message import RPCError

        if not msg.errnum:
            return False
        self.open -= 1
        if msg.errnum != errno.ENODATA and self.error is None:
            self.error = RPCError(msg.errnum, msg.errstr)
        return True


def attach(handle: Any, jobid: int, *, label_io: bool = False, show_events: bool = False) -> int:
    """Follow job ``jobid`` on ``handle`` until it is inactive; return its exit code."""
    state = _Attach(jobid, label_io, show_events)
    handle.rpc(
        "job-info.eventlog-watch", {"id": int(jobid), "path": "eventlog"}, streaming=True
    ).then(state.on_event)
    handle.rpc(
        "job-info.eventlog-watch", {"id": int(jobid), "path": "guest.output"}, streaming=True
    ).then(state.on_output)
    while state.open:
        handle.process(None)
    if state.error is not None:
        raise state.error
    if state.fatal and state.exit_code == 0:
        return 1
    return state.exit_code
