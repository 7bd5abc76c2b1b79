"""pflux.protocol's one error mapping, every typed message against it, and RFC 27's types."""

from __future__ import annotations

import errno
import re
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pflux.errors import RPCError
from pflux.protocol.decode import decode, error_text
from pflux.protocol.message import REQUEST, Decoder, Message, encode
from pflux.protocol.sched import (
    AllocReply,
    AllocRequest,
    AllocResponse,
    CancelRequest,
    ExpirationRequest,
    FreeRequest,
)
from support.protocol_payloads import BROKER, EXEC, INGEST, KVS, LIST, MANAGER, SCHED
from support.wire import as_sent

VALID: dict[type, dict[str, Any]] = {**SCHED, **EXEC, **LIST, **KVS, **BROKER, **INGEST, **MANAGER}
# a value of the wrong JSON type for each field that has one
WRONG = st.one_of(st.text(max_size=3), st.lists(st.integers(), max_size=2), st.none())
TYPED = [
    (kind, field.name)
    for kind, payload in VALID.items()
    for field in msgspec.structs.fields(kind)
    # objects another RFC reads, and a commit's ops, which the KVS checks op by op
    if field.type is not Any
    and field.name != "annotations"
    and field.name in payload
    # a list of names takes a wrong item, named by its index; other lists are left out
    and not (
        isinstance(payload[field.name], list)
        and not all(isinstance(item, str) for item in payload[field.name])
    )
]
REQUIRED = [
    (kind, field.name) for kind in VALID for field in msgspec.structs.fields(kind) if field.required
]


@pytest.mark.parametrize("kind", list(VALID))
def test_valid_payloads_decode(kind: type) -> None:
    decode("t", VALID[kind], kind)


@pytest.mark.parametrize("kind", list(VALID))
def test_a_typed_message_is_taken_as_it_is_and_crosses_the_wire_unchanged(kind: type) -> None:
    """In the broker's process the typed message goes as it is; from another, as JSON."""
    message = decode("t", VALID[kind], kind)
    assert decode("t", message, kind) is message
    [received] = Decoder().feed(encode(Message(REQUEST, "t", 1, message)))
    assert received.payload == as_sent(message)
    assert decode("t", received.payload, kind) == message


@given(st.sampled_from(TYPED), WRONG)
def test_a_wrong_type_is_eproto_naming_the_field(typed: tuple[type, str], value: Any) -> None:
    kind, field = typed
    if isinstance(value, str | None) and isinstance(VALID[kind][field], str):
        value = {}  # any string is a valid one, and null may be
    if value == []:
        value = [{}]  # an empty list of names is a valid one
    if value is None:
        value = [[None]]  # null may be valid, as an absent optional value
    with pytest.raises(RPCError) as info:
        decode("some.topic", {**VALID[kind], field: value}, kind)
    assert info.value.errnum == errno.EPROTO
    # a list's item is named by its index
    assert re.match(rf"some\.topic: {field}(\[\d+\])?: ", info.value.errstr)


@pytest.mark.parametrize(("kind", "field"), REQUIRED)
def test_a_missing_field_is_named(kind: type, field: str) -> None:
    payload = {key: value for key, value in VALID[kind].items() if key != field}
    with pytest.raises(RPCError) as info:
        decode("t", payload, kind)
    assert info.value.errstr == f"t: {field}: required"


@pytest.mark.parametrize(
    ("kind", "changes", "message"),
    [
        (AllocRequest, {"jobspec": []}, "sched.alloc: jobspec: expected object"),
        (AllocRequest, {"id": 2**64}, "sched.alloc: id: expected int <= 18446744073709551615"),
        (AllocRequest, {"id": True}, "sched.alloc: id: expected int, got bool"),
        (AllocRequest, {"t_submit": float("inf")}, "sched.alloc: t_submit: expected float < inf"),
        (AllocReply, {"type": 4}, "sched.alloc: type: invalid enum value 4"),
        (FreeRequest, {"final": 1}, "sched.alloc: final: expected bool, got int"),
        (ExpirationRequest, {"expiration": -1}, "sched.alloc: expiration: expected float >= 0.0"),
    ],
)
def test_messages_name_field_and_rule(kind: type, changes: dict[str, Any], message: str) -> None:
    with pytest.raises(RPCError) as info:
        decode("sched.alloc", {**VALID[kind], **changes}, kind)
    assert info.value.errstr == message


def test_a_payload_that_is_no_object() -> None:
    with pytest.raises(RPCError, match=r"^x: payload: expected object, got null$"):
        decode("x", None, CancelRequest)


def test_reply_type_is_the_enum() -> None:
    assert decode("t", {"id": 1, "type": 1}, AllocReply).type is AllocResponse.ANNOTATE


@given(st.text())
def test_error_text_names_the_topic_for_any_text(text: str) -> None:
    assert error_text("topic", text).startswith("topic: ")
