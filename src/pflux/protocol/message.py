"""Messages between clients and services, and their wire form.

A message is a request, a response or an error response (RFC 6 in spirit):
requests name a ``service.method`` topic and carry a matchtag that their
responses repeat. A streaming request gets any number of responses and is ended
by an error response; ``ENODATA`` is the normal end of a stream.

On the socket every message is a 4-byte big-endian length followed by that
many bytes of JSON: ``{"type", "topic", "matchtag", "flags", "payload",
"errnum", "errstr"}``, and ``"nodeid"`` for a request addressed to one rank (absent:
any rank, ``NODEID_ANY``, which is what every local client sends). Within the broker
messages are passed as objects and never encoded; between brokers (the overlay) the
body travels without its length header, as a frame of its own.
"""

from __future__ import annotations

import errno
import struct

from pflux.errors import ProtocolError, RPCError
from pflux.spec import jsontext
from pflux.spec.eventlog import Event

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "EVENT",
    "FLAG_NORESPONSE",
    "FLAG_PRIVATE",
    "FLAG_STREAMING",
    "HEADER",
    "MAX_DEPTH",
    "MAX_SIZE",
    "NODEID_ANY",
    "REQUEST",
    "RESPONSE",
    "ROLE_OWNER",
    "ROLE_USER",
    "Decoder",
    "Message",
    "check_depth",
    "decode_body",
    "encode",
    "encode_body",
    "frame",
]

REQUEST = 1
RESPONSE = 2
EVENT = 4  # sent by the broker only (``pflux.broker.event``); a client publishes with event.pub
FLAG_PRIVATE = 0x20  # an event for the owner and its publisher only (FLUX_MSGFLAG_PRIVATE)

FLAG_STREAMING = 1  # the requester accepts many responses, ended by an error
FLAG_NORESPONSE = 2  # the requester wants no response at all

HEADER = struct.Struct(">I")
MAX_SIZE = 64 * 1024 * 1024  # one message, body only
# A payload nests at most this deep: what a request may hold must fit in a response
# too, and the encoder refuses more than 255 levels (no request needs 20).
MAX_DEPTH = 128

ROLE_OWNER = 1
ROLE_USER = 2

NODEID_ANY = -1  # a request for whichever rank provides its service (flux-core's FLUX_NODEID_ANY)


class Message:
    """One message; ``userid`` and ``rolemask`` are stamped by the broker, never the sender."""

    __slots__ = (
        "errnum",
        "errstr",
        "flags",
        "matchtag",
        "nodeid",
        "payload",
        "rolemask",
        "topic",
        "type",
        "userid",
    )

    def __init__(
        self,
        type: int,
        topic: str,
        matchtag: int = 0,
        payload: Any = None,
        *,
        flags: int = 0,
        errnum: int = 0,
        errstr: str | None = None,
        userid: int = -1,
        rolemask: int = 0,
        nodeid: int = NODEID_ANY,
    ) -> None:
        self.type = type
        self.topic = topic
        self.matchtag = matchtag
        self.payload = payload
        self.flags = flags
        self.errnum = errnum
        self.errstr = errstr
        self.userid = userid
        self.rolemask = rolemask
        self.nodeid = nodeid

    def __repr__(self) -> str:
        kind = "request" if self.type == REQUEST else "response"
        return f"Message({kind} {self.topic!r} tag={self.matchtag} errnum={self.errnum})"

    @property
    def streaming(self) -> bool:
        return bool(self.flags & FLAG_STREAMING)

    def raise_for_error(self) -> Any:
        """Return the payload, or raise RPCError for an error response."""
        if self.errnum:
            raise RPCError(self.errnum, self.errstr)
        return self.payload


def encode(msg: Message) -> bytes:
    """The wire form of ``msg``: length header and JSON body.

    A request the broker forwards to a service in another process carries the
    requester's ``userid`` and ``rolemask``; the broker overwrites both on
    anything a connection sends it, so a client cannot claim them.
    """
    header, body = frame(msg)
    return header + body


def frame(msg: Message) -> tuple[bytes, bytes]:
    """``encode``'s length header and body apart, for a transport to write one after
    the other: a long body (a jobspec near its limit) is never copied to join them."""
    body = encode_body(msg)
    if len(body) > MAX_SIZE:
        raise RPCError(errno.EMSGSIZE, f"message of {len(body)} bytes exceeds {MAX_SIZE}")
    return HEADER.pack(len(body)), body


def encode_body(msg: Message) -> bytes:
    """``msg`` as its JSON body alone (what the overlay sends as one frame)."""
    obj = {
        "type": msg.type,
        "topic": msg.topic,
        "matchtag": msg.matchtag,
        "flags": msg.flags,
        "payload": msg.payload,
        "errnum": msg.errnum,
        "errstr": msg.errstr,
    }
    if msg.userid >= 0:
        obj["userid"] = msg.userid
        obj["rolemask"] = msg.rolemask
    if msg.nodeid >= 0:
        obj["nodeid"] = msg.nodeid
    try:
        return jsontext.dumps(obj, default=_typed)
    except jsontext.EncodeError as exc:
        raise RPCError(errno.EPROTO, f"{msg.topic}: payload cannot be encoded: {exc}") from None


