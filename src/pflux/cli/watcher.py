"""Following many jobs at once on one connection: ``submit --wait/--watch/--progress``.

Each job's eventlog is one log followed; with ``watch`` its output is another.
``Client.follow_logs`` follows all of them on one connection, so following
10,000 jobs costs no thread or process each. Each job writes to its own streams
(``--log``, ``--log-stderr``); ``verbose`` logs each job's end (1) and every event
(2) as flux's job watcher does, in seconds from the first event seen.
"""

from __future__ import annotations

import sys

from pflux.cli import base
from pflux.cli.printable import printable
from pflux.errors import RPCError
from pflux.spec.results import exit_code, waitstatus_text

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, TextIO

    from pflux import Client
    from pflux.cli.progressbar import ProgressBar
    from pflux.spec.eventlog import Event
    from pflux.spec.fluid import JobID


class _Followed:
    __slots__ = ("err", "exit_code", "fatal", "id", "logs", "out", "state")

    def __init__(self, jobid: JobID, logs: int, streams: tuple[TextIO, TextIO]) -> None:
        self.id = jobid
        self.exit_code = 0
        self.fatal = False
        self.logs = logs  # those not ended yet
        self.out, self.err = streams
        self.state = "pending"  # for the progress bar's counts


class Watcher:
    """Follows submitted jobs until every one is inactive; ``exitcode`` is the largest."""

    def __init__(
        self,
        *,
        watch: bool,
        progress: bool,
        total: int,
        jps: bool = False,
        prog: str = "submit",
        verbose: int = 0,
        label_io: bool = False,
    ) -> None:
        self.watch = watch
        self.label_io = label_io  # each line of output prefixed by its task rank
        self.prog = prog
        self.verbose = verbose
        self.t0 = float("inf")  # the first event's time, which -v offsets count from
        self.exitcode = 0
        self.bar: ProgressBar | None = None
        if progress:
            from pflux.cli.progressbar import ProgressBar

            self.bar = ProgressBar(total, jps=jps, counts=True)
            self.bar.values["pending"] = total
            self.bar.start()

    def run(
        self,
        client: Client,
        jobids: Sequence[JobID],
        streams: Sequence[tuple[TextIO, TextIO]] | None = None,
    ) -> int:
        """Follow every job of ``jobids`` to its end, its output and messages going to
        its ``streams`` (stdout, stderr; default this process's); the largest exit code."""
        paths = ("eventlog", "guest.output") if self.watch else ("eventlog",)
        where = streams or [(sys.stdout, sys.stderr)] * len(jobids)
        jobs = [_Followed(jobid, len(paths), std) for jobid, std in zip(jobids, where, strict=True)]
        logs = [(job.id, path) for job in jobs for path in paths]
        for index, item in client.follow_logs(logs):
            job = jobs[index // len(paths)]
            if isinstance(item, RPCError):
                job.err.write(f"{base.PROG}-{self.prog}: {job.id}: {printable(item.errstr)}\n")
                self.exitcode = max(self.exitcode, 1)
            elif item is not None:
                if index % len(paths):
                    self._on_output(job, item)
                else:
                    self._on_event(job, item)
                continue
            job.logs -= 1
            if job.logs == 0:
                self._done(job)
        if self.bar is not None:
            self.bar.stop()
        return self.exitcode

    def _done(self, job: _Followed) -> None:
        code = job.exit_code or (1 if job.fatal else 0)
        self.exitcode = max(self.exitcode, code)
        if self.bar is not None:
            self._move(job, "failed" if code else "complete")
            self.bar.update(1)

    def _move(self, job: _Followed, state: str) -> None:
        """Count the job in ``state`` (pending, running, complete, failed) for the bar."""
        assert self.bar is not None
        counts = self.bar.values
        counts[job.state] -= 1
        counts[state] += 1
        job.state = state
        self.bar.update()

    def _on_event(self, job: _Followed, event: Event) -> None:
        context = event.context or {}
        if self.bar is not None and event.name == "alloc" and job.state == "pending":
            self._move(job, "running")
        self.t0 = min(self.t0, event.timestamp)
        if self.verbose > 1:
            text = "" if event.context is None else " " + _compact(event.context)
            self._log(job, event.timestamp, f"{event.name}{text}")
        if event.name == "exception" and context.get("severity") == 0:
            job.fatal = True
            if self.watch or self.bar is None:
                job.err.write(
                    f"{job.id}: exception: type={context.get('type')}"
                    f" note={printable(str(context.get('note', '')))}\n"
                )
        elif event.name == "finish":
            status = int(context.get("status", 0))
            job.exit_code = exit_code(status)
            if job.exit_code and self.bar is None:
                job.err.write(f"{job.id}: {waitstatus_text(status)}\n")
            if self.verbose:
                done = "failed" if status else "complete"
                self._log(job, event.timestamp, f"{done}: status={status}")

    def _log(self, job: _Followed, when: float, message: str) -> None:
        job.err.write(f"{job.id.f58}: {when - self.t0:4.3f}s: {printable(message)}\n")

    def _on_output(self, job: _Followed, event: Event) -> None:
        context = event.context or {}
        if event.name == "data" and isinstance(context.get("data"), str):
            stream = job.err if context.get("stream") == "stderr" else job.out
            if context.get("encoding") == "base64":  # bytes that are not UTF-8
                import base64

                stream.flush()
                stream.buffer.write(base64.b64decode(context["data"]))
                stream.buffer.flush()
            elif self.label_io:
                rank = context.get("rank", "")
                stream.write("".join(f"{rank}: {line}" for line in _lines(context["data"])))
            else:
                stream.write(context["data"])
        job.out.flush()


def _lines(data: str) -> list[str]:
    """``data`` in lines, each ending with a newline (one is added to a last partial line)."""
    return [line if line.endswith("\n") else line + "\n" for line in data.splitlines(True)]


def _compact(context: dict[str, Any]) -> str:
    import json

    return json.dumps(context, separators=(",", ":"), ensure_ascii=False)
