"""Both clients drive the same request methods (``pflux.api.exchange``): each batch in
flight at once, a refusal raised or, for a tolerant request, answered, a refusal
thrown into the method (which may name it otherwise), steps one after another.

The handles here answer from a table, so each case runs the blocking and the asyncio
client alike, without an instance."""

from __future__ import annotations

import asyncio
import errno
import inspect
import os
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any
from unittest import mock

import pytest

from pflux.api import AsyncClient, Client
from pflux.errors import PfluxError, RPCError
from support.munge import munged

__all__ = ["munged"]
from pflux.protocol.message import NODEID_ANY, ROLE_OWNER, ROLE_USER

Answer = Callable[[Any], Any]


def refused(errnum: int) -> Answer:
    def answer(payload: Any) -> Any:
        raise RPCError(errnum, "refused")

    return answer


class Table:
    """What each topic answers; every request sent, as ``(topic, payload, nodeid)``."""

    def __init__(self, answers: dict[str, Answer]) -> None:
        self.answers = answers
        self.sent: list[tuple[str, Any, int]] = []

    def answer(self, topic: str, payload: Any, nodeid: int) -> Any:
        self.sent.append((topic, payload, nodeid))
        return self.answers[topic](payload)


class Sent:
    def __init__(self, table: Table, topic: str, payload: Any, nodeid: int) -> None:
        self.table, self.topic, self.payload, self.nodeid = table, topic, payload, nodeid

    def get(self, timeout: float | None = None) -> Any:
        return self.table.answer(self.topic, self.payload, self.nodeid)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.get())


class BlockingTable(Table):
    def call(self, topic: str, payload: Any, timeout: float | None = None, **kw: Any) -> Any:
        return self.answer(topic, payload, kw.get("nodeid", NODEID_ANY))

    def rpc(self, topic: str, payload: Any, **kw: Any) -> Sent:
        return Sent(self, topic, payload, kw.get("nodeid", NODEID_ANY))


class AsyncTable(Table):
    async def call(self, topic: str, payload: Any, **kw: Any) -> Any:
        await asyncio.sleep(0)  # the others of its batch are in flight meanwhile
        return self.answer(topic, payload, kw.get("nodeid", NODEID_ANY))

    async def stream(self, topic: str, payload: Any, **kw: Any) -> AsyncIterator[Any]:
        for reply in self.answer(topic, payload, kw.get("nodeid", NODEID_ANY)):
            yield reply


def hello(rolemask: int) -> Answer:
    """The answer to the ping a client makes on connecting, from an instance that takes
    it as its owner (ROLE_OWNER) or as a guest (ROLE_USER)."""
    return lambda payload: {**payload, "userid": os.getuid(), "rolemask": rolemask, "rank": 0}


OWNER = {"broker.ping": hello(ROLE_OWNER)}  # this process is the instance owner
# an instance of another user's, of which this process (root, too) is a guest
GUEST = {"broker.ping": hello(ROLE_USER)}


def connected(answers: dict[str, Answer]) -> dict[str, Any]:
    """A client's answers kept from connecting: its ping's, where ``answers`` has one."""
    ping = answers.get("broker.ping")
    return {} if ping is None else {"broker.ping": ping({})}


def ask(face: str, answers: dict[str, Answer], method: str, *args: Any, **kw: Any) -> Any:
    """``method``'s value on a client of ``face`` whose handle answers from ``answers``;
    the requests sent are in ``ask.sent``."""
    if face == "blocking":
        client = Client.__new__(Client)
        client._cached = connected(answers)
        client.handle = table = BlockingTable(answers)  # type: ignore[assignment]
        try:
            return getattr(client, method)(*args, **kw)
        finally:
            ask.sent = table.sent  # type: ignore[attr-defined]
    aclient = AsyncClient()
    aclient._handle = atable = AsyncTable(answers)  # type: ignore[assignment]
    aclient._cached = connected(answers)
    try:
        return asyncio.run(getattr(aclient, method)(*args, **kw))
    finally:
        ask.sent = atable.sent  # type: ignore[attr-defined]


FACES = pytest.mark.parametrize("face", ["blocking", "asyncio"])


@FACES
def test_a_batch_goes_at_once_and_its_answers_come_in_order(face: str) -> None:
    answers = {"job-ingest.submit": lambda p: {"id": p["urgency"]}, **OWNER}
    jobspecs = [{"version": 1}] * 3
    assert ask(face, answers, "submit_many", jobspecs, urgency=7) == [7, 7, 7]
    sent = [topic for topic, _, _ in ask.sent]  # type: ignore[attr-defined]
    assert sent == ["job-ingest.submit"] * 3
    assert ask(face, answers, "submit_many", []) == []


@FACES
def test_a_refusal_in_a_strict_batch_is_raised(face: str) -> None:
    answers = {"job-manager.result": refused(errno.ENOENT)}
    with pytest.raises(RPCError) as info:
        ask(face, answers, "wait_all", [1, 2])
    assert info.value.errnum == errno.ENOENT


