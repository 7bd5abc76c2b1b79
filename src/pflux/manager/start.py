"""The job manager's side of the execution protocol (RFC 32).

An execution service announces itself with ``exec-hello``; from then on each
job in RUN gets one streaming ``<service>.start`` whose responses (start,
exception, finish, release) become events.  As in flux-core's
``job-manager/start.c``:

- A new hello replaces the loaded service (the simulator overrides job-exec
  this way), but is refused while any job has a start request outstanding.
- A conventional error response to a start request, or the disconnection of
  the service that said hello, means the service has died: every job's start
  request is forgotten (debug jobs get ``debug.start-lost``), the jobs wait in
  RUN, and nothing more is sent until a new hello, which sends each of them a
  start request again, with ``reattach`` set for those that had started.
  Unlike flux-core, a disconnection is that new hello from the last service
  inside the broker that said hello (job-exec, or the simulator): a client
  that says hello and hangs up cannot leave the instance without one.
  Responses from a service that is no longer the loaded one are ignored.
- ``release`` responses before the final one return their ranks to the
  scheduler at once (``AllocClient.release``); the final one ends the stream.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pflux.broker.router import LocalRoute, Request
from pflux.errors import RPCError
from pflux.protocol.decode import decode
from pflux.protocol.exec import (
    DATA,
    ExceptionData,
    ExceptionRequest,
    ExecExpirationRequest,
    ExecResponse,
    FinishData,
    KillRequest,
    ReleaseData,
    StartData,
    StartRequest,
    StartResponse,
)
from pflux.protocol.manager import ExecHelloRequest
from pflux.protocol.message import Message
from pflux.spec.states import State

if TYPE_CHECKING:
    from pflux.manager.hosts import StartHost
    from pflux.manager.job import Job

log = logging.getLogger("pflux.job-manager")

EXPIRATION_NOTE = (  # flux-core's
    "failed to send expiration update to exec system:"
    " job termination may not coincide with expiration"
)


class _Hello:
    """The loaded service's hello request, to notice its sender going away."""

    __slots__ = ("client", "generation", "req")

    def __init__(self, client: StartClient, req: Request, generation: int) -> None:
        self.client = client
        self.req = req
        self.generation = generation

    def __call__(self) -> None:
        if self.generation == self.client.generation:
            self.client.teardown("disconnect")
            self.client.fall_back()