def _typed(value: Any) -> Any:
    """A typed message (a ``Struct`` of this package's topic modules, passed as an object
    within the broker) or an eventlog ``Event`` in one, as JSON's types, for a service
    in another process; anything else cannot be encoded."""
    if type(value) is Event:
        return value.to_json()
    import msgspec  # only the broker's services send typed messages: clients never load it

    if isinstance(value, msgspec.Struct):
        return msgspec.to_builtins(value, enc_hook=_typed)
    raise TypeError(f"{type(value).__name__} is not JSON")


def check_depth(payload: Any) -> None:
    """Refuse a payload nested deeper than MAX_DEPTH (EPROTO), before anyone walks it."""
    level = [payload]
    for _ in range(MAX_DEPTH + 1):
        below: list[Any] = []
        for value in level:
            if type(value) is dict:
                below.extend(value.values())
            elif type(value) is list:
                below.extend(value)
        if not below:
            return
        level = below
    raise RPCError(errno.EPROTO, f"payload: must nest at most {MAX_DEPTH} levels deep")


def decode_body(
    body: bytes | bytearray,
    start: int = 0,
    end: int | None = None,
    *,
    types: tuple[int, ...] = (REQUEST, RESPONSE),
) -> Message:
    """Parse one message body (``body[start:end]``, read in place, never copied);
    anything malformed raises ProtocolError, as does a type not in ``types`` (events
    come only from the broker, to a client that reads them).

    A request whose payload nests deeper than MAX_DEPTH comes back without it, its
    errnum and errstr saying so, for the receiver to answer (a request's own errnum
    is always 0). Only a body with that many brackets is walked.
    """
    end = len(body) if end is None else end
    try:
        with memoryview(body) as view, view[start:end] as part:
            obj = jsontext.loads(part)
    except jsontext.DecodeError as exc:
        raise ProtocolError(f"message is not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise ProtocolError("message must be a JSON object")
    mtype = obj.get("type")
    topic = obj.get("topic")
    matchtag = obj.get("matchtag", 0)
    flags = obj.get("flags", 0)
    errnum = obj.get("errnum", 0)
    errstr = obj.get("errstr")
    if mtype not in types:
        allowed = " or ".join(map(str, types))
        raise ProtocolError(f"message type must be {allowed}, got {mtype!r}")
    if not isinstance(topic, str) or not topic:
        raise ProtocolError("message topic must be a non-empty string")
    for name, value in (("matchtag", matchtag), ("flags", flags), ("errnum", errnum)):
        if type(value) is not int or value < 0:
            raise ProtocolError(f"message {name} must be a non-negative integer")
    if errstr is not None and not isinstance(errstr, str):
        raise ProtocolError("message errstr must be a string or null")
    userid, rolemask, nodeid = _identity(obj)
    payload = obj.get("payload")
    if mtype == REQUEST:
        errnum, errstr = 0, None
        if body.count(b"[", start, end) + body.count(b"{", start, end) > MAX_DEPTH:
            try:
                check_depth(payload)
            except RPCError as exc:
                payload, errnum, errstr = None, exc.errnum, f"{topic}: {exc.errstr}"
    return Message(
        mtype,
        topic,
        matchtag,
        payload,
        flags=flags,
        errnum=errnum,
        errstr=errstr,
        userid=userid,
        rolemask=rolemask,
        nodeid=nodeid,
    )


def _identity(obj: dict[str, Any]) -> tuple[int, int, int]:
    """A message's ``userid``, ``rolemask`` and ``nodeid``, checked."""
    userid = obj.get("userid", -1)
    rolemask = obj.get("rolemask", 0)
    if type(userid) is not int or type(rolemask) is not int:
        raise ProtocolError("message userid and rolemask must be integers")
    nodeid = obj.get("nodeid", NODEID_ANY)
    if type(nodeid) is not int or nodeid < NODEID_ANY:
        raise ProtocolError("message nodeid must be a rank (an integer >= 0)")
    return userid, rolemask, nodeid


class Decoder:
    """Splits a byte stream into messages, however the bytes arrive.

    A message longer than ``limit`` is refused as soon as its length header is
    read, before any of its body is held.
    """

    __slots__ = ("_buf", "limit", "types")

    def __init__(
        self, limit: int = MAX_SIZE, *, types: tuple[int, ...] = (REQUEST, RESPONSE)
    ) -> None:
        self._buf = bytearray()
        self.limit = limit
        self.types = types  # the message types accepted (``decode_body``)

    def feed(self, data: bytes | memoryview) -> list[Message]:
        """Add ``data``; return every message now complete (ProtocolError on garbage)."""
        buf = self._buf
        buf += data
        out: list[Message] = []
        pos = 0
        end = len(buf)
        while end - pos >= 4:
            (size,) = HEADER.unpack_from(buf, pos)
            if size > self.limit:
                raise ProtocolError(
                    f"message of {size} bytes exceeds the limit of {self.limit} bytes"
                )
            if end - pos - 4 < size:
                break
            out.append(decode_body(buf, pos + 4, pos + 4 + size, types=self.types))
            pos += 4 + size
        if pos:
            del buf[:pos]
        return out

    @property
    def pending(self) -> int:
        """Bytes of an incomplete message held back."""
        return len(self._buf)

    def clear(self) -> None:
        """Let go of an incomplete message (its sender is gone)."""
        self._buf = bytearray()
