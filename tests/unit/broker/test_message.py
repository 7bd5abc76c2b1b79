"""Payload depth and encoding limits of messages."""

from __future__ import annotations

import errno
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pflux.broker.message import MAX_DEPTH, RESPONSE, Message, RPCError, check_depth, encode


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
