"""The asyncio client: each request method (``pflux.api.exchange``) awaited on an
``AsyncHandle``, a batch's requests in flight together, and what iterates written
for it as async iterators.

    async with pflux.AsyncClient() as client:
        jobid = await client.submit(["hostname"])
        print((await client.wait(jobid)).success)
"""

from __future__ import annotations

from collections.abc import (
    AsyncIterator,
    Callable,
    Coroutine,
    Iterable,
    Mapping,
    Sequence,
)
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from pflux.api import instance, jobqueue, jobs, kvs, sproc, submission
from pflux.api.driven import drive
from pflux.api.exchange import Call, Exchange, method_of
from pflux.api.instance import event_of
from pflux.api.jobs import matches, never_received
from pflux.api.kvs import kvs_payload
from pflux.api.streams import Eventlog, Execs, Logs, Walk, dmesg, logged
from pflux.api.submission import SUBMIT, SUBMIT_WINDOW, submit_payload, submit_window, urgency_of
from pflux.errors import PfluxError, RPCError
from pflux.spec.eventlog import Event
from pflux.spec.fluid import JobID
from pflux.spec.states import URGENCY_DEFAULT

if TYPE_CHECKING:
    import asyncio
    from typing import Unpack

    from pflux.api.jobhandle import AsyncJobHandle
    from pflux.api.kvswatch import AsyncKVSWatch
    from pflux.api.options import BuilderOptions
    from pflux.client.aio import AsyncHandle

P = ParamSpec("P")
T = TypeVar("T")


