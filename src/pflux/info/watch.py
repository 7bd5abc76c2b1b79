"""One ``job-info.eventlog-watch`` stream: KVS watches on the log and on the job's end."""

from __future__ import annotations

import errno
from typing import Any

from pflux.broker.router import Broker, LocalRoute, Request
from pflux.protocol.kvs import WatchCancelRequest, WatchRequest
from pflux.protocol.message import Message
from pflux.spec.fluid import JobID
from pflux.spec.kvs_keys import job_key

TERMINAL_EVENTS = (b'"name":"clean"', b'"name":"invalidate"')


class EventlogWatch:
    """One eventlog-watch: a KVS watch on the log, and on the job's eventlog for its end."""

    def __init__(self, broker: Broker, req: Request, jobid: int, path: str) -> None:
        self.broker = broker
        self.req = req
        self.jobid = jobid
        self.path = path
        self.guest = path != "eventlog"
        self.routes: list[LocalRoute] = []

    def start(self) -> None:
        key = job_key(self.jobid, *self.path.split("."))
        self._watch(key, lambda msg: self._on_append(msg, send=True, ends=not self.guest))
        self.routes[0].follow(self.req)  # the KVS sends no faster than the requester reads
        if self.guest:
            # the job's own eventlog, only to see it end: the guest one is final by then
            main = job_key(self.jobid, "eventlog")
            self._watch(main, lambda msg: self._on_append(msg, send=False, ends=True))
        self.req.on_disconnect(self._cancel)

    def _watch(self, key: str, callback: Any) -> None:
        request = WatchRequest(key, append=True, waitcreate=True)
        self.routes.append(self.broker.send("kvs.watch", request, callback, streaming=True))

    def _on_append(self, msg: Message, *, send: bool, ends: bool) -> None:
        """New lines of a watched eventlog: pass them on (``send``); the job's end in them
        (``ends``: this is the job's own eventlog) ends the stream."""
        if self.req.done:
            return
        if msg.errnum:
            self._end(msg)
            return
        data = msg.payload.get("value", "")
        if send and data:
            self.req.respond({"data": data})
        if ends and any(t in data.encode() for t in TERMINAL_EVENTS):
            if send:
                self._finish()
            else:
                self._ending()

    def _ending(self) -> None:
        """The job has ended: a guest log is final. Its watch may still be reading it from
        the store for a requester that reads slowly: it is canceled, and ends (ENODATA,
        which ends this stream) once it has sent every line."""
        log_route, main = self.routes
        self.routes = [log_route]
        main.cancel()
        self.broker.send("kvs.watch-cancel", WatchCancelRequest(log_route.matchtag))

    def _end(self, msg: Message) -> None:
        if msg.errnum == errno.ENOENT:
            self._finish(errno.ENOENT, f"job {JobID(self.jobid)}: {self.path} was removed")
        else:
            self._finish(msg.errnum, msg.errstr)

    def _finish(self, errnum: int = errno.ENODATA, errstr: str | None = None) -> None:
        """End the stream and withdraw the KVS watches."""
        self.req.error(errnum, errstr)
        for route in self.routes:
            route.cancel()
        self.routes = []

    def _cancel(self) -> None:
        self._finish()
