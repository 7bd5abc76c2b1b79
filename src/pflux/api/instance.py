"""The instance's own requests (attributes, log, events, resources, modules): the
request methods both clients share (``pflux.api.exchange``)."""

from __future__ import annotations

import time

from pflux.api.exchange import Call, Exchange, ask
from pflux.protocol.message import FLAG_PRIVATE as EVENT_PRIVATE
from pflux.protocol.message import NODEID_ANY

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from pflux.protocol.message import Message


def attrs() -> Exchange[dict[str, str]]:
    """The instance's attributes (``broker.starttime``, ``size``, ``local-uri``...)."""
    found: dict[str, str] = (yield from ask("broker.attrs", {}))["attrs"]
    return found


def set_attr(name: str, value: str) -> Exchange[None]:
    """Change an instance attribute the broker lets change at run time (the log's:
    ``log-stderr-level``, ``log-ring-size``); RPCError says why not otherwise."""
    yield from ask("attr.set", {"name": name, "value": value})


def resource_reload(R: Mapping[str, Any], *, force: bool = False) -> Exchange[None]:  # noqa: N803
    """Have the scheduler take ``R``'s resources (the owner only, while no job holds or
    waits for any); ``force``: keep ranks the instance lacks, as down."""
    yield from ask("sched.reload", {"R": dict(R), "force": force})


def resource_status() -> Exchange[dict[str, Any]]:
    """The scheduler's resource sets as R objects: ``all``, ``allocated``, ``down``;
    the drained ranks as idsets (``drained``, ``draining``: jobs still run there) and
    ``drain`` ({rank: {timestamp, reason}})."""
    status: dict[str, Any] = yield from ask("sched.resource-status", {})
    return status


def drain_resources(targets: str, reason: str = "", *, mode: str | None = None) -> Exchange[None]:
    """Give no new job the ranks ``targets`` names (an idset or hostlist); owner only.
    ``mode``: ``update``, ``overwrite`` or ``force-overwrite`` (as flux's)."""
    yield from ask("sched.drain", _drain_payload(targets, reason, mode))


def undrain_resources(targets: str, reason: str = "", *, mode: str | None = None) -> Exchange[None]:
    """Schedule drained ranks again (``reason`` is logged); owner only. ``mode``
    ``update``: some may not be drained."""
    yield from ask("sched.undrain", _drain_payload(targets, reason, mode))


def clear_log() -> Exchange[None]:
    """Empty the instance's log ring."""
    yield from ask("log.clear", {})


def shutdown() -> Exchange[None]:
    """Stop the instance: running jobs are canceled, pending ones kept for the next start."""
    yield from ask("broker.shutdown", {})


def ping(service: str, payload: Any = None, *, rank: int | None = None) -> Exchange[Any]:
    """``service``'s answer to ``ping`` (every service echoes the payload it is sent),
    at ``rank`` (default: whichever broker provides it)."""
    nodeid = NODEID_ANY if rank is None else rank
    return (yield from ask(f"{service}.ping", payload, nodeid=nodeid))


def ping_many(
    service: str, payloads: Sequence[Any], *, rank: int | None = None
) -> Exchange[list[Any]]:
    """``ping`` with each of ``payloads``, every request in flight at once (``flux ping
    --batch``): the answers, in order."""
    nodeid = NODEID_ANY if rank is None else rank
    answers: list[Any] = yield [Call(f"{service}.ping", p, nodeid=nodeid) for p in payloads]
    return answers


def publish_event(topic: str, payload: Any = None, *, private: bool = False) -> Exchange[int]:
    """Publish an event to its subscribers; its sequence number."""
    event = {"topic": topic, "flags": EVENT_PRIVATE if private else 0, "payload": payload}
    return int((yield from ask("event.pub", event))["seq"])


def event_of(msg: Message) -> dict[str, Any]:
    """An event subscribed to, as ``subscribe`` gives it."""
    return {"topic": msg.topic, "seq": msg.matchtag, "payload": msg.payload}


def log(message: str, *, severity: int = 6, appname: str = "logger") -> Exchange[None]:
    """Add ``message`` to the instance's log ring (syslog ``severity``, 0-7)."""
    rank = int((yield from attrs()).get("rank", 0))
    entry = {
        "timestamp": time.time(),
        "name": appname,
        "severity": severity,
        "rank": rank,
        "message": message,
    }
    yield from ask("log.append", entry)


def modules() -> Exchange[list[dict[str, Any]]]:
    """What the instance runs as flux-core's broker modules: ``name``, ``path``,
    ``status`` (``R`` running, ``I`` starting), ``process`` (a process of its own)."""
    mods: list[dict[str, Any]] = (yield from ask("module.list", {}))["mods"]
    return mods


def config() -> Exchange[dict[str, Any]]:
    """The instance's configuration, as loaded."""
    loaded: dict[str, Any] = yield from ask("config.get", {})
    return loaded


def overlay_status() -> Exchange[list[dict[str, Any]]]:
    """Each rank's ``state`` as rank 0 knows it (``up``, ``lost``, ``offline``: never
    up) and ``since`` when (seconds since the epoch), in rank order."""
    ranks: list[dict[str, Any]] = (yield from ask("broker.overlay-status", {}))["ranks"]
    return ranks


def _drain_payload(targets: str, reason: str, mode: str | None) -> dict[str, Any]:
    payload: dict[str, Any] = {"targets": targets}
    if reason:
        payload["reason"] = reason
    if mode is not None:
        payload["mode"] = mode
    return payload
