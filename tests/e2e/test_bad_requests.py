"""Requests with bad values get one error answer naming the field and the rule, and the
instance goes on serving (issue 15: no request stops the instance)."""

from __future__ import annotations

import errno

import pytest

from pflux.api import Client
from pflux.client.handle import RPC, Handle
from pflux.errors import RPCError
from pflux.protocol.message import FLAG_NORESPONSE, MAX_DEPTH
from support.instance import jobspec
from support.raw import send_raw

TIMEOUT = 30.0


def nested(depth: int) -> object:
    value: object = None
    for _ in range(depth):
        value = [value]
    return value


def ask(handle: Handle, topic: str, payload: object) -> RPC:
    rpc = send_raw(handle, topic, payload)
    assert rpc is not None
    return rpc


def still_runs_jobs(uri: str) -> None:
    with Client(uri) as client:
        jobid = client.submit(jobspec(), waitable=True)
        assert client.wait(jobid, timeout=TIMEOUT).success


def test_too_deep_a_payload_is_answered(uri: str) -> None:
    """Nested past what a response can hold: EPROTO at once, not a request left unanswered."""
    with Handle(uri) as handle:
        send_raw(handle, "broker.ping", nested(300), FLAG_NORESPONSE)
        with pytest.raises(RPCError) as err:
            ask(handle, "broker.ping", nested(300)).get(TIMEOUT)
        assert err.value.errnum == errno.EPROTO
        assert err.value.errstr == (
            f"broker.ping: payload: must nest at most {MAX_DEPTH} levels deep"
        )
        assert ask(handle, "broker.ping", nested(100)).get(TIMEOUT) == nested(100)
        assert handle.call("broker.ping", {"alive": True}, TIMEOUT)["alive"] is True


def test_a_namespace_owner_out_of_range_does_not_stop_the_instance(uri: str) -> None:
    """2^64-1 once overflowed SQLite's integer inside the store's transaction: a fatal error."""
    with Handle(uri) as handle:
        with pytest.raises(RPCError) as err:
            handle.call(
                "kvs.namespace-create", {"name": "n", "owner": 2**64 - 1, "prefix": "p"}, TIMEOUT
            )
        assert err.value.errnum == errno.EINVAL
        assert err.value.errstr == "kvs.namespace-create: owner: expected int <= 4294967295"
    still_runs_jobs(uri)


@pytest.mark.parametrize(
    ("topic", "payload", "streaming", "errstr"),
    [
        ("job-info.lookup", {"keys": [["jobspec"]]}, False, "keys[0]: expected str, got array"),
        ("job-info.lookup", {"keys": "jobspec"}, False, "keys: expected array, got str"),
        ("job-info.eventlog-watch", {"path": ["eventlog"]}, True, "path: expected str, got array"),
        ("job-info.eventlog-watch", {"path": {}}, True, "path: expected str, got object"),
    ],
)
def test_job_info_fields_of_the_wrong_type_are_eproto(
    uri: str, topic: str, payload: dict[str, object], streaming: bool, errstr: str
) -> None:
    with Client(uri) as client:
        jobid = client.submit(jobspec(), waitable=True)
        client.wait(jobid, timeout=TIMEOUT)
        with pytest.raises(RPCError) as err:
            client.handle.rpc(topic, {"id": int(jobid), **payload}, streaming=streaming).get(
                TIMEOUT
            )
    assert err.value.errnum == errno.EPROTO
    assert err.value.errstr == f"{topic}: {errstr}"


@pytest.mark.parametrize(
    ("topic", "payload", "sender"),
    [
        ("job-manager.submit", {"jobs": [{"id": 5}]}, "job-ingest"),
        ("job-manager.submit", {"jobs": 5}, "job-ingest"),
        ("job-manager.sched-ready", {"mode": "limited", "limit": 1}, "the scheduler"),
        ("sched.alloc", {"id": 5, "priority": 1, "jobspec": jobspec(cores=4)}, "the job manager"),
        ("sched.free", {"id": 5, "R": None}, "the job manager"),
    ],
)
def test_another_service_s_requests_from_a_connection_are_eperm(
    uri: str, topic: str, payload: dict[str, object], sender: str
) -> None:
    """Jobs the KVS does not hold, or cores granted to no job, would wedge the instance."""
    with Handle(uri) as handle:
        streaming = topic == "sched.alloc"
        with pytest.raises(RPCError) as err:
            handle.rpc(topic, payload, streaming=streaming).get(TIMEOUT)
    assert err.value.errnum == errno.EPERM
    assert err.value.errstr == f"{topic}: only {sender} may send this request"
    still_runs_jobs(uri)


@pytest.mark.parametrize(
    ("topic", "payload", "errnum", "errstr"),
    [
        (
            "log.dmesg",
            {"follow": 1},
            errno.EPROTO,
            "log.dmesg: follow: expected bool, got int",
        ),
        ("log.dmesg", [], errno.EPROTO, "log.dmesg: payload: expected object, got array"),
        ("log.append", {"name": "x"}, errno.EPROTO, "log.append: timestamp: required"),
        (
            "log.append",
            {"timestamp": 1, "name": "x", "severity": 9, "rank": 0, "message": "m"},
            errno.EINVAL,
            "log.append: severity: expected int <= 7",
        ),
        (
            "broker.service-add",
            {"service": 5},
            errno.EPROTO,
            "broker.service-add: service: expected str, got int",
        ),
        (
            "broker.service-add",
            {"service": "a.b"},
            errno.EINVAL,
            "service-add: service must be a name, got 'a.b'",
        ),
        (
            "broker.service-remove",
            {"service": 1},
            errno.EPROTO,
            "broker.service-remove: service: expected str, got int",
        ),
        ("event.pub", {"topic": 5}, errno.EPROTO, "event.pub: topic: expected str, got int"),
        ("event.pub", {"topic": ""}, errno.EINVAL, "event.pub: topic: expected str of length >= 1"),
        ("event.subscribe", {}, errno.EPROTO, "event.subscribe: topic: required"),
        (
            "event.subscribe",
            {"topic": "x" * 256},
            errno.EINVAL,
            "event.subscribe: topic: expected str of length <= 255",
        ),
    ],
)
def test_the_broker_s_own_requests_name_the_field(
    uri: str, topic: str, payload: object, errnum: int, errstr: str
) -> None:
    with Handle(uri) as handle:
        with pytest.raises(RPCError) as err:
            handle.rpc(topic, payload, streaming=topic == "log.dmesg").get(TIMEOUT)
        assert (err.value.errnum, err.value.errstr) == (errnum, errstr)
        assert handle.call("broker.ping", {"alive": True}, TIMEOUT)["alive"] is True
