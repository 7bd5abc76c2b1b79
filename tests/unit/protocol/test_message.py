"""Payload depth and encoding limits of messages."""

from __future__ import annotations

import errno
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pflux.errors import ProtocolError, RPCError
from pflux.protocol.message import (
    MAX_DEPTH,
    REQUEST,
    RESPONSE,
    Message,
    check_depth,
    decode_body,
    encode,
)


def nested(depth: int, leaf: Any = None) -> Any:
    """``depth`` containers, alternately arrays and objects, around ``leaf``."""
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


@given(st.integers(min_value=0, max_value=MAX_DEPTH))
def test_a_payload_up_to_the_limit_passes_and_encodes(depth: int) -> None:
    check_depth(nested(depth, 1))
    assert encode(Message(RESPONSE, "t", 1, nested(depth, 1)))


@given(st.integers(min_value=MAX_DEPTH + 1, max_value=2 * MAX_DEPTH))
def test_a_deeper_payload_is_eproto(depth: int) -> None:
    with pytest.raises(RPCError) as err:
        check_depth({"wide": list(range(10)), "deep": nested(depth - 1)})
    assert err.value.errnum == errno.EPROTO
    assert err.value.errstr == f"payload: must nest at most {MAX_DEPTH} levels deep"


def test_a_payload_that_cannot_be_encoded_is_an_rpc_error() -> None:
    """So that whoever delivers it can answer with an error instead."""
    with pytest.raises(RPCError) as err:
        encode(Message(RESPONSE, "broker.ping", 1, nested(300)))
    assert err.value.errnum == errno.EPROTO
    assert err.value.errstr.startswith("broker.ping: payload cannot be encoded: ")


def _request(payload: Any, **fields: Any) -> bytes:
    return json.dumps(
        {"type": REQUEST, "topic": "broker.ping", "matchtag": 3, "payload": payload, **fields}
    ).encode()


@given(st.integers(min_value=MAX_DEPTH + 1, max_value=3 * MAX_DEPTH))
def test_a_request_too_deep_decodes_as_refused(depth: int) -> None:
    """The receiver has the matchtag to answer it with, and no payload to walk."""
    msg = decode_body(_request(nested(depth)))
    assert (msg.matchtag, msg.payload, msg.errnum) == (3, None, errno.EPROTO)
    assert msg.errstr == f"broker.ping: payload: must nest at most {MAX_DEPTH} levels deep"


@given(st.integers(min_value=0, max_value=MAX_DEPTH - 1))
def test_a_request_within_the_limit_decodes_whole(depth: int) -> None:
    msg = decode_body(_request(nested(depth, "[{"), errnum=5, errstr="claimed"))
    assert (msg.payload, msg.errnum, msg.errstr) == (nested(depth, "[{"), 0, None)


@given(st.one_of(st.just(-1), st.integers(min_value=0, max_value=2**31)))
def test_nodeid_is_on_the_wire_only_for_one_rank(nodeid: int) -> None:
    body = encode(Message(REQUEST, "echo.rank", 1, {}, nodeid=nodeid))[4:]
    assert ("nodeid" in json.loads(body)) == (nodeid >= 0)
    assert decode_body(body).nodeid == nodeid


@pytest.mark.parametrize("nodeid", [-2, "1", 1.5, None])
def test_a_nodeid_that_is_not_a_rank_is_a_protocol_error(nodeid: Any) -> None:
    with pytest.raises(ProtocolError, match="message nodeid must be a rank"):
        decode_body(_request({}, nodeid=nodeid))
