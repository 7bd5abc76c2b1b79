"""The job manager's side of the execution protocol (RFC 32).

An execution service announces itself with ``exec-hello``; from then on each
job in RUN gets one streaming ``<service>.start`` whose responses (start,
exception, finish, release) become events. A conventional error response means
the service has died: nothing more is sent to it until a new hello.
"""

from __future__ import annotations

import errno
import logging
from typing import TYPE_CHECKING, Any

from pflux.broker.message import Message, RPCError
from pflux.broker.router import Request
from pflux.manager.states import SEVERITY_MAX, State
from pflux.spec.exec_protocol import ExecResponse

if TYPE_CHECKING:
    from pflux.manager.job import Job
    from pflux.manager.service import JobManager

log = logging.getLogger("pflux.job-manager")

EXPIRATION_NOTE = (  # flux-core's
    "failed to send expiration update to exec system:"
    " job termination may not coincide with expiration"
)


class StartClient:
    """Sends start requests and turns their responses into events."""

    def __init__(self, manager: JobManager) -> None:
        self.manager = manager
        self.service: str | None = None
        self.pending = 0  # start requests in flight

    @property
    def ready(self) -> bool:
        return self.service is not None

    def hello(self, req: Request) -> None:
        payload = req.payload if isinstance(req.payload, dict) else {}
        service = payload.get("service")
        if not isinstance(service, str) or not service:
            raise RPCError(errno.EPROTO, "exec-hello: service must be a non-empty string")
        if self.pending:
            raise RPCError(
                errno.EBUSY,
                f"exec-hello: {self.pending} start request(s) outstanding to {self.service}",
            )
        self.service = service
        log.info("execution service is %s", service)
        req.respond({})
        self.manager.advance_state(State.RUN)

    def start(self, job: Job) -> None:
        assert self.service is not None
        job.start_pending = True
        self.pending += 1
        payload = {
            "id": job.id,
            "userid": job.userid,
            "jobspec": job.jobspec,
            "reattach": job.reattach,
            "R": job.R,
        }
        self.manager.broker.send(
            f"{self.service}.start", payload, lambda msg: self._response(job, msg), streaming=True
        )

    def exception(self, job: Job) -> None:
        """Tell the service of ``job``'s fatal exception, so it kills the tasks."""
        job.exec_killed = True
        if self.service is None or job.exception is None:
            return
        etype, note = job.exception
        payload = {"id": job.id, "type": etype, "severity": 0, "note": note}
        self.manager.broker.send(f"{self.service}.exception", payload)

    def expiration(self, job: Job, expiration: float) -> None:
        """Tell the service of a running job's new expiration (after its resource-update)."""
        if self.service is None or not job.start_pending:
            return  # a start request, if one is sent, carries R with it

        def answered(msg: Message) -> None:
            # ENOENT: the job has just ended there; nothing left to time
            if msg.errnum not in (0, errno.ENOENT) and job.state & State.RUNNING:
                log.error("%s.expiration for %d failed: %s", self.service, job.id, msg.errstr)
                self.manager.raise_exception(job, "exec", EXPIRATION_NOTE, 1)

        payload = {"id": job.id, "expiration": expiration}
        self.manager.broker.send(f"{self.service}.expiration", payload, answered)

    async def kill(self, job: Job, signum: int) -> None:
        if self.service is None or not job.start_pending:
            raise RPCError(errno.EINVAL, "job is not running")
        await self.manager.broker.call(f"{self.service}.kill", {"id": job.id, "signum": signum})

    def _ended(self, job: Job) -> None:
        job.start_pending = False
        self.pending -= 1
        self.manager.advance(job)

    def _response(self, job: Job, msg: Message) -> None:
        if not job.start_pending:
            return
        if msg.errnum:
            log.error("%s.start for %d failed: %s", self.service, job.id, msg.errstr)
            self.service = None
            self.manager.raise_exception(job, "exec", f"execution service failed: {msg.errstr}")
            self._ended(job)
            return
        payload: dict[str, Any] = msg.payload if isinstance(msg.payload, dict) else {}
        kind = payload.get("type")
        data = payload.get("data")
        data = data if isinstance(data, dict) else {}
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None  # type: ignore[call-overload]
        if handler is None or payload.get("id") != job.id:
            log.error("%s.start: bad response for %d: %r", self.service, job.id, payload)
            return
        handler(self, job, data)

    def _on_start(self, job: Job, data: dict[str, Any]) -> None:
        self.manager.post(job, "start")

    def _on_exception(self, job: Job, data: dict[str, Any]) -> None:
        severity = data.get("severity", 0)
        if type(severity) is not int or not 0 <= severity <= SEVERITY_MAX:
            severity = 0
        etype = data.get("type")
        note = data.get("note", "")
        self.manager.raise_exception(
            job, etype if isinstance(etype, str) and etype else "exec", str(note), severity
        )
        if severity == 0:
            job.exec_killed = True  # the service raised it, so it knows

    def _on_finish(self, job: Job, data: dict[str, Any]) -> None:
        status = data.get("status")
        self.manager.post(job, "finish", {"status": status if type(status) is int else 0})

    def _on_release(self, job: Job, data: dict[str, Any]) -> None:
        ranks = data.get("ranks")
        final = data.get("final") is True
        ranks = ranks if isinstance(ranks, str) else "all"
        self.manager.post(job, "release", {"ranks": ranks, "final": final})
        if final:
            self._ended(job)


_HANDLERS = {
    ExecResponse.START: StartClient._on_start,
    ExecResponse.EXCEPTION: StartClient._on_exception,
    ExecResponse.FINISH: StartClient._on_finish,
    ExecResponse.RELEASE: StartClient._on_release,
}
