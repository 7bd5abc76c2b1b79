"""The blocking client: each request method (``pflux.api.exchange``) sent and waited
for on a ``Handle``, and what iterates written for it (events and logs followed,
``submit_each``'s window, KVS walks and watches, ``rexec`` and its input).

    with pflux.Client() as client:
        job = client.submit_job(["hostname"], num_tasks=2)
        print(job.result().success)
"""

from __future__ import annotations

from pflux.api import instance, jobqueue, jobs, kvs, sproc, submission
from pflux.api.exchange import Call, Exchange, method_of
from pflux.api.instance import event_of
from pflux.api.jobs import matches, never_received
from pflux.api.kvs import kvs_payload
from pflux.api.submission import SUBMIT, SUBMIT_WINDOW, submit_payload, submit_window, urgency_of
from pflux.client.handle import Handle
from pflux.errors import RPCError
from pflux.spec.eventlog import Event
from pflux.spec.fluid import JobID
from pflux.spec.statebits import URGENCY_DEFAULT

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections import deque
    from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
    from typing import Any, Concatenate, ParamSpec, TypeVar, Unpack

    from pflux.api.jobhandle import JobHandle
    from pflux.api.kvswatch import KVSWatch
    from pflux.api.logfollow import LogFollow
    from pflux.api.options import BuilderOptions
    from pflux.api.remote import Remote
    from pflux.client.handle import RPC

    P = ParamSpec("P")
    T = TypeVar("T")
else:
    from _collections import deque  # the collections package costs a command more