class StartClient:
    """Sends start requests and turns their responses into events."""

    def __init__(self, manager: StartHost) -> None:
        self.manager = manager
        self.service: str | None = None
        self.generation = 0  # bumped by every hello and teardown: older responses are stale
        self.pending: dict[Job, None] = {}  # jobs whose start request is in flight
        self.unstarted: dict[Job, None] = {}  # of those, the ones not yet answered ``start``
        self._hello: _Hello | None = None
        # the last service that said hello from inside the broker: it outlives any connection
        self.builtin: str | None = None

    @property
    def ready(self) -> bool:
        return self.service is not None

    def hello(self, req: Request) -> None:
        service = decode("job-manager.exec-hello", req.payload, ExecHelloRequest).service
        if not req.owner:
            raise RPCError(errno.EPERM, "exec-hello: only the instance owner may say hello")
        if self.pending:
            # flux-core answers EINVAL: the loaded service must be idle to be overridden
            raise RPCError(
                errno.EINVAL,
                f"exec-hello: {len(self.pending)} job(s) have a start request outstanding"
                f" to {self.service}",
            )
        self._forget_hello()
        if isinstance(req.sender, LocalRoute):
            self.builtin = service
        self._load(service)
        self._hello = _Hello(self, req, self.generation)
        req.on_disconnect(self._hello)
        req.respond({})
        self.manager.advance_state(State.RUN)

    def _load(self, service: str) -> None:
        self.service = service
        self.generation += 1
        log.info("execution service is %s", service)

    def fall_back(self) -> None:
        """The connection that said hello went away: the service inside the broker takes over
        its jobs (reattaching those that had started), rather than none until a restart."""
        if self.service is None and self.builtin is not None:
            self._load(self.builtin)
            self.manager.advance_state(State.RUN)

    def teardown(self, why: str) -> None:
        """The service is gone: forget its start requests; the jobs wait for a new hello."""
        if self.service is None:
            return
        log.error("execution service %s stopped (%s); waiting for a new one", self.service, why)
        self._forget_hello()
        self.service = None
        self.generation += 1
        lost, self.pending = list(self.pending), {}
        self.unstarted = {}
        for job in lost:
            job.start_pending = False
            if job.debug:
                self.manager.post(job, "debug.start-lost", {"note": why})
        for job in lost:
            self.manager.advance(job)  # a job already ending may now free its resources
        self.manager.quiescence.poke()

    def _forget_hello(self) -> None:
        if self._hello is not None:
            self._hello.req.forget_disconnect(self._hello)
            self._hello = None

    def start(self, job: Job) -> None:
        assert self.service is not None
        job.start_pending = True
        self.pending[job] = None
        self.unstarted[job] = None
        request = StartRequest(
            id=job.id,
            userid=job.userid,
            jobspec=job.jobspec,
            R=job.R,
            reattach=job.reattach or job.started,
            J=job.J,
        )
        generation = self.generation
        self.manager.broker.send(
            f"{self.service}.start",
            request,
            lambda msg: self._response(job, generation, msg),
            streaming=True,
        )

    def exception(self, job: Job) -> None:
        """Tell the service of ``job``'s fatal exception, so it kills the tasks."""
        job.exec_killed = True
        if self.service is None or job.exception is None:
            return
        etype, note = job.exception
        request = ExceptionRequest(id=job.id, type=etype, severity=0, note=note)
        self.manager.broker.send(f"{self.service}.exception", request)

    def expiration(self, job: Job, expiration: float) -> None:
        """Tell the service of a running job's new expiration (after its resource-update)."""
        if self.service is None or not job.start_pending:
            return  # a start request, if one is sent, carries R with it

        def answered(msg: Message) -> None:
            # ENOENT: the job has just ended there; nothing left to time
            if msg.errnum not in (0, errno.ENOENT) and job.state & State.RUNNING:
                log.error("%s.expiration for %d failed: %s", self.service, job.id, msg.errstr)
                self.manager.raise_exception(job, "exec", EXPIRATION_NOTE, 1)

        request = ExecExpirationRequest(id=job.id, expiration=expiration)
        self.manager.broker.send(f"{self.service}.expiration", request, answered)

    async def kill(self, job: Job, signum: int) -> None:
        if self.service is None or not job.start_pending:
            raise RPCError(errno.EINVAL, "job is not running")
        request = KillRequest(id=job.id, signum=signum)
        await self.manager.broker.call(f"{self.service}.kill", request)

    def _ended(self, job: Job) -> None:
        job.start_pending = False
        self.pending.pop(job, None)
        self._started(job)
        self.manager.advance(job)

    def _started(self, job: Job) -> None:
        if job in self.unstarted:
            del self.unstarted[job]
            self.manager.quiescence.poke()

    def _response(self, job: Job, generation: int, msg: Message) -> None:
        if generation != self.generation or job not in self.pending:
            return  # from a service torn down or replaced since, or after the final release
        if msg.errnum:
            log.error("%s.start for %d failed: %s", self.service, job.id, msg.errstr)
            self.teardown(f"start response error: {msg.errstr}")
            return
        topic = f"{self.service}.start"
        try:
            answer = decode(topic, msg.payload, StartResponse)
            if answer.id != job.id:
                raise RPCError(errno.EPROTO, f"{topic}: id: expected {job.id}, got {answer.id}")
            kind, data = DATA[answer.type], answer.data
            if data.__class__ is not kind:  # not typed by a service in this process
                data = decode(f"{topic}: {answer.type.value}", data, kind)
        except RPCError as exc:  # the service is broken: say so, and end the job
            log.error("bad response for %d: %s", job.id, exc.errstr)
            self.manager.raise_exception(job, "exec", f"bad response: {exc.errstr}")
            return
        _HANDLERS[answer.type](self, job, data)

    def _on_start(self, job: Job, data: StartData) -> None:
        if not job.started:  # a reattached job is not started twice
            self.manager.post(job, "start")
        self._started(job)

    def _on_exception(self, job: Job, data: ExceptionData) -> None:
        self.manager.raise_exception(job, data.type or "exec", data.note, data.severity)
        if data.severity == 0:
            job.exec_killed = True  # the service raised it, so it knows

    def _on_finish(self, job: Job, data: FinishData) -> None:
        self.manager.post(job, "finish", {"status": data.status})

    def _on_release(self, job: Job, data: ReleaseData) -> None:
        self.manager.post(job, "release", {"ranks": data.ranks, "final": data.final})
        if data.final:
            self._ended(job)
        else:
            self.manager.alloc.release(job, data.ranks)


_HANDLERS: dict[ExecResponse, Callable[[StartClient, Job, Any], None]] = {
    ExecResponse.START: StartClient._on_start,
    ExecResponse.EXCEPTION: StartClient._on_exception,
    ExecResponse.FINISH: StartClient._on_finish,
    ExecResponse.RELEASE: StartClient._on_release,
}