def awaited(
    describe: Callable[P, Exchange[T]], doc: str = ""
) -> Callable[Concatenate[AsyncClient, P], Coroutine[Any, Any, T]]:
    """``AsyncClient``'s method for the request method ``describe``, documented as
    ``Client``'s twin (and ``doc``)."""

    async def method(self: AsyncClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self._run(describe(*args, **kwargs))

    name = describe.__name__
    method_of(method, describe, "AsyncClient", f"As ``Client.{name}``{doc}.")
    return method


class AsyncClient:
    """The asyncio twin of Client, method for method.

    ``async with AsyncClient(uri) as client`` connects and closes; so does
    ``await AsyncClient.connect(uri)`` with ``close()``. ``timeout`` as Client's.
    """

    def __init__(self, uri: str | None = None, *, timeout: float | None = None) -> None:
        self.uri = uri
        self.timeout = timeout
        self._handle: AsyncHandle | None = None
        self._cached: dict[str, Any] = {}  # a ``cached`` call's answer, by topic

    @property
    def handle(self) -> AsyncHandle:
        """The connection; PfluxError before the client is connected."""
        if self._handle is None:
            raise PfluxError("AsyncClient: not connected (use `async with` or `connect`)")
        return self._handle

    @classmethod
    async def connect(cls, uri: str | None = None, *, timeout: float | None = None) -> AsyncClient:
        """A connected client; ``timeout`` as Client's."""
        client = cls(uri, timeout=timeout)
        await client.open()
        return client

    async def open(self) -> None:
        """Connect, if not connected already."""
        if self._handle is None:
            from pflux.client.aio import AsyncHandle  # asyncio only for those who use it

            self._handle = await AsyncHandle.connect(self.uri, timeout=self.timeout)
            if self._handle.hello is not None:  # the ping made on connecting
                self._cached["broker.ping"] = self._handle.hello

    async def __aenter__(self) -> AsyncClient:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection; the client cannot be used after."""
        if self._handle is not None:
            self._handle.close()

    async def _run(self, exchange: Exchange[T]) -> T:
        """Send each batch of the exchange's requests at once, then await its answers."""
        try:
            batch = next(exchange)
            while True:
                try:
                    answers = await self._answers(batch)
                except RPCError as exc:
                    batch = exchange.throw(exc)
                else:
                    batch = exchange.send(answers)
        except StopIteration as end:
            value: T = end.value
            return value

    async def _answers(self, batch: list[Call]) -> list[Any]:
        if len(batch) == 1:
            call = batch[0]
            if not call.cached:
                return [await self._answer(call)]
            if call.topic not in self._cached:
                self._cached[call.topic] = await self._answer(call)
            return [self._cached[call.topic]]
        import asyncio

        tolerant = any(call.tolerant for call in batch)
        answers = await asyncio.gather(
            *(self._answer(call) for call in batch), return_exceptions=tolerant
        )
        for call, answer in zip(batch, answers, strict=True):
            if isinstance(answer, BaseException) and not (
                call.tolerant and isinstance(answer, RPCError)
            ):
                raise answer
        return answers

    async def _answer(self, call: Call) -> Any:
        """One request's answer; a tolerant one's refusal."""
        try:
            if call.streaming:
                stream = self.handle.stream(call.topic, call.payload, nodeid=call.nodeid)
                return [reply async for reply in stream]
            return await self.handle.call(
                call.topic, call.payload, wait=call.wait, timeout=call.timeout, nodeid=call.nodeid
            )
        except RPCError as exc:
            if not call.tolerant:
                raise
            return exc

    def job(self, jobid: int) -> AsyncJobHandle:
        """A future for job ``jobid``, as ``Client.job``."""
        from pflux.api.jobhandle import AsyncJobHandle

        return AsyncJobHandle(self, jobid)

    async def submit_job(
        self,
        job: Mapping[str, Any] | Sequence[str],
        *,
        urgency: int | str = URGENCY_DEFAULT,
        waitable: bool = False,
        debug: bool = False,
        **options: Unpack[BuilderOptions],
    ) -> AsyncJobHandle:
        """``submit``, returning a future for the job rather than its id."""
        jobid = await self.submit(job, urgency=urgency, waitable=waitable, debug=debug, **options)
        return self.job(jobid)

    submit = awaited(submission.submit)
    submit_many = awaited(submission.submit_many, ": every request in flight at once")

    async def submit_each(
        self,
        jobspecs: Iterable[Mapping[str, Any]],
        *,
        urgency: int | str = URGENCY_DEFAULT,
        waitable: bool = False,
        debug: bool = False,
        window: int = SUBMIT_WINDOW,
    ) -> AsyncIterator[JobID | RPCError]:
        """As ``Client.submit_each``: at most ``window`` requests in flight, each
        jobspec taken when its request can go."""
        import asyncio
        from collections import deque

        urgency_of(urgency)
        window = submit_window(window)
        sign = await self._run(submission.signs())
        calls: deque[asyncio.Future[Any]] = deque()

        async def answer() -> JobID | RPCError:
            try:
                return JobID((await calls.popleft())["id"])
            except RPCError as exc:
                return exc

        try:
            try:
                for js in jobspecs:
                    if len(calls) >= window:
                        yield await answer()
                    payload = submit_payload(js, urgency, waitable, debug, sign)
                    calls.append(asyncio.ensure_future(self.handle.call(SUBMIT, payload)))
            except Exception:
                while calls:  # as Client.submit_each: the jobs sent answer first
                    yield await answer()
                raise
            while calls:
                yield await answer()
        finally:
            for call in calls:
                call.cancel()

    wait = awaited(submission.wait)
    reap = awaited(submission.reap)
    wait_all = awaited(submission.wait_all, ": all waits in flight at once")
    submit_dag = awaited(submission.submit_dag)
    run_dag = awaited(submission.run_dag)

    async def events(
        self,
        jobid: int,
        *,
        path: str = "eventlog",
        follow: bool = True,
        timeout: float | None = None,
    ) -> AsyncIterator[Event]:
        """As ``Client.events``."""
        if not follow:
            for event in logged(await self.read_log(jobid, path)):
                yield event
            return
        async for event in drive(self.handle, Eventlog(jobid, path), timeout):
            yield event

    async def events_many(
        self, jobids: Sequence[int], *, path: str = "eventlog"
    ) -> AsyncIterator[tuple[int, Event | RPCError]]:
        """As ``Client.events_many``."""
        async for index, item in self.follow_logs([(jobid, path) for jobid in jobids]):
            if item is not None:
                yield index, item

    async def follow_logs(
        self, logs: Sequence[tuple[int, str]]
    ) -> AsyncIterator[tuple[int, Event | RPCError | None]]:
        """As ``Client.follow_logs``, but the requests are sent when iteration begins."""
        async for item in drive(self.handle, Logs(logs)):
            yield item

    read_log = awaited(jobs.read_log)

    async def wait_event(
        self,
        jobid: int,
        name: str,
        *,
        match: Mapping[str, Any] | None = None,
        path: str = "eventlog",
    ) -> Event:
        """As ``Client.wait_event``."""
        async for event in self.events(jobid, path=path):
            if matches(event, name, match):
                return event
        raise never_received(name)

    raise_exception = awaited(jobs.raise_exception)
    cancel = awaited(jobs.cancel)
    kill = awaited(jobs.kill)
    send_stdin = awaited(jobs.send_stdin)
    send_winsize = awaited(jobs.send_winsize)
    raise_many = awaited(jobs.raise_many)
    kill_many = awaited(jobs.kill_many)
    urgency = awaited(jobs.urgency)
    memo = awaited(jobs.memo)
    list_jobs = awaited(jobs.list_jobs)
    job_info = awaited(jobs.job_info)
    lookup = awaited(jobs.lookup)
    job_info_many = awaited(jobs.job_info_many)
    attrs = awaited(instance.attrs)
    set_attr = awaited(instance.set_attr)
    hostpids = awaited(jobs.hostpids)

    async def rexec(
        self,
        ranks: Sequence[int],
        command: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str | None = None,
        stdin: bool = False,
    ) -> AsyncIterator[tuple[int, dict[str, Any] | RPCError | None]]:
        """As ``Client.rexec``, the items as an async iterator; no input is fed here
        (``stdin`` True is refused)."""
        from pflux.api.remote import exec_payload

        if stdin:
            raise PfluxError("rexec: stdin: only Client.rexec feeds a process's input")
        async for item in drive(self.handle, Execs(ranks, exec_payload(command, env, cwd, stdin))):
            yield item

    resource_status = awaited(instance.resource_status)
    resource_reload = awaited(instance.resource_reload)
    rexec_background = awaited(sproc.rexec_background)
    rexec_kill = awaited(sproc.rexec_kill)
    rexec_wait = awaited(sproc.rexec_wait)
    rexec_list = awaited(sproc.rexec_list)
    drain_resources = awaited(instance.drain_resources)
    undrain_resources = awaited(instance.undrain_resources)

    async def dmesg(
        self, *, follow: bool = False, new: bool = False
    ) -> AsyncIterator[dict[str, Any]]:
        """As ``Client.dmesg``, but the request is sent when the first entry is asked for."""
        call = dmesg(follow, new)
        async for entry in self.handle.stream(call.topic, call.payload):
            yield entry

    clear_log = awaited(instance.clear_log)
    shutdown = awaited(instance.shutdown)
    ping = awaited(instance.ping)
    ping_many = awaited(instance.ping_many)
    publish_event = awaited(instance.publish_event)

    async def subscribe(self, topics: Sequence[str]) -> AsyncIterator[dict[str, Any]]:
        """As ``Client.subscribe``, subscribed when the first event is asked for."""
        for topic in topics:
            await self.handle.call("event.subscribe", {"topic": topic})
        while True:
            yield event_of(await self.handle.next_event())

    log = awaited(instance.log)
    modules = awaited(instance.modules)
    config = awaited(instance.config)
    overlay_status = awaited(instance.overlay_status)
    kvs_get = awaited(kvs.kvs_get)
    kvs_put = awaited(kvs.kvs_put)
    kvs_ls = awaited(kvs.kvs_ls)
    kvs_readlink = awaited(kvs.kvs_readlink)
    kvs_commit = awaited(kvs.kvs_commit)

    async def kvs_walk(
        self, key: str = ".", *, namespace: str | None = None
    ) -> AsyncIterator[tuple[str, str]]:
        """As ``Client.kvs_walk``: iterate with ``async for``."""
        async for item in drive(self.handle, Walk(kvs_payload(namespace, key=key))):
            yield item

    kvs_namespaces = awaited(kvs.kvs_namespaces)
    kvs_namespace_create = awaited(kvs.kvs_namespace_create)
    kvs_namespace_remove = awaited(kvs.kvs_namespace_remove)
    kvs_dropcache = awaited(kvs.kvs_dropcache)
    kvs_version = awaited(kvs.kvs_version)
    kvs_wait_version = awaited(kvs.kvs_wait_version)

    def kvs_watch(
        self,
        keys: Sequence[str],
        *,
        append: bool = False,
        waitcreate: bool = False,
        namespace: str | None = None,
    ) -> AsyncKVSWatch:
        """As ``Client.kvs_watch``: iterate with ``async for``; the requests are sent
        when iteration begins."""
        from pflux.api.kvswatch import AsyncKVSWatch

        flags = {"append": append, "waitcreate": waitcreate}
        return AsyncKVSWatch(self.handle, [kvs_payload(namespace, key=k, **flags) for k in keys])

    raise_all = awaited(jobs.raise_all)
    update = awaited(jobs.update)
    last_jobs = awaited(jobs.last_jobs)
    purge = awaited(jobs.purge)
    purge_id = awaited(jobs.purge_id)
    job_stats = awaited(jobs.job_stats)
    alloc_query = awaited(jobqueue.alloc_query)
    queues = awaited(jobqueue.queues)
    queue_status = awaited(jobqueue.queue_status)
    queue_enable = awaited(jobqueue.queue_enable)
    queue_start = awaited(jobqueue.queue_start)
    drain = awaited(jobqueue.drain)
    idle = awaited(jobqueue.idle)
