"""``flux.message``: messages a handle receives or sends itself (events, requests
for a service it registered, their responses) and the watchers that receive them.

A message here is the wire's JSON object held as Python values: ``payload`` the
decoded JSON value, ``payload_str`` its text. ``Flux.msg_watcher_create`` makes a
``MessageWatcher``; ``Flux.recv`` and ``Flux.event_recv`` return a ``Message``.
"""

from __future__ import annotations

import errno
import fnmatch
import json

from flux.constants import (
    FLUX_MATCHTAG_NONE,
    FLUX_MSGTYPE_ANY,
    FLUX_MSGTYPE_CONTROL,
    FLUX_MSGTYPE_EVENT,
    FLUX_MSGTYPE_REQUEST,
    FLUX_MSGTYPE_RESPONSE,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Protocol

    class MessageHandle(Protocol):
        """What a message watcher asks of its handle (``flux.Flux`` is one): the
        started watchers its reactor hands messages to."""

        _msg_watchers: dict[MessageWatcher, None]


__all__ = ["Message", "MessageWatcher", "msg_typestr"]

_TYPESTR = {
    FLUX_MSGTYPE_REQUEST: "request",
    FLUX_MSGTYPE_RESPONSE: "response",
    FLUX_MSGTYPE_EVENT: "event",
    FLUX_MSGTYPE_CONTROL: "control",
}


def msg_typestr(msg_type: int) -> str:
    """A message type's name, as flux-core's ``flux_msg_typestr``."""
    return _TYPESTR.get(msg_type, "unknown")


def _text(value: Any, what: str) -> str:
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str or bytes, not {type(value).__name__}")
    return value


def encode_payload(payload: Any) -> str | None:
    """flux-core's rule: None is no payload, str or bytes is JSON text sent as is,
    anything else is ``json.dumps``'d."""
    if payload is None:
        return None
    if isinstance(payload, bytes):
        return payload.decode("utf-8")
    if isinstance(payload, str):
        return payload
    return json.dumps(payload)


class Message:
    """One message: its ``type`` (``FLUX_MSGTYPE_*``), ``topic`` and payload."""

    def __init__(self, type_id: int = FLUX_MSGTYPE_REQUEST, handle: Any = None) -> None:
        if handle is not None:
            raise OSError(errno.EINVAL, "Message: handle: wrapping a C message is not supported")
        if type_id not in _TYPESTR:
            raise OSError(errno.EINVAL, f"Message: type_id: invalid message type {type_id}")
        self._type = type_id
        self._topic: str | None = None
        self._payload_str: str | None = None
        self.matchtag = FLUX_MATCHTAG_NONE
        self.userid = -1
        self.rolemask = 0
        self.flags = 0
        self.errnum = 0
        self.errstr: str | None = None

    @classmethod
    def from_event_encode(cls, topic: Any, payload: Any = None) -> Message:
        """An event message (``Flux.event_send`` publishes one)."""
        msg = cls(FLUX_MSGTYPE_EVENT)
        msg.topic = topic
        msg.payload_str = encode_payload(payload)
        return msg

    @classmethod
    def _from_wire(cls, obj: dict[str, Any]) -> Message:
        msg = cls(obj.get("type", FLUX_MSGTYPE_REQUEST))
        msg._topic = obj.get("topic")
        payload = obj.get("payload")
        msg._payload_str = None if payload is None else json.dumps(payload)
        msg.matchtag = obj.get("matchtag", 0)
        msg.userid = obj.get("userid", -1)
        msg.rolemask = obj.get("rolemask", 0)
        msg.flags = obj.get("flags", 0)
        msg.errnum = obj.get("errnum") or 0
        msg.errstr = obj.get("errstr")
        return msg

    @property
    def topic(self) -> str:
        if self._topic is None:
            raise OSError(errno.EPROTO, "message has no topic")
        return self._topic

    @topic.setter
    def topic(self, value: Any) -> None:
        self._topic = _text(value, "topic")

    @property
    def payload_str(self) -> str | None:
        return self._payload_str

    @payload_str.setter
    def payload_str(self, value: Any) -> None:
        self._payload_str = None if value is None else _text(value, "payload")

    @property
    def payload(self) -> Any:
        if self._payload_str is None:
            raise OSError(errno.EPROTO, "message has no payload")
        return json.loads(self._payload_str)

    @payload.setter
    def payload(self, value: Any) -> None:
        self._payload_str = encode_payload(value)

    @property
    def type(self) -> int:
        return self._type

    @type.setter
    def type(self, value: int) -> None:
        if value not in _TYPESTR:
            raise OSError(errno.EINVAL, f"Message: type: invalid message type {value}")
        self._type = value

    @property
    def type_str(self) -> str:
        return msg_typestr(self._type)

    def decode(self) -> tuple[int, str, str | None]:
        """``(type, topic, payload_str)``; an error response raises its OSError."""
        if self._type == FLUX_MSGTYPE_RESPONSE and self.errnum:
            import os

            raise OSError(self.errnum, self.errstr or os.strerror(self.errnum))
        return self._type, self.topic, self._payload_str

    def _wire_payload(self) -> Any:
        return None if self._payload_str is None else json.loads(self._payload_str)


class MessageWatcher:
    """Calls ``callback(handle, watcher, msg, args)`` from ``reactor_run`` for each
    message that matches: its type in ``type_mask``, its topic matching
    ``topic_glob`` (fnmatch's patterns), and ``match_tag`` unless it is
    ``FLUX_MATCHTAG_NONE``. A started watcher keeps ``reactor_run`` going.
    ``rolemask`` is taken as flux-core's: every request here comes from the instance
    owner, whom any rolemask allows."""

    def __init__(
        self,
        flux_handle: MessageHandle,
        type_mask: int,
        callback: Callable[..., Any],
        topic_glob: Any = "*",
        match_tag: int = FLUX_MATCHTAG_NONE,
        rolemask: Any = None,
        args: Any = None,
    ) -> None:
        if topic_glob is None:
            topic_glob = "*"
        elif isinstance(topic_glob, bytes):
            topic_glob = topic_glob.decode("utf-8")
        elif not isinstance(topic_glob, str):
            raise TypeError(errno.EINVAL, f"Topic must be a string, not {type(topic_glob)}")
        if not callable(callback):
            raise TypeError(f"callback must be callable, not {type(callback).__name__}")
        self.flux_handle = flux_handle
        self.type_mask = int(type_mask) & FLUX_MSGTYPE_ANY
        self.topic_glob = topic_glob
        self.match_tag = match_tag
        self.rolemask = rolemask
        self.callback = callback
        self.args = args
        self.referenced = True

    def matches(self, msg: Message) -> bool:
        if not msg.type & self.type_mask:
            return False
        if self.match_tag not in (FLUX_MATCHTAG_NONE, msg.matchtag):
            return False
        return self.topic_glob == "*" or fnmatch.fnmatchcase(msg.topic, self.topic_glob)

    def start(self) -> MessageWatcher:
        self.flux_handle._msg_watchers[self] = None
        return self

    def stop(self) -> MessageWatcher:
        self.flux_handle._msg_watchers.pop(self, None)
        return self

    def ref(self) -> MessageWatcher:
        self.referenced = True
        return self

    def unref(self) -> MessageWatcher:
        """An unreferenced watcher does not keep ``reactor_run`` going by itself."""
        self.referenced = False
        return self

    def destroy(self) -> None:
        self.stop()

    def __enter__(self) -> MessageWatcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
