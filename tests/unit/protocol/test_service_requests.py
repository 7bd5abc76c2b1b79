"""job-list's, job-info's, the KVS's and the broker's request types: defaults, and the rules
msgspec cannot state, worded as the one error mapping words the others."""

from __future__ import annotations

import errno

import pytest

from pflux.errors import RPCError
from pflux.protocol.broker import DmesgRequest
from pflux.protocol.decode import decode
from pflux.protocol.info import EventlogWatchRequest, LookupRequest
from pflux.protocol.joblist import ListIdRequest, ListRequest, check_mask
from pflux.protocol.kvs import CommitRequest, LsRequest, WalkRequest, WatchRequest
from pflux.spec.resultcodes import USERID_ANY


def test_an_empty_request_takes_the_defaults() -> None:
    listing = decode("job-list.list", {}, ListRequest)
    assert (listing.attrs, listing.max_entries, listing.userid) == (["all"], 0, USERID_ANY)
    assert (listing.since, listing.name, listing.queue) == (0.0, None, None)
    assert decode("job-info.lookup", {"id": 1}, LookupRequest).keys == ["jobspec"]
    assert decode("job-info.eventlog-watch", {"id": 1}, EventlogWatchRequest).path == "eventlog"
    assert decode("kvs.ls", {}, LsRequest) == LsRequest(".", None)
    assert decode("kvs.walk", {}, WalkRequest).suffix is None
    assert decode("kvs.watch", {"key": "a"}, WatchRequest) == WatchRequest("a", None, False, False)
    assert decode("log.dmesg", {}, DmesgRequest) == DmesgRequest(False, False)


def test_a_default_list_is_not_shared() -> None:
    first = decode("job-list.list", {}, ListRequest)
    assert first.attrs is not decode("job-list.list", {}, ListRequest).attrs


def test_a_timestamp_may_be_an_integer() -> None:
    assert decode("job-list.list", {"since": 3}, ListRequest).since == 3.0


@pytest.mark.parametrize(
    ("topic", "kind"),
    [
        ("job-list.list-id", ListIdRequest),
        ("job-info.lookup", LookupRequest),
        ("job-info.eventlog-watch", EventlogWatchRequest),
    ],
)
def test_a_job_id_stops_below_2_to_the_64(topic: str, kind: type) -> None:
    assert decode(topic, {"id": 2**64 - 1}, kind).id == 2**64 - 1  # type: ignore[attr-defined]
    with pytest.raises(RPCError) as info:
        decode(topic, {"id": 2**64}, kind)
    assert info.value.errstr == f"{topic}: id: expected int <= 18446744073709551615"


def test_a_mask_with_a_bit_job_list_does_not_know_is_eproto() -> None:
    check_mask("job-list.list", "results", 0xF, 0xF)
    with pytest.raises(RPCError) as info:
        check_mask("job-list.list", "results", 0x10, 0xF)
    assert (info.value.errnum, info.value.errstr) == (
        errno.EINVAL,
        "job-list.list: results: expected a mask of the bits 0xf",
    )


def test_a_commit_s_ops_are_passed_on_as_sent() -> None:
    """Checked to be an array only: the store checks each op, and thousands are not copied."""
    ops = [["put", "a", "1"], "not an op"]
    assert decode("kvs.commit", {"ops": ops}, CommitRequest).ops is ops
    with pytest.raises(RPCError, match=r"^kvs\.commit: ops: expected array$"):
        decode("kvs.commit", {"ops": "put"}, CommitRequest)
