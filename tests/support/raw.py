"""Requests sent as they are on the wire, past the client's own encoder.

The client refuses to encode what the broker must still survive (payloads nested
past orjson's limit), so these encode with the standard library and register the
request with the handle as ``Handle.rpc`` would.
"""

from __future__ import annotations

import json
import struct
from typing import Any

from pflux.client.handle import RPC, Handle
from pflux.protocol.message import FLAG_NORESPONSE, FLAG_STREAMING, REQUEST


def send_raw(handle: Handle, topic: str, payload: Any, flags: int = 0, **fields: Any) -> RPC | None:
    """Send one request, with ``fields`` (``nodeid``, say) on the wire too; its RPC, unless
    it wants no answer."""
    handle.matchtag += 1
    tag = handle.matchtag
    body = json.dumps(
        {
            "type": REQUEST,
            "topic": topic,
            "matchtag": tag,
            "flags": flags,
            "payload": payload,
            **fields,
        }
    ).encode()
    handle._out += struct.pack(">I", len(body)) + body
    if flags & FLAG_NORESPONSE:
        return None
    rpc = RPC(handle, topic, tag, bool(flags & FLAG_STREAMING), handle.timeout)
    handle.expect(rpc.deliver, flags)
    return rpc