def blocking(describe: Callable[P, Exchange[T]]) -> Callable[Concatenate[Client, P], T]:
    """``Client``'s method for the request method ``describe``: it returns the answer."""

    def method(self: Client, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._run(describe(*args, **kwargs))

    method_of(method, describe, "Client", describe.__doc__ or "")
    return method


class Client:
    """A blocking client of one instance (``uri``, else PFLUX_URI, else the system instance).

    An answer not asked to be waited for (anything but ``wait``, ``drain``, ``idle``
    and following events) comes within ``timeout`` seconds (else PFLUX_TIMEOUT, else
    10; 0: no limit), or RPCTimeout; connecting to what does not answer as an
    instance in that time raises NoInstanceError.
    """

    def __init__(self, uri: str | None = None, *, timeout: float | None = None) -> None:
        self.handle = Handle(uri, timeout=timeout)
        # a ``cached`` call's answer, by topic: the ping made on connecting is one
        hello = self.handle.hello
        self._cached: dict[str, Any] = {} if hello is None else {"broker.ping": hello}

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection; the client cannot be used after."""
        self.handle.close()

    def _run(self, exchange: Exchange[T]) -> T:
        """Send each batch of the exchange's requests at once, then wait for its answers."""
        try:
            batch = next(exchange)
            while True:
                try:
                    answers = self._answers(batch)
                except RPCError as exc:
                    batch = exchange.throw(exc)
                else:
                    batch = exchange.send(answers)
        except StopIteration as end:
            value: T = end.value
            return value

    def _answers(self, batch: list[Call]) -> list[Any]:
        if len(batch) == 1 and batch[0].cached:
            topic = batch[0].topic
            if topic not in self._cached:
                (self._cached[topic],) = self._asked([batch[0]])
            return [self._cached[topic]]
        return self._asked(batch)

    def _asked(self, batch: list[Call]) -> list[Any]:
        if len(batch) == 1 and not batch[0].streaming and not batch[0].tolerant:
            (call,) = batch  # the usual case: one request alone
            answer = self.handle.call(
                call.topic, call.payload, call.timeout, wait=call.wait, nodeid=call.nodeid
            )
            return [answer]
        rpcs = [
            self.handle.rpc(c.topic, c.payload, streaming=c.streaming, wait=c.wait, nodeid=c.nodeid)
            for c in batch
        ]
        answers: list[Any] = []
        for call, rpc in zip(batch, rpcs, strict=True):  # in order, each as it comes
            try:
                answers.append(list(rpc) if call.streaming else rpc.get(call.timeout))
            except RPCError as exc:
                if not call.tolerant:
                    raise
                answers.append(exc)
        return answers

    def job(self, jobid: int) -> JobHandle:
        """A future for job ``jobid``: its status, result, events, and cancel."""
        from pflux.api.jobhandle import JobHandle  # only for those who use it

        return JobHandle(self, jobid)

    def submit_job(
        self,
        job: Mapping[str, Any] | Sequence[str],
        *,
        urgency: int | str = URGENCY_DEFAULT,
        waitable: bool = False,
        debug: bool = False,
        **options: Unpack[BuilderOptions],
    ) -> JobHandle:
        """``submit``, returning a future for the job rather than its id."""
        jobid = self.submit(job, urgency=urgency, waitable=waitable, debug=debug, **options)
        return self.job(jobid)

    submit = blocking(submission.submit)
    submit_many = blocking(submission.submit_many)

    def submit_each(
        self,
        jobspecs: Iterable[Mapping[str, Any]],
        *,
        urgency: int | str = URGENCY_DEFAULT,
        waitable: bool = False,
        debug: bool = False,
        window: int = SUBMIT_WINDOW,
    ) -> Iterator[JobID | RPCError]:
        """As ``submit_many``, but each job's id or refusal, in order, as they come: a
        refused job stops none of the others.

        Requests go as the answers are iterated, at most ``window`` in flight, each
        jobspec taken from ``jobspecs`` only when its request can go: a generator of
        a million jobspecs is never held whole, and the first ids come back while the
        rest are still to be built."""
        urgency_of(urgency)  # a bad urgency is refused now, not at the first answer
        window = submit_window(window)
        sign = self._run(submission.signs())
        payloads = (submit_payload(js, urgency, waitable, debug, sign) for js in jobspecs)
        return _windowed(self.handle, payloads, window)

    wait = blocking(submission.wait)
    reap = blocking(submission.reap)
    wait_all = blocking(submission.wait_all)
    submit_dag = blocking(submission.submit_dag)
    run_dag = blocking(submission.run_dag)

    def events(
        self,
        jobid: int,
        *,
        path: str = "eventlog",
        follow: bool = True,
        timeout: float | None = None,
    ) -> Iterator[Event]:
        """The job's events (or a guest eventlog's: ``guest.output``, ``guest.exec.eventlog``).

        With ``follow`` they arrive live until the job is inactive (RPCTimeout once
        ``timeout`` seconds have passed in all); without it, the log as it is now.
        """
        from pflux.api.driven import Driven  # only for those who stream
        from pflux.api.streams import Eventlog, logged

        if not follow:
            yield from logged(self.read_log(jobid, path))
            return
        yield from Driven(self.handle, Eventlog(jobid, path), timeout)

    def events_many(
        self, jobids: Sequence[int], *, path: str = "eventlog"
    ) -> Iterator[tuple[int, Event | RPCError]]:
        """Follow every job's events at once, on one connection, each until its job is
        inactive: ``(index in jobids, event)`` as they come, and ``(index, error)``
        ending a job whose log cannot be followed (ENOENT: no such job).

        The requests are sent at once, before the first event is asked for."""
        logs = self.follow_logs([(jobid, path) for jobid in jobids])
        return ((index, item) for index, item in logs if item is not None)

    def follow_logs(self, logs: Sequence[tuple[int, str]]) -> LogFollow:
        """Follow several logs at once, on one connection: each ``(jobid, path)``
        (``path`` as ``events``'s) until its job is inactive. Iterating gives ``(index in
        logs, event)`` as they come, ``(index, None)`` once log ``index`` has ended, and
        ``(index, error)`` ending one that cannot be followed (ENOENT: no such job); a
        select loop of the caller's own uses its ``fileno()`` and ``poll()``.

        The requests are sent at once, before the first event is asked for."""
        from pflux.api.logfollow import LogFollow

        return LogFollow(self.handle, logs)

    read_log = blocking(jobs.read_log)

    def wait_event(
        self,
        jobid: int,
        name: str,
        *,
        match: Mapping[str, Any] | None = None,
        path: str = "eventlog",
    ) -> Event:
        """The first event named ``name`` (with ``match`` in its context)."""
        for event in self.events(jobid, path=path):
            if matches(event, name, match):
                return event
        raise never_received(name)

    raise_exception = blocking(jobs.raise_exception)
    cancel = blocking(jobs.cancel)
    kill = blocking(jobs.kill)
    send_stdin = blocking(jobs.send_stdin)
    send_winsize = blocking(jobs.send_winsize)
    raise_many = blocking(jobs.raise_many)
    kill_many = blocking(jobs.kill_many)
    urgency = blocking(jobs.urgency)
    memo = blocking(jobs.memo)
    list_jobs = blocking(jobs.list_jobs)
    job_info = blocking(jobs.job_info)
    lookup = blocking(jobs.lookup)
    job_info_many = blocking(jobs.job_info_many)
    attrs = blocking(instance.attrs)
    set_attr = blocking(instance.set_attr)
    hostpids = blocking(jobs.hostpids)

    def rexec(
        self,
        ranks: Sequence[int],
        command: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str | None = None,
        stdin: bool = False,
    ) -> Remote:
        """Run ``command`` on each of ``ranks``, outside any job (the owner only): a
        ``Remote`` giving ``(rank, entry)`` as each process starts, writes and ends
        (``pflux.api.remote``), its input fed with ``write`` when ``stdin``."""
        from pflux.api.remote import Remote, exec_payload

        return Remote(self.handle, ranks, exec_payload(command, env, cwd, stdin))

    resource_status = blocking(instance.resource_status)
    resource_reload = blocking(instance.resource_reload)
    rexec_background = blocking(sproc.rexec_background)
    rexec_kill = blocking(sproc.rexec_kill)
    rexec_wait = blocking(sproc.rexec_wait)
    rexec_list = blocking(sproc.rexec_list)
    drain_resources = blocking(instance.drain_resources)
    undrain_resources = blocking(instance.undrain_resources)

    def dmesg(self, *, follow: bool = False, new: bool = False) -> Iterator[dict[str, Any]]:
        """The instance's log entries (``timestamp``, ``severity``, ``message``...):
        ``new``: only those logged from now on; ``follow``: live, until the instance
        stops. The request is sent at once, before the first entry is asked for."""
        from pflux.api.streams import dmesg

        call = dmesg(follow, new)
        return iter(self.handle.rpc(call.topic, call.payload, streaming=True, wait=call.wait))

    clear_log = blocking(instance.clear_log)
    shutdown = blocking(instance.shutdown)
    ping = blocking(instance.ping)
    ping_many = blocking(instance.ping_many)
    publish_event = blocking(instance.publish_event)

    def subscribe(self, topics: Sequence[str]) -> Iterator[dict[str, Any]]:
        """The events whose topic starts with one of ``topics``, from now on, as they come
        (``topic``, ``seq``, ``payload``); subscribed before the first is asked for."""
        for topic in topics:
            self.handle.call("event.subscribe", {"topic": topic})
        return _events(self.handle)

    log = blocking(instance.log)
    modules = blocking(instance.modules)
    config = blocking(instance.config)
    overlay_status = blocking(instance.overlay_status)
    kvs_get = blocking(kvs.kvs_get)
    kvs_put = blocking(kvs.kvs_put)
    kvs_ls = blocking(kvs.kvs_ls)
    kvs_readlink = blocking(kvs.kvs_readlink)
    kvs_commit = blocking(kvs.kvs_commit)

    def kvs_walk(
        self, key: str = ".", *, namespace: str | None = None
    ) -> Iterator[tuple[str, str]]:
        """Every ``(key, value)`` below directory ``key``, in key order, a page at a time."""
        from pflux.api.driven import Driven
        from pflux.api.streams import Walk

        yield from Driven(self.handle, Walk(kvs_payload(namespace, key=key)))

    kvs_namespaces = blocking(kvs.kvs_namespaces)
    kvs_namespace_create = blocking(kvs.kvs_namespace_create)
    kvs_namespace_remove = blocking(kvs.kvs_namespace_remove)
    kvs_dropcache = blocking(kvs.kvs_dropcache)
    kvs_version = blocking(kvs.kvs_version)
    kvs_wait_version = blocking(kvs.kvs_wait_version)

    def kvs_watch(
        self,
        keys: Sequence[str],
        *,
        append: bool = False,
        waitcreate: bool = False,
        namespace: str | None = None,
    ) -> KVSWatch:
        """Watch every key at once: iterate for ``(index, value)`` as each changes
        (``append``: only what is appended; ``waitcreate``: wait for a key to exist
        rather than fail), ``stop(index)`` to end one watch."""
        from pflux.api.kvswatch import KVSWatch

        flags = {"append": append, "waitcreate": waitcreate}
        return KVSWatch(self.handle, [kvs_payload(namespace, key=k, **flags) for k in keys])

    raise_all = blocking(jobs.raise_all)
    update = blocking(jobs.update)
    last_jobs = blocking(jobs.last_jobs)
    purge = blocking(jobs.purge)
    purge_id = blocking(jobs.purge_id)
    job_stats = blocking(jobs.job_stats)
    alloc_query = blocking(jobqueue.alloc_query)
    queues = blocking(jobqueue.queues)
    queue_status = blocking(jobqueue.queue_status)
    queue_enable = blocking(jobqueue.queue_enable)
    queue_start = blocking(jobqueue.queue_start)
    drain = blocking(jobqueue.drain)
    idle = blocking(jobqueue.idle)


def _windowed(
    handle: Handle, payloads: Iterator[dict[str, Any]], window: int
) -> Iterator[JobID | RPCError]:
    """Each submission's id, or its refusal, in order; a payload is taken from
    ``payloads`` (built then) only while fewer than ``window`` requests are in flight."""
    pending: deque[RPC] = deque()
    try:
        for payload in payloads:
            if len(pending) >= window:
                yield _id_or_error(pending.popleft())
            pending.append(handle.rpc(SUBMIT, payload))
    except Exception:
        while pending:  # a jobspec that cannot be built: the jobs sent still answer first
            yield _id_or_error(pending.popleft())
        raise
    while pending:
        yield _id_or_error(pending.popleft())


def _id_or_error(rpc: RPC) -> JobID | RPCError:
    try:
        return JobID(rpc.get()["id"])
    except RPCError as exc:
        return exc


def _events(handle: Handle) -> Iterator[dict[str, Any]]:
    while True:
        msg = handle.next_event()
        if msg is not None:
            yield event_of(msg)
