"""Following many jobs at once on one connection: ``submit --wait/--watch/--progress``.

Each job's eventlog is one stream; with ``watch`` its output is another. All of
them are served by one select loop (``Handle.process``), so following 10,000
jobs costs no thread or process each.
"""

from __future__ import annotations

import errno
import sys
from typing import Any

from pflux.client.handle import Handle
from pflux.spec.eventlog import EventlogReader
from pflux.spec.fluid import JobID
from pflux.spec.results import exit_code, waitstatus_text


class _Followed:
    __slots__ = ("events", "exit_code", "fatal", "id", "output", "streams")

    def __init__(self, jobid: JobID) -> None:
        self.id = jobid
        self.events = EventlogReader()
        self.output = EventlogReader()
        self.exit_code = 0
        self.fatal = False
        self.streams = 0


class Watcher:
    """Follows submitted jobs until every one is inactive; ``exitcode`` is the largest."""

    def __init__(self, handle: Handle, *, watch: bool, progress: bool, total: int) -> None:
        self.handle = handle
        self.watch = watch
        self.open = 0
        self.exitcode = 0
        self.bar: Any = None
        if progress:
            from tqdm import tqdm

            # tqdm's rate column is the jobs/s figure
            self.bar = tqdm(total=total, unit="job", dynamic_ncols=True)
        self.failed = 0

    def add(self, jobid: JobID) -> None:
        job = _Followed(jobid)
        self._stream(job, "eventlog", lambda msg: self._on_event(job, msg))
        if self.watch:
            self._stream(job, "guest.output", lambda msg: self._on_output(job, msg))

    def _stream(self, job: _Followed, path: str, callback: Any) -> None:
        job.streams += 1
        self.open += 1
        payload = {"id": int(job.id), "path": path}
        self.handle.rpc("job-info.eventlog-watch", payload, streaming=True, wait=True).then(
            callback
        )

    def run(self) -> int:
        while self.open:
            self.handle.process(None)
        if self.bar is not None:
            self.bar.close()
        return self.exitcode

    def _ended(self, job: _Followed, msg: Any) -> bool:
        if not msg.errnum:
            return False
        if msg.errnum != errno.ENODATA:
            sys.stderr.write(f"pflux-submit: {job.id}: {msg.errstr}\n")
            self.exitcode = max(self.exitcode, 1)
        self.open -= 1
        job.streams -= 1
        if job.streams == 0:
            self._done(job)
        return True

    def _done(self, job: _Followed) -> None:
        code = job.exit_code or (1 if job.fatal else 0)
        self.exitcode = max(self.exitcode, code)
        if self.bar is not None:
            self.failed += code != 0
            self.bar.set_postfix_str(f"failed={self.failed}", refresh=False)
            self.bar.update(1)

    def _on_event(self, job: _Followed, msg: Any) -> None:
        if self._ended(job, msg):
            return
        for event in job.events.feed(msg.payload["data"]):
            context = event.context or {}
            if event.name == "exception" and context.get("severity") == 0:
                job.fatal = True
                if self.watch or self.bar is None:
                    sys.stderr.write(
                        f"{job.id}: exception: type={context.get('type')}"
                        f" note={context.get('note', '')}\n"
                    )
            elif event.name == "finish":
                status = int(context.get("status", 0))
                job.exit_code = exit_code(status)
                if job.exit_code and self.bar is None:
                    sys.stderr.write(f"{job.id}: {waitstatus_text(status)}\n")

    def _on_output(self, job: _Followed, msg: Any) -> None:
        if self._ended(job, msg):
            return
        for event in job.output.feed(msg.payload["data"]):
            context = event.context or {}
            if event.name == "data" and isinstance(context.get("data"), str):
                stream = sys.stderr if context.get("stream") == "stderr" else sys.stdout
                if context.get("encoding") == "base64":  # bytes that are not UTF-8
                    import base64

                    stream.flush()
                    stream.buffer.write(base64.b64decode(context["data"]))
                    stream.buffer.flush()
                else:
                    stream.write(context["data"])
        sys.stdout.flush()
