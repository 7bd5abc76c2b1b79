"""A message a service builds as its type leaves the process as the same bytes as the
object a client sends (or reads): a typed sender changes nothing on the wire, and the
receiving end decodes either form to the same value."""

from __future__ import annotations

import errno
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pflux.errors import RPCError
from pflux.protocol.decode import decode
from pflux.protocol.exec import ForgetRequest, KeepRequest, KeepResponse
from pflux.protocol.joblist import ListIdReply, ListReply
from pflux.protocol.kvs import (
    MAX_USERID,
    ROOT,
    CommitRequest,
    GetReply,
    GetRequest,
    NamespaceCreateRequest,
    NamespaceRemoveRequest,
    WalkRequest,
    WatchCancelRequest,
    WatchRequest,
    value_of,
)
from pflux.protocol.manager import (
    Empty,
    ExecHelloRequest,
    IngestedJob,
    JournalHistoryRequest,
    SubmitBatch,
    SubmitReply,
    WaitReply,
)
from pflux.protocol.message import REQUEST, Message, encode_body
from pflux.protocol.sched import (
    MAX_JOBID,
    MAX_PRIORITY,
    CancelRequest,
    ExpirationRequest,
    PrioritizeRequest,
    ReadyRequest,
    SimTimeRequest,
)
from pflux.spec.eventlog import Event

ids = st.integers(0, MAX_JOBID)
keys = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=20)
ops = st.lists(st.tuples(st.sampled_from(["put", "append"]), keys, st.text(max_size=20)))


def wire(payload: Any) -> bytes:
    return encode_body(Message(REQUEST, "t.t", 1, payload))


def same_on_the_wire(typed: Any, sent: dict[str, Any]) -> None:
    assert wire(typed) == wire(sent)
    assert decode("t.t", sent, type(typed)) == typed  # the other end reads either the same


@given(ops)
def test_a_commit(entries: list[tuple[str, str, str]]) -> None:
    listed = [list(op) for op in entries]
    same_on_the_wire(CommitRequest(listed), {"ops": listed})


@given(keys)
def test_a_get(key: str) -> None:
    same_on_the_wire(GetRequest(key), {"key": key})


@given(keys.filter(lambda key: key != ROOT), keys)  # the root, the default, is left out
def test_a_walk_and_a_watch_cancel(key: str, suffix: str) -> None:
    same_on_the_wire(WalkRequest(key, suffix=suffix), {"key": key, "suffix": suffix})
    same_on_the_wire(WalkRequest(suffix=suffix), {"suffix": suffix})
    same_on_the_wire(WatchCancelRequest(7), {"matchtag": 7})


def test_the_hellos_and_empty_requests() -> None:
    same_on_the_wire(ReadyRequest("unlimited"), {"mode": "unlimited"})
    same_on_the_wire(ExecHelloRequest("sim"), {"service": "sim"})
    same_on_the_wire(JournalHistoryRequest([1, 2]), {"ids": [1, 2]})
    same_on_the_wire(Empty(), {})


@given(keys)
def test_an_append_watch(key: str) -> None:
    sent = {"key": key, "append": True, "waitcreate": True}
    same_on_the_wire(WatchRequest(key, append=True, waitcreate=True), sent)


@given(keys, st.integers(0, MAX_USERID), keys)
def test_a_guest_namespace_created_and_removed(name: str, owner: int, prefix: str) -> None:
    sent = {"name": name, "owner": owner, "prefix": prefix}
    same_on_the_wire(NamespaceCreateRequest(name, owner, prefix), sent)
    same_on_the_wire(NamespaceRemoveRequest(name), {"name": name})


@given(
    st.lists(ids, max_size=5),
    st.lists(st.tuples(ids, st.integers(0, 65535)), max_size=5),
    st.integers(1, (1 << 53) - 1),
)
def test_a_keep_and_its_answer(
    jobs: list[int], died: list[tuple[int, int]], incarnation: int
) -> None:
    same_on_the_wire(KeepRequest(jobs), {"jobs": jobs, "guests": []})
    guests = [(jobid, 1000 + status) for jobid, status in died]
    same_on_the_wire(KeepRequest(jobs, guests), {"jobs": jobs, "guests": [list(g) for g in guests]})
    sent = {"jobs": jobs, "died": [list(pair) for pair in died]}
    same_on_the_wire(KeepResponse(jobs, died), {**sent, "incarnation": 0, "unasked": []})
    answer = KeepResponse(jobs, died, incarnation, jobs)
    same_on_the_wire(answer, {**sent, "incarnation": incarnation, "unasked": jobs})
    same_on_the_wire(ForgetRequest(jobs), {"jobs": jobs})


@given(st.text(max_size=50))
def test_a_get_reply(value: str) -> None:
    same_on_the_wire(GetReply(value), {"value": value})
    assert value_of(GetReply(value)) == value_of({"value": value}) == value


@pytest.mark.parametrize("reply", [None, {}, {"value": 5}, [1]])
def test_a_get_reply_that_is_no_value_is_a_protocol_error(reply: Any) -> None:
    with pytest.raises(RPCError) as info:
        value_of(reply)
    assert info.value.errnum == errno.EPROTO
    assert info.value.errstr.startswith("kvs.get: ")


@given(ids)
def test_a_cancel(jobid: int) -> None:
    same_on_the_wire(CancelRequest(jobid), {"id": jobid})


@given(st.lists(st.tuples(ids, st.integers(0, MAX_PRIORITY))))
def test_a_prioritize(pairs: list[tuple[int, int]]) -> None:
    same_on_the_wire(PrioritizeRequest(pairs), {"jobs": [list(pair) for pair in pairs]})


@given(st.floats(0, 1e12))
def test_a_sim_time(when: float) -> None:
    same_on_the_wire(SimTimeRequest(when), {"time": when})


@given(ids, st.floats(0, 1e12))
def test_an_expiration(jobid: int, when: float) -> None:
    same_on_the_wire(ExpirationRequest(jobid, when), {"id": jobid, "expiration": when})


@given(st.lists(ids, max_size=5), st.booleans(), st.floats(1, 1e10))
def test_a_submit_batch(jobids: list[int], as_text: bool, when: float) -> None:
    jobspec: Any = '{"version":1}' if as_text else {"version": 1}
    event = Event(when, "submit", {"urgency": 16, "userid": 5, "flags": 0, "version": 1})
    typed = SubmitBatch([IngestedJob(jobid, jobspec, event) for jobid in jobids])
    obj = event.to_json()
    sent = {"jobs": [{"id": jobid, "jobspec": jobspec, "event": obj} for jobid in jobids]}
    assert wire(typed) == wire(sent)  # job-ingest's Event leaves the process as its object
    assert decode("t.t", sent, SubmitBatch) == SubmitBatch(
        [IngestedJob(jobid, jobspec, obj) for jobid in jobids]
    )


@given(st.lists(st.tuples(ids, st.text(max_size=20)), max_size=5))
def test_the_replies(errors: list[tuple[int, str]]) -> None:
    same_on_the_wire(SubmitReply(errors), {"errors": [list(error) for error in errors]})
    same_on_the_wire(WaitReply(5, False, "x"), {"id": 5, "success": False, "errstr": "x"})
    same_on_the_wire(ListReply([{"id": 2}]), {"jobs": [{"id": 2}]})
    same_on_the_wire(ListIdReply({"id": 2}), {"job": {"id": 2}})


def test_a_typed_message_is_passed_as_it_is_within_the_process() -> None:
    request = PrioritizeRequest([(1, 2)])
    assert decode("sched.prioritize", request, PrioritizeRequest) is request
