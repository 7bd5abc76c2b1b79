"""job-info: read access to a job's KVS data, the proxy RFC 16 describes for guests.

``lookup`` returns J, jobspec, R, the eventlog or a key of the job's guest
namespace (``guest.application.x``: RFC 16's proxy, for the final snapshot a
guest can no longer read through the removed namespace); ``eventlog-watch`` streams an
eventlog (the job's own, or a guest one such as ``guest.output``) from its first
line, live, and ends once the job is inactive and every line has been sent.
Both check that the requester owns the job (or owns the instance).
"""

from __future__ import annotations

import errno
from typing import Any

import orjson

from pflux.broker.router import Request, Service, method
from pflux.errors import RPCError
from pflux.info.watch import EventlogWatch
from pflux.protocol.decode import decode
from pflux.protocol.info import EventlogWatchRequest, LookupRequest
from pflux.protocol.kvs import GetRequest, value_of
from pflux.spec.fluid import JobID
from pflux.spec.kvs_keys import KEY_PATTERN, job_key

LOOKUP_KEYS = frozenset(("J", "jobspec", "R", "eventlog"))
WATCH_PATHS = frozenset(("eventlog", "guest.exec.eventlog", "guest.output", "guest.input"))


def _lookup_key(key: str) -> bool:
    """One of the job's own keys, or a key of its guest namespace's final snapshot."""
    return key in LOOKUP_KEYS or (
        key.startswith("guest.") and KEY_PATTERN.fullmatch(key) is not None
    )


class JobInfoService(Service):
    name = "job-info"

    async def _check_owner(self, req: Request, jobid: int) -> str:
        """The job's eventlog, after checking the job exists and the requester may read it."""
        try:
            reply = await self.broker.call("kvs.get", GetRequest(job_key(jobid, "eventlog")))
        except RPCError as exc:
            if exc.errnum == errno.ENOENT:
                raise RPCError(errno.ENOENT, f"job {JobID(jobid)} not found") from None
            raise
        eventlog = value_of(reply)
        if not req.owner:
            first = orjson.loads(eventlog.split("\n", 1)[0])
            if first.get("context", {}).get("userid") != req.userid:
                raise RPCError(errno.EPERM, f"job {JobID(jobid)}: permission denied")
        return eventlog

    @method("lookup", guest=True)
    async def lookup(self, req: Request) -> None:
        request = decode(req.topic, req.payload, LookupRequest)
        jobid, keys = request.id, request.keys
        if not keys or not all(map(_lookup_key, keys)):
            known = ", ".join(sorted(LOOKUP_KEYS))
            raise RPCError(errno.EINVAL, f"keys: must be a list of {known} or guest.KEY")
        eventlog = await self._check_owner(req, jobid)
        reply: dict[str, Any] = {"id": jobid}
        for key in keys:
            if key == "eventlog":
                reply[key] = eventlog
                continue
            try:
                got = await self.broker.call("kvs.get", GetRequest(job_key(jobid, key)))
            except RPCError as exc:
                if exc.errnum == errno.ENOENT:
                    raise RPCError(errno.ENOENT, f"job {JobID(jobid)} has no {key}") from None
                raise
            reply[key] = value_of(got)
        req.respond(reply)

    @method("eventlog-watch", guest=True)
    async def eventlog_watch(self, req: Request) -> None:
        request = decode(req.topic, req.payload, EventlogWatchRequest)
        jobid, path = request.id, request.path
        if path not in WATCH_PATHS:
            raise RPCError(errno.EINVAL, f"path: must be one of {', '.join(sorted(WATCH_PATHS))}")
        if not req.streaming:
            raise RPCError(errno.EPROTO, "eventlog-watch must be a streaming request")
        await self._check_owner(req, jobid)
        EventlogWatch(self.broker, req, jobid, path).start()
