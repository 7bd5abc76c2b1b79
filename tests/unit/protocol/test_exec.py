"""RFC 32's types (pflux.protocol.exec) against their payloads, through the one error mapping."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from pflux.errors import RPCError
from pflux.protocol.decode import decode
from pflux.protocol.exec import (
    DATA,
    ExceptionRequest,
    ExecExpirationRequest,
    ExecResponse,
    KillRequest,
    OverrideRequest,
    ReleaseData,
    StartData,
    StartRequest,
    StartResponse,
    WinsizeRequest,
    response,
)
from support.protocol_payloads import EXEC

VALID = EXEC


@pytest.mark.parametrize(
    ("kind", "changes", "message"),
    [
        (StartRequest, {"R": []}, "job-exec.start: R: expected object"),
        (StartRequest, {"jobspec": None}, "job-exec.start: jobspec: expected object"),
        (StartRequest, {"reattach": 0}, "job-exec.start: reattach: expected bool, got int"),
        (StartRequest, {"id": 2**64}, "job-exec.start: id: expected int <= 18446744073709551615"),
        (StartRequest, {"id": -1}, "job-exec.start: id: expected int >= 0"),
        (KillRequest, {"signum": "TERM"}, "job-exec.start: signum: expected int, got str"),
        (
            ExecExpirationRequest,
            {"expiration": -1},
            "job-exec.start: expiration: expected float >= 0.0",
        ),
        (
            ExecExpirationRequest,
            {"expiration": float("inf")},
            "job-exec.start: expiration: expected float < inf",
        ),
        (ExceptionRequest, {"severity": 8}, "job-exec.start: severity: expected int <= 7"),
        (StartResponse, {"type": "done"}, "job-exec.start: type: invalid enum value 'done'"),
        (StartResponse, {"data": []}, "job-exec.start: data: expected object"),
        (ReleaseData, {"final": 1}, "job-exec.start: final: expected bool, got int"),
        (WinsizeRequest, {"rows": 0}, "job-exec.start: rows: expected int >= 1"),
        (
            OverrideRequest,
            {"jobid": 2**64},
            "job-exec.start: jobid: expected int <= " + str(2**64 - 1),
        ),
    ],
)
def test_messages_name_field_and_rule(kind: type, changes: dict[str, Any], message: str) -> None:
    with pytest.raises(RPCError) as info:
        decode("job-exec.start", {**VALID[kind], **changes}, kind)
    assert info.value.errstr == message


@pytest.mark.parametrize(
    ("kind", "data"),
    [
        (ExecResponse.START, {}),
        (ExecResponse.EXCEPTION, {"severity": 1, "type": "test", "note": "n"}),
        (ExecResponse.FINISH, {"status": 9}),
        (ExecResponse.RELEASE, {"ranks": "all", "final": True}),
    ],
)
def test_a_response_decodes_by_its_type(kind: ExecResponse, data: dict[str, Any]) -> None:
    envelope = decode("t", response(7, kind, data), StartResponse)
    assert (envelope.id, envelope.type) == (7, kind)
    decoded = decode("t", envelope.data, DATA[envelope.type])
    assert msgspec.to_builtins(decoded) == data


def test_the_start_data_is_empty() -> None:
    assert decode("t", {}, StartData) == StartData()