@FACES
def test_a_tolerant_batch_answers_each_refusal(face: str) -> None:
    def kill(payload: Any) -> Any:
        if payload["id"] == 2:
            raise RPCError(errno.ENOENT, "unknown job")
        return {}

    answers = ask(face, {"job-manager.kill": kill}, "kill_many", [1, 2, 3])
    assert answers[0] is None
    assert answers[2] is None
    assert isinstance(answers[1], RPCError)
    assert answers[1].errnum == errno.ENOENT


@FACES
def test_every_piece_of_stdin_is_answered_before_a_refusal_is_raised(face: str) -> None:
    answers = {"job-exec.stdin": refused(errno.EPIPE)}
    with pytest.raises(RPCError) as info:
        ask(face, answers, "send_stdin", 5, b"x" * ((1 << 17) + 1), eof=True)
    assert info.value.errnum == errno.EPIPE
    assert len(ask.sent) == 3  # type: ignore[attr-defined]


@FACES
def test_a_refusal_is_thrown_into_the_method_that_names_it(face: str) -> None:
    with pytest.raises(RPCError, match=r"eventlog path guest\.output not found"):
        ask(face, {"kvs.get": refused(errno.ENOENT)}, "read_log", 5, "guest.output")
    pieces = {"kvs.get": lambda p: [{"value": "a"}, {"value": "b"}]}
    assert ask(face, pieces, "read_log", 5, "guest.output") == "ab"


@FACES
def test_steps_follow_one_another(face: str) -> None:
    answers = {"broker.attrs": lambda p: {"attrs": {"rank": "3"}}, "log.append": lambda p: {}}
    ask(face, answers, "log", "hello", severity=3)
    (first, _, _), (second, entry, _) = ask.sent  # type: ignore[attr-defined]
    assert (first, second) == ("broker.attrs", "log.append")
    assert (entry["rank"], entry["severity"], entry["message"]) == (3, 3, "hello")


@FACES
def test_a_request_goes_to_the_rank_asked(face: str) -> None:
    assert ask(face, {"kvs.ping": lambda p: p}, "ping", "kvs", {"x": 1}, rank=3) == {"x": 1}
    assert ask.sent == [("kvs.ping", {"x": 1}, 3)]  # type: ignore[attr-defined]


def test_each_request_method_is_declared_from_one_description() -> None:
    """A method both clients build from a request method has the same signature in
    each, the async one a coroutine documented as the blocking one's twin."""
    shared = [
        name
        for name, method in vars(AsyncClient).items()
        if callable(method) and getattr(method, "__wrapped__", None) is not None
    ]
    assert len(shared) > 50
    for name in shared:
        blocking, awaited = getattr(Client, name), getattr(AsyncClient, name)
        assert inspect.signature(blocking) == inspect.signature(awaited), name
        assert inspect.iscoroutinefunction(awaited), name
        assert awaited.__doc__.startswith(f"As ``Client.{name}``"), name
        assert blocking.__doc__, name


@FACES
def test_a_guest_signs_each_jobspec_and_asks_nothing_more_to_know_it_must(
    face: str, munged: None
) -> None:
    from _pfluxcore.sign import unwrap

    answers = {"job-ingest.submit": lambda p: {"id": 1}, **GUEST}
    assert ask(face, answers, "submit_many", [{"version": 1}, {"version": 1}]) == [1, 1]
    sent = [(t, p) for t, p, _ in ask.sent]  # type: ignore[attr-defined]
    assert [topic for topic, _ in sent] == ["job-ingest.submit"] * 2
    for _, payload in sent:
        assert "jobspec" not in payload
        signed = unwrap(payload["J"])
        assert (signed.userid, signed.payload) == (os.getuid(), b'{"version":1}')


@FACES
def test_root_signs_where_the_instance_takes_it_as_a_guest(face: str, munged: None) -> None:
    guest = {"job-ingest.submit": lambda p: {"id": 1}, **GUEST}
    owner = {**guest, **OWNER}
    with mock.patch("os.getuid", return_value=0):  # root: the instance's word decides
        ask(face, guest, "submit_many", [{"version": 1}])
        assert "J" in ask.sent[-1][1]  # type: ignore[attr-defined]
        ask(face, owner, "submit_many", [{"version": 1}])
        assert "jobspec" in ask.sent[-1][1]  # type: ignore[attr-defined]


@FACES
def test_a_guest_that_cannot_sign_sends_nothing(face: str) -> None:
    from _pfluxcore import sign

    answers = {"job-ingest.submit": lambda p: {"id": 1}, **GUEST}
    with (
        mock.patch.object(sign, "LIBMUNGE", "libmunge-absent.so.2"),
        mock.patch.dict(sign._munge, clear=True),
        pytest.raises(PfluxError) as info,
    ):
        ask(face, answers, "submit", {"version": 1})
    assert str(info.value) == (
        "cannot sign the job request: MUNGE is not installed (libmunge-absent.so.2 not found)"
    )
    sent = {topic for topic, _, _ in ask.sent}  # type: ignore[attr-defined]
    assert "job-ingest.submit" not in sent
